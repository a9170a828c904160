"""A fairseq command (or ``python``) on the end-to-end tests' PATH that has
the warm server (warm_server.py) run it, or runs the real one.

tests/warm.py installs a copy under each command's name, with this
interpreter's path and the real command's in the two constants below. It
runs with ``python -S`` and imports only the standard library: it starts in
milliseconds. The real command runs instead when no server is named
(MASS_TEST_WARM_SOCKET), when the server cannot be reached, or for a
``python`` call that is neither ``python -m MODULE`` nor ``python SCRIPT.py``.
"""

import json
import os
import signal
import socket
import sys

REAL = "@REAL@"  # the real command, run when the server cannot run this one
# modules that never import torch, and run as themselves: CTranslate2's
# OpenMP runtime beside torch's, in one process, crashes at its exit
REAL_MODULES = ("mass_tools.translate_ct2", "sacrebleu")
ENTRY = "@ENTRY@"  # MODULE:FUNCTION, what the console script runs; "" for python


def request():
    """What the server is asked to run, or None for the real command."""
    if ENTRY:
        return {"kind": "console", "entry": ENTRY, "argv": [sys.argv[0], *sys.argv[1:]]}
    args = sys.argv[1:]
    while args and args[0] in ("-u", "-B"):  # flags that change nothing here
        args = args[1:]
    if len(args) >= 2 and args[0] == "-m":
        if args[1].split(".")[0] in REAL_MODULES or args[1] in REAL_MODULES:
            return None
        return {"kind": "module", "entry": args[1], "argv": [args[1], *args[2:]]}
    if args and args[0].endswith(".py") and os.path.isfile(args[0]):  # python SCRIPT.py
        script = os.path.abspath(args[0])
        return {"kind": "script", "entry": script, "argv": [args[0], *args[1:]]}
    return None


def real():
    os.execv(REAL, [REAL, *sys.argv[1:]])


def main():
    path = os.environ.get("MASS_TEST_WARM_SOCKET")
    asked = request()
    if not path or asked is None:
        real()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        real()
    asked.update(cwd=os.getcwd(), env=dict(os.environ), client=os.getpid(),
                 bin=os.path.dirname(os.path.abspath(sys.argv[0])))
    conn.sendmsg([json.dumps(asked).encode() + b"\n"],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(
                     __import__("array").array("i", [0, 1, 2]))))])
    answers = conn.makefile("r")
    child = int(answers.readline().split()[1])

    def forward(signum, frame):
        os.kill(child, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(signum, forward)
    for line in answers:
        if line.startswith("exit "):
            sys.exit(int(line.split()[1]))
    sys.exit(137)  # the child ended without a status: killed


if __name__ == "__main__":
    main()
