"""Running the stage recipes of examples/ from Python, for the multi-run
projects (paper_analysis, low_resource): one work directory per
experiment, one configuration per work directory, every command's output in a
log file, and errors that say which log to read."""

import contextlib
import fcntl
import json
import os
import shlex
import subprocess
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the checkout
RECIPES = REPO / "examples"
_OUTPUT = threading.Lock()
# descriptors of the held directory locks: every command inherits them, so a
# training that outlives its driver (which was killed) keeps its directory
_HELD, _HELD_LOCK = set(), threading.Lock()


def progress(message, stream=None):
    """One whole line on stdout (or ``stream``), also when runs in parallel
    threads report at the same moment (print writes the text and the newline
    apart, so two lines could run into one)."""
    stream = stream or sys.stdout
    with _OUTPUT:
        stream.write(message + "\n")
        stream.flush()


class RecipeRunner:
    def __init__(self, work_dir, jobs=1):
        import torch

        self.work = Path(work_dir).resolve()
        self.user_dir = str(REPO / "mass_plugin")
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        self.device = ["--fp16"] if gpus else ["--cpu"]  # for training
        # each training process gets its share of the cores, unless the
        # environment already says how many threads to use
        threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or max(
            1, (os.cpu_count() or 1) // max(1, jobs))
        self.env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                        MKL_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1",
                        USER_DIR=self.user_dir, NUM_GPUS=str(gpus))
        torch.set_num_threads(threads)  # evaluations run in this process

    def check_signature(self, wanted, legacy=None):
        """A work dir holds one configuration (``wanted``, a dict saved as
        config.json): refuse to mix budgets or sizes. ``legacy``: the values
        of settings that a config.json written before they existed held."""
        path = self.work / "config.json"
        if path.exists():
            saved = {**(legacy or {}), **json.loads(path.read_text())}
            changed = {k: (saved.get(k), v) for k, v in wanted.items() if saved.get(k) != v}
            if changed:
                described = "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in changed.items())
                sys.exit(f"error: {self.work} holds runs made with other settings "
                         f"({described}). Use another --work-dir, or the same settings "
                         "to resume.")
        else:
            self.work.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(wanted, indent=1) + "\n")

    def run(self, cmd, log, what, env=None):
        """Run ``cmd`` with its output in ``log``; on failure say where to look."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as out:
            out.write("$ " + shlex.join(cmd) + "\n")
            out.flush()
            code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   env=dict(self.env, **(env or {})),
                                   pass_fds=held_locks())
        if code != 0:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError(f"{what} failed (exit {code}); the end of {log}:\n  "
                               + "\n  ".join(tail))
        return log.read_text(errors="replace")

    def recipe(self, script, log, what, **variables):
        """Run examples/``script`` with ``variables`` in its environment."""
        env = {key: str(value) for key, value in variables.items()}
        self.run(["bash", str(RECIPES / script)], log, f"{what} (examples/{script})", env)


def size_args(args):
    """fairseq-train's model size options from ``args.layers``, ``dim``,
    ``ffn`` and ``heads`` (the same on the encoder and the decoder)."""
    return ["--encoder-layers", str(args.layers), "--decoder-layers", str(args.layers),
            "--encoder-embed-dim", str(args.dim), "--decoder-embed-dim", str(args.dim),
            "--encoder-ffn-embed-dim", str(args.ffn), "--decoder-ffn-embed-dim", str(args.ffn),
            "--encoder-attention-heads", str(args.heads),
            "--decoder-attention-heads", str(args.heads)]


@contextlib.contextmanager
def exclusive(directory):
    """Hold ``directory`` (its ``.lock`` file) for the block, so that a
    second process running the same command on the same work directory does
    not train into it at the same time; RuntimeError, naming the holder, if
    another process holds it. The commands run meanwhile hold it too."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = path.read_text().strip() or "?"
        os.close(fd)
        raise RuntimeError(f"{directory} is in use by another process (pid {holder}, or "
                           "a command it started): wait for it to end, or stop it, then "
                           "run the same command again") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    with _HELD_LOCK:
        _HELD.add(fd)
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD.discard(fd)
        os.close(fd)  # releases the lock, unless a command still runs


def held_locks():
    with _HELD_LOCK:
        return tuple(_HELD)


def finished(save_dir):
    """Mark a training as done; its interval checkpoints (kept for resuming)
    are no longer needed next to checkpoint_last.pt and checkpoint_best.pt."""
    for path in save_dir.glob("checkpoint_*_*.pt"):
        path.unlink()
    (save_dir / "done").touch()


def run_guarded(tasks, jobs, catch=RuntimeError):
    """Run each ``(label, name, work)`` task, ``jobs`` at a time. A task that
    raises ``catch`` is reported on stderr (``label``, ``name``, the error)
    and the others go on; returns the names of those that failed."""
    failures = []

    def one(task):
        label, name, work = task
        try:
            work()
        except catch as error:
            failures.append(name)
            message = str(error) if isinstance(error, RuntimeError) else (
                traceback.format_exc())
            progress(f"{label}{name} failed: {message}", sys.stderr)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, tasks))
    return failures
