"""A process that has imported torch and fairseq once, and forks a child for
each fairseq command or ``python -m`` module the end-to-end tests start.

A fairseq command spends 5 to 8 seconds importing torch and fairseq before
its first update; the recipes and studies the tests run start well over a
hundred of them. Each test worker starts one server (tests/warm.py); the
client (warm_client.py), installed on the tests' PATH under the names of the
commands, hands the server its arguments, working directory, environment and
standard streams, and exits with the child's status. The child runs the
same entry point the console script runs (``cli_main``) or the module as
``python -m`` does, in a fresh fork of the server: nothing one command does
is seen by the next. The server itself runs no torch operation, so no
thread pool exists when it forks.

Protocol, over a Unix socket: the client sends one JSON line (argv, cwd,
env, and the entry: a console script's MODULE:FUNCTION, a ``-m`` module or
a script's path) with its fds 0, 1, 2; the child answers "pid N" and, at
its end, "exit N".
"""

import array
import atexit
import importlib
import json
import logging
import os
import runpy
import signal
import socket
import sys
import threading
import traceback
import warnings

# what a fairseq command imports before it does anything; not fairseq_cli's
# modules, which set up logging when they are imported: each child imports
# the one it runs, as a new process would
PRELOAD = ("torch", "numpy", "fairseq", "fairseq.checkpoint_utils", "fairseq.trainer",
           "fairseq.sequence_generator", "fairseq.tasks.translation",
           "fairseq.models.transformer", "sentencepiece")


def receive(conn):
    """(request, fds) of one client: its JSON line and its three fds."""
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        chunk, ancdata, _, _ = conn.recvmsg(1 << 16, socket.CMSG_LEN(3 * fds.itemsize))
        if not chunk:
            raise EOFError("the client went away")
        data += chunk
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return json.loads(data), list(fds)


def become(request, fds):
    """Turn this forked child into the requested process."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    # the interpreter this process stands for: the client's ``python``, so that
    # the programs it starts with sys.executable are served warm too
    python = os.path.join(request["bin"], "python")
    if os.path.exists(python):
        sys.executable = python
    # the import path the new process would start with: PYTHONPATH's entries,
    # and for ``python -m`` the working directory first
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if request["kind"] == "module":
        extra.insert(0, request["cwd"])
    elif request["kind"] == "script":
        extra.insert(0, os.path.dirname(request["entry"]))
    sys.path[:0] = extra
    # sacrebleu reads its cache folder (SACREBLEU) from the environment when
    # it is imported: this process imports it again, under its own
    for name in [name for name in sys.modules if name.split(".")[0] == "sacrebleu"]:
        del sys.modules[name]
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    if os.environ.get("PYTHONWARNINGS") == "ignore":
        warnings.simplefilter("ignore")
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)


def run(request):
    """The exit status of the entry point, run as its command would run it."""
    try:
        if request["kind"] == "module":
            runpy.run_module(request["entry"], run_name="__main__", alter_sys=True)
        elif request["kind"] == "script":
            runpy.run_path(request["entry"], run_name="__main__")
        else:
            module, function = request["entry"].split(":")
            sys.exit(getattr(importlib.import_module(module), function)())
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def watch(conn):
    """End this child once its client is gone (killed, say): nobody waits for it."""
    try:
        conn.recv(1)
    finally:
        os._exit(137)


def child(conn, request, fds):
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        conn.sendall(f"pid {os.getpid()}\n".encode())
        threading.Thread(target=watch, args=(conn,), daemon=True).start()
        become(request, fds)
        code = run(request)
        atexit._run_exitfuncs()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"exit {code}\n".encode())
        finally:
            os._exit(code)


def reap():
    """Collect the children that have ended."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def serve(path, parent):
    for name in PRELOAD:
        importlib.import_module(name)
    # logging as a new process has it (an import may have configured it)
    logging.root.handlers.clear()
    logging.root.setLevel(logging.WARNING)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    server.settimeout(2.0)
    print("ready", flush=True)
    while os.getppid() == parent:  # the test worker that started it is alive
        reap()
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        try:
            request, fds = receive(conn)
        except (EOFError, OSError, ValueError):
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            server.close()
            child(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
