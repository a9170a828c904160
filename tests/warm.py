"""The warm server of the end-to-end tests (helpers/warm_server.py): one per
test worker, started the first time a test asks for the environment of the
processes it starts (conftest.cli_env).

``warm_environment()`` is that environment's PATH and socket: a folder of
client copies (helpers/warm_client.py) named after fairseq's commands and
``python``, ahead of this environment's commands, so that a recipe, a study
or a test that starts ``fairseq-train`` or ``python -m ...`` gets a fork of
the warm server instead of a new interpreter that imports torch and fairseq
again. MASS_TEST_WARM=0 turns it off (every command then runs as itself).
"""

import atexit
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HELPERS = Path(__file__).resolve().parent / "helpers"
BIN_DIR = Path(sys.executable).parent
# the console scripts the recipes and studies start, and what each runs
COMMANDS = {
    "fairseq-preprocess": "fairseq_cli.preprocess:cli_main",
    "fairseq-train": "fairseq_cli.train:cli_main",
    "fairseq-generate": "fairseq_cli.generate:cli_main",
    "fairseq-interactive": "fairseq_cli.interactive:cli_main",
    "fairseq-hydra-train": "fairseq_cli.hydra_train:cli_main",
    "fairseq-validate": "fairseq_cli.validate:cli_main",
    "torchrun": "torch.distributed.run:main",
}
_started = {}


def _install_clients(folder):
    template = (HELPERS / "warm_client.py").read_text()
    entries = {**COMMANDS, "python": "", "python3": ""}
    for name, entry in entries.items():
        real = Path(sys.executable) if not entry else BIN_DIR / name
        if not real.exists():
            continue
        text = (f"#!{sys.executable} -S\n" + template.replace("@REAL@", str(real))
                .replace("@ENTRY@", entry))
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)


def _start():
    folder = Path(tempfile.mkdtemp(prefix="warm"))
    bin_dir, socket_path = folder / "bin", folder / "socket"
    bin_dir.mkdir()
    _install_clients(bin_dir)
    server = subprocess.Popen(
        [sys.executable, str(HELPERS / "warm_server.py"), str(socket_path), str(os.getpid())],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if server.stdout.readline().strip() != "ready":
        raise RuntimeError("the warm server of the tests did not start")
    atexit.register(server.kill)
    _started.update(bin=bin_dir, socket=socket_path, server=server)


def warm_environment():
    """{PATH prefix, MASS_TEST_WARM_SOCKET} for the processes a test starts;
    empty where MASS_TEST_WARM=0."""
    if os.environ.get("MASS_TEST_WARM") == "0":
        return {}
    if not _started or _started["server"].poll() is not None:
        _start()
    return {"path": str(_started["bin"]), "MASS_TEST_WARM_SOCKET": str(_started["socket"])}
