"""How the unsupervised recipe runs its steps: fairseq and other programs as
subprocesses, their output where the recipe keeps it and the end of a log on
stderr where one fails; the tools of this project and of mass_tools
in-process, their errors as ``python -m`` gives them; fairseq-train with the
recipe's optimizer; the device arguments of mass_tools/shell/common.sh, from
the same NUM_GPUS and USER_DIR. Nothing here knows the recipe's stages."""

import contextlib
import functools
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from mass_tools import apply_subwords
from mass_tools.textio import InputError

STARTED = time.monotonic()


def fail(message, status=1):
    """``error: MESSAGE`` on stderr, and exit with ``status``."""
    sys.stdout.flush()
    sys.stderr.write(f"error: {message}\n")
    sys.exit(status)


def progress(line, stream=None):
    """One line of progress on stdout (or ``stream``), before any later command's output."""
    print(line, file=stream or sys.stdout, flush=True)


def seconds():
    """Whole seconds since this process started (bash's $SECONDS)."""
    return int(time.monotonic() - STARTED)


class Clock:
    """The minutes of work so far, kept in FOLDER/seconds across runs."""

    def __init__(self, folder):
        self.path = Path(folder) / "seconds"

    def total(self):
        return int(self.path.read_text().strip() or 0) if self.path.is_file() else 0

    def spent(self, start):
        """Add the seconds since ``start`` (a seconds()) to the work done."""
        self.path.write_text(f"{self.total() + seconds() - start}\n")

    def minutes(self):
        """Each direction's half of the minutes so far (rounds.csv adds the two)."""
        return self.total() // 120


def tail(path, lines=20):
    """The last ``lines`` lines of ``path`` on stderr (tail -n 20 FILE >&2)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    sys.stderr.write("".join(text.splitlines(keepends=True)[-lines:]))
    sys.stderr.flush()


def words(cmd, env=None):
    """``cmd``'s words as strings; stop with a clear error where its program
    is not on the PATH (fairseq's commands are there once the environment
    that installed it is active)."""
    cmd = [str(word) for word in cmd]
    path = (os.environ if env is None else env).get("PATH")
    if os.sep not in cmd[0] and shutil.which(cmd[0], path=path) is None:
        fail(f"{cmd[0]} is not on the PATH: activate the environment fairseq is installed "
             "in (e.g. . .venv/bin/activate), or put its bin folder on the PATH")
    return cmd


def run(cmd, stdout=None, stderr=None, log=None, env=None):
    """Run ``cmd``. ``stdout``, ``stderr``: files for its output
    (``stderr=subprocess.STDOUT``: with stdout), else this process's own.
    Where it fails: with ``log``, that file's last 20 lines on stderr and
    exit status 1; without, exit with its status (bash's ``set -e``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(stdout, "w")) if stdout else None
        err = stderr
        if stderr not in (None, subprocess.STDOUT):
            err = stack.enter_context(open(stderr, "w"))
        code = subprocess.call(words(cmd, env), stdout=out, stderr=err, env=env)
    if code:
        if log:
            tail(log)
            sys.exit(1)
        sys.exit(status(code))


def output(cmd, env=None):
    """The stdout of ``cmd``; exit with its status where it fails."""
    sys.stdout.flush()
    proc = subprocess.run(words(cmd, env), stdout=subprocess.PIPE, text=True, env=env)
    if proc.returncode:
        sys.exit(status(proc.returncode))
    return proc.stdout


def status(code):
    """The exit status bash gives a command that ended with ``code`` (128 + N
    for one killed by signal N)."""
    return code if code > 0 else 128 - code


def call(main, *argv, stderr=None):
    """A tool's ``main(argv)`` in this process, as ``python -m TOOL ARGV`` runs
    it: an InputError is ``error: ...`` and exit status 1. ``stderr``: a file
    for what it writes there. Returns what it printed on stdout."""
    sys.stdout.flush()
    printed = io.StringIO()
    with contextlib.ExitStack() as stack:
        if stderr:
            stack.enter_context(contextlib.redirect_stderr(
                stack.enter_context(open(stderr, "w"))))
        stack.enter_context(contextlib.redirect_stdout(printed))
        try:
            main([str(word) for word in argv])
        except InputError as err:
            stack.close()
            fail(err)
    return printed.getvalue()


def user_dir():
    """fairseq's --user-dir: USER_DIR, else where mass_plugin is installed (found
    without importing it, which would import fairseq)."""
    if os.environ.get("USER_DIR"):
        return os.environ["USER_DIR"]
    spec = importlib.util.find_spec("mass_plugin")
    if spec is None:
        fail("mass_plugin is not installed in this Python: pip install -e . "
             "from the repository root")
    return os.path.dirname(spec.origin)


@functools.cache
def num_gpus():
    """NUM_GPUS, else the GPUs on this machine (0 on a CPU-only machine)."""
    if os.environ.get("NUM_GPUS"):
        return int(os.environ["NUM_GPUS"])
    import torch

    return torch.cuda.device_count()


def device_args(max_tokens, tokens_per_update):
    """fairseq-train's device arguments, with the --update-freq that keeps
    ``tokens_per_update`` tokens per update whatever the number of GPUs."""
    gpus = num_gpus()
    per_step = max_tokens * max(gpus, 1)
    update_freq = str((tokens_per_update + per_step - 1) // per_step)
    if gpus == 0:
        return ["--cpu", "--update-freq", update_freq]
    return ["--fp16", "--distributed-world-size", str(gpus), "--update-freq", update_freq]


def decode_device_args():
    """fairseq-generate's device argument: --cpu on a CPU-only machine."""
    return ["--cpu"] if num_gpus() == 0 else []


def ct2_device():
    """mass_tools.translate_ct2's --device: cuda where there is a GPU."""
    return "cpu" if num_gpus() == 0 else "cuda"


def hypotheses(log, kind="D"):
    """fairseq-generate's hypotheses in ``log`` (``D``: detokenized, ``H``:
    in subwords) as (sentence id, text), in the order of the source, each
    sentence's n-best in the order fairseq wrote them."""
    found = []
    with open(log, encoding="utf-8", newline="\n") as f:  # lines end at newlines alone
        for line in f:
            if re.match(rf"{kind}-[0-9]+\t", line):
                fields = line.rstrip("\n").split("\t")
                found.append((int(fields[0][2:]), fields[2] if len(fields) > 2 else ""))
    return sorted(found, key=lambda hypothesis: hypothesis[0])


def concatenate(parts, target):
    """The files ``parts``, one after the other, in ``target`` (cat PARTS > TARGET)."""
    with open(target, "wb") as out:
        for part in parts:
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out)


def write_lines(path, lines):
    """``lines``, each ended by a newline, into ``path`` through ``path.tmp``."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(f"{line}\n" for line in lines)
    os.replace(tmp, path)


def hold_out(source, train, held_out, count=200):
    """The last ``count`` lines of ``source`` into ``held_out``, the others into ``train``."""
    lines = Path(source).read_bytes().splitlines(keepends=True)
    Path(held_out).write_bytes(b"".join(lines[-count:]))
    Path(train).write_bytes(b"".join(lines[:-count]))


def pieces(s, source, target):
    """``source`` in pieces of WORK_DIR/spm.model, in ``target``."""
    call(apply_subwords.main, "--model", s.work / "spm.model", "--input", source,
         "--output", target)


def arch(model_args):
    """The --arch of fairseq-train's model options ("" where they name none)."""
    words = model_args.split()
    return words[words.index("--arch") + 1] if "--arch" in words[:-1] else ""


def with_arch(model_args, name):
    """``model_args`` with --arch ``name``, the other options (sizes, dropout) kept."""
    words = model_args.split()
    if "--arch" in words[:-1]:
        at = words.index("--arch")
        words = words[:at] + words[at + 2:]
    return " ".join(["--arch", name, *words])


def fairseq_train(s, folder, task_args, updates, model_args, restore=None,
                  criterion=("label_smoothed_cross_entropy", "--label-smoothing", "0.1")):
    """fairseq-train of ``model_args`` on FOLDER/bin (``task_args``: --task
    and its options; ``criterion``: --criterion and its options): Adam at
    LR, ``updates`` updates, the last checkpoint in FOLDER/ckpt, from the
    weights of ``restore`` (None: random initialisation) unless FOLDER/ckpt
    has a checkpoint to resume from. Its log FOLDER/train.log, whose last
    validation is shown; FOLDER/ckpt/done at the end."""
    save_dir = folder / "ckpt"
    options = []
    if restore and not (save_dir / "checkpoint_last.pt").is_file():
        options = ["--restore-file", restore, "--reset-optimizer", "--reset-dataloader",
                   "--reset-meters", "--reset-lr-scheduler"]
    log = folder / "train.log"
    run(["fairseq-train", folder / "bin", "--user-dir", user_dir(), *task_args,
         *model_args.split(), "--criterion", *criterion,
         "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", s.lr,
         "--lr-scheduler", "inverse_sqrt",
         "--warmup-updates", updates // 2 if updates < 2000 else 500,
         "--max-tokens", s.max_tokens, "--max-update", updates, "--save-dir", save_dir,
         "--no-epoch-checkpoints", "--save-interval-updates", updates,
         "--keep-interval-updates", "1", "--log-interval", "50", "--num-workers", "0",
         "--seed", "1", *options, *device_args(s.max_tokens, s.tokens_per_update)],
        stdout=log, stderr=subprocess.STDOUT, log=log)
    valid = [line for line in log.read_text(errors="replace").splitlines()
             if "| valid on" in line]
    if valid:
        progress(valid[-1])
    (save_dir / "done").touch()


def convert_ct2(model, ct2, data, langs, model_args):
    """``ct2``: the checkpoint ``model`` (of the binarized ``data`` and the
    direction ``langs``, trained with ``model_args``) for CTranslate2, with
    CTranslate2's fairseq converter, or for the plugin's transformer_mass
    through ``python -m mass_tools.export``, which writes it as fairseq's
    plain transformer first."""
    if arch(model_args).startswith("transformer_mass"):
        exported = Path(f"{ct2}.export")
        shutil.rmtree(exported, ignore_errors=True)
        cmd = [sys.executable, "-m", "mass_tools.export", "--checkpoint", model,
               "--data-bin", data, "--output", exported / "model.pt", "--ctranslate2",
               f"{ct2}.tmp", "--source-lang", langs[0], "--target-lang", langs[1]]
    else:
        cmd = ["ct2-fairseq-converter", "--model_path", model, "--data_dir", data,
               "--source_lang", langs[0], "--target_lang", langs[1], "--user_dir", user_dir(),
               "--output_dir", f"{ct2}.tmp"]
    run(cmd, stdout=f"{ct2}.log", stderr=subprocess.STDOUT, log=f"{ct2}.log")
    shutil.move(f"{ct2}.tmp", ct2)
