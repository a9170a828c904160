"""Shared helpers: seeded synthetic corpora, in-process binarization, CLI runs,
two-rank gloo runs and checkpoint comparisons."""

import builtins
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, indexed_dataset
from filelock import FileLock
from warm import warm_environment

import mass_plugin
from mass_plugin.tasks.masked_s2s import MaskedS2SConfig, MaskedS2STask

REPO = Path(__file__).resolve().parents[1]
PLUGIN_DIR = Path(mass_plugin.__file__).resolve().parent
# fairseq's console scripts: beside this Python in a venv; elsewhere (the GPU
# image installs fairseq into a --target folder) where the PATH finds them
BIN_DIR = Path(sys.executable).parent
if not (BIN_DIR / "fairseq-train").exists() and shutil.which("fairseq-train"):
    BIN_DIR = Path(shutil.which("fairseq-train")).parent

# under pytest-xdist the workers share the cores
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    torch.set_num_threads(max(1, (os.cpu_count() or 1)
                              // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


# the processes a test of the fast tier (pytest -m "not slow") may start:
# tools that answer in well under a second, no Python, no fairseq, no recipe
QUICK_TOOLS = {"git", "ruff", "echo"}


@contextlib.contextmanager
def processes_refused(item):
    """While a test of the fast tier runs (its set-up included), starting any
    process but QUICK_TOOLS fails it, naming the command: such a test
    belongs in the slow tier (@pytest.mark.slow)."""
    if item.get_closest_marker("slow") is not None:
        yield
        return
    start = subprocess.Popen.__init__

    def refuse(popen, args, *more, **options):
        words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = str(words[0]).split()[0]
        search = (options.get("env") or os.environ).get("PATH")
        found = shutil.which(program, path=search)  # none: Popen raises, nothing starts
        if found and os.path.basename(program) not in QUICK_TOOLS:
            raise AssertionError(f"a test of the fast tier started {program} (mark it "
                                 "@pytest.mark.slow, or run it in this process)")
        start(popen, args, *more, **options)

    subprocess.Popen.__init__ = refuse
    try:
        yield
    finally:
        subprocess.Popen.__init__ = start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with processes_refused(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with processes_refused(item):
        yield


# seconds each test file took in a full run on 2 cores, written by
# python -m pytest tests --record-durations tests/durations.json
DURATIONS = Path(__file__).resolve().parent / "durations.json"


def pytest_addoption(parser):
    parser.addoption("--record-durations", metavar="PATH",
                     help="write each test file's seconds (set-up, call and tear-down of its "
                     "tests) to PATH as JSON, for the order of the next runs")


def pytest_collection_modifyitems(items):
    """The longest files first (tests/durations.json; a file it does not
    know counts as long): pytest-xdist hands each worker whole files in this
    order, so the long ones start at once and the short ones fill in."""
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    longest = max(known.values(), default=0.0)
    items.sort(key=lambda item: -known.get(item.path.name, longest))


_seconds = {}


def pytest_runtest_logreport(report):
    name = Path(report.nodeid.split("::")[0]).name
    _seconds[name] = _seconds.get(name, 0.0) + report.duration


def pytest_sessionfinish(session):
    path = session.config.getoption("--record-durations")
    if path and not hasattr(session.config, "workerinput"):  # the controller only
        Path(path).write_text(json.dumps({k: round(v, 1) for k, v in sorted(
            _seconds.items(), key=lambda kv: -kv[1])}, indent=1) + "\n")


def built_once(tmp_path_factory, worker_id, name, build):
    """The directory ``name``, shared by every pytest-xdist worker of this run
    and made by the first that asks: ``build(directory)`` runs once, under a
    file lock, while the others wait for it. A failed build is not retried by
    the next worker: it fails at once with the first one's error."""
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # the run's folder, above each worker's own
    directory = root / name
    done, failed = root / f"{name}.done", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if failed.exists():
            raise AssertionError(f"building {name} failed in another worker:\n"
                                 f"{failed.read_text()[-4000:]}")
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            try:
                build(directory)
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}")
                raise
            done.touch()
    return directory


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory, worker_id):
    """examples/quickstart.sh with 4 updates of pre-training and 4 of
    fine-tuning, made once per run: (its work directory, its output)."""
    def run(work):
        (work / "quickstart.log").write_text(
            bash("quickstart.sh", WORK_DIR=work, PRETRAIN_UPDATES=4, FINETUNE_UPDATES=4))

    work = built_once(tmp_path_factory, worker_id, "quickstart", run)
    return work, (work / "quickstart.log").read_text()


def synthetic_sentences(seed, n, prefix="w", vocab=40, min_len=3, max_len=20):
    """Sentences from a seeded bigram chain: the next word is usually a fixed
    function of the previous one, so a masked span is partly predictable."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        length = int(rng.integers(min_len, max_len + 1))
        word = int(rng.integers(vocab))
        words = [word]
        for _ in range(length - 1):
            word = (7 * word + 3) % vocab if rng.random() < 0.8 else int(rng.integers(vocab))
            words.append(word)
        lines.append(" ".join(f"{prefix}{w}" for w in words))
    return lines


def to_french(line, vocab=40):
    """The synthetic 'translation': a fixed word-for-word mapping of the
    words of ``synthetic_sentences`` (any one-letter prefix) to f-words."""
    return " ".join(f"f{(3 * int(w[1:]) + 1) % vocab}" for w in line.split())


def write(path, lines):
    """Write ``lines`` to ``path``, each ended by a newline."""
    path.write_text("".join(line + "\n" for line in lines))


def build_dictionary(lines):
    dictionary = Dictionary()
    for line in lines:
        for word in line.split():
            dictionary.add_symbol(word)
    dictionary.finalize(padding_factor=8)
    return dictionary


def binarize(lines, dictionary, prefix):
    """Write ``prefix.bin``/``prefix.idx`` as fairseq-preprocess would."""
    builder = indexed_dataset.make_builder(
        f"{prefix}.bin", impl="mmap", vocab_size=len(dictionary)
    )
    for line in lines:
        builder.add_item(dictionary.encode_line(line, add_if_not_exist=False))
    builder.finalize(f"{prefix}.idx")


def binarize_splits(root, splits):
    """One joint dictionary (``root/dict.txt``) over ``splits``, a dict
    {name: lines}, and each split binarized as ``root/name.bin/.idx``
    (e.g. ``train.en``, ``train.fr``: the layout of mass-binarize)."""
    dictionary = build_dictionary([line for lines in splits.values() for line in lines])
    dictionary.save(str(root / "dict.txt"))
    for name, lines in splits.items():
        binarize(lines, dictionary, str(root / name))
    return dictionary


def binarize_bilingual(root):
    """Non-parallel en and fr text and a parallel en-fr valid set in ``root``,
    with one dictionary, in mass-binarize's layout (``train.en``,
    ``valid.fr``, ``valid.en-fr.en``...): what masked_s2s --langs en,fr and
    unsupervised_translation read."""
    root.mkdir(parents=True, exist_ok=True)
    en, fr = synthetic_sentences(1, 120, prefix="e"), synthetic_sentences(2, 120, prefix="e")
    fr = [to_french(s) for s in fr]
    pairs = synthetic_sentences(3, 30, prefix="e")
    binarize_splits(root, {
        "train.en": en, "train.fr": fr, "valid.en": en[:30], "valid.fr": fr[:30],
        "valid.en-fr.en": pairs, "valid.en-fr.fr": [to_french(s) for s in pairs]})
    return root


@pytest.fixture
def mono_data(tmp_path):
    """A binarized monolingual corpus: (data dir, train lines, dictionary)."""
    train = synthetic_sentences(1, 300)
    valid = synthetic_sentences(2, 40)
    dictionary = build_dictionary(train + valid)
    dictionary.save(str(tmp_path / "dict.txt"))
    binarize(train, dictionary, str(tmp_path / "train"))
    binarize(valid, dictionary, str(tmp_path / "valid"))
    return tmp_path, train, dictionary


@pytest.fixture
def mass_task(mono_data):
    """A masked_s2s task on ``mono_data`` with its train split loaded."""
    task = make_task(mono_data[0])
    task.load_dataset("train")
    return task


def assert_decodes_incrementally(model, src, lengths, prev):
    """The decoder run one step at a time with an incremental state gives the
    outputs of one run over the whole of ``prev``."""
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        full = model.decoder(prev, encoder_out=encoder_out)[0]
        state = {}
        steps = [model.decoder(prev[:, :t + 1], encoder_out=encoder_out,
                               incremental_state=state)[0] for t in range(prev.size(1))]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def make_task(data_dir, **overrides):
    fields = dict(data=str(data_dir), seed=1, train_subset="train", dataset_impl="mmap")
    fields.update(overrides)
    return MaskedS2STask.setup_task(MaskedS2SConfig(**fields))


def tiny_model(task, **overrides):
    """A transformer_mass_tiny model for ``task``, in eval mode (no dropout)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    fields = dict(arch="transformer_mass_tiny", max_source_positions=64,
                  max_target_positions=64)
    fields.update(overrides)
    args = Namespace(**fields)
    ARCH_CONFIG_REGISTRY["transformer_mass_tiny"](args)
    torch.manual_seed(0)
    model = task.build_model(args)
    return model.eval()


# a model of a few updates translates to the length limit: a short limit
# (examples/generate.sh's MAX_LEN_A / MAX_LEN_B, which recipes and studies pass
# on) keeps the decoding of a test that checks the path, not the score, quick
SHORT_DECODE = {"MAX_LEN_A": "0", "MAX_LEN_B": "8"}


def cli_env(warm=True):
    """The environment of the processes a test starts: this environment's
    commands first on the PATH, behind the warm server's (tests/warm.py)
    unless ``warm`` is False."""
    env = dict(os.environ)
    # the point of the plugin's safe loading: no insecure override is needed
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    env["PYTHONWARNINGS"] = "ignore"
    env["OMP_NUM_THREADS"] = "1"
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env['PATH']}"
    served = warm_environment() if warm else {}
    if served:
        env["PATH"] = f"{served.pop('path')}{os.pathsep}{env['PATH']}"
        env.update(served)
    return env


def run_cli(args, cwd, stdin=None, check=True, timeout=600, real=False):
    """Run a fairseq console script (or ``python``) of this interpreter's
    environment: through the warm server (tests/warm.py), or as the real
    console script where ``real`` (a test of the command itself)."""
    env = cli_env(warm=not real)
    program = args[0] if os.path.isabs(str(args[0])) else shutil.which(args[0], path=env["PATH"])
    cmd = [str(program)] + [str(a) for a in args[1:]]
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, text=True,
                          capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr[-4000:]}"
        )
    return proc


def valid_losses(log):
    """The validation losses a fairseq-train log reports, in order."""
    return [float(x) for x in re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log)]


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(cmd, timeout=600):
    """Run the console script ``cmd`` (a fairseq-train command) under torchrun
    as two CPU ranks on one node, gloo, with fairseq's default DDP backend
    unless ``cmd`` names one. Returns the log."""
    env = cli_env()
    launcher = ["torchrun", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                "--master_port", str(free_port()),
                cmd[0] if os.path.isabs(str(cmd[0])) else shutil.which(cmd[0], path=env["PATH"])]
    proc = subprocess.run([*launcher, *map(str, cmd[1:]), "--distributed-backend", "gloo",
                           "--distributed-world-size", "2"], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


def assert_same_weights(expected, actual, atol, rtol):
    """Every tensor of checkpoint ``expected``'s model is close to the one of
    the same name in checkpoint ``actual``'s."""
    for name, weight in expected["model"].items():
        assert torch.allclose(weight, actual["model"][name], atol=atol, rtol=rtol), name


def largest_weight_change(before, after):
    """The largest absolute difference between the model weights of two
    checkpoints, over the tensors of ``after``."""
    return max((before["model"][k] - after["model"][k]).abs().max().item()
               for k in after["model"])


class CreatesAFile:
    """Unpickling this object calls open(path, "w") (pickled as ``io.open``),
    creating the file: a harmless stand-in for a payload that runs code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


def preprocess(root, pairs_prefix=""):
    """fairseq-preprocess as the README does it: ``root/mono.txt`` and
    ``root/mono.valid.txt`` into ``root/bin``, then the en-fr pairs
    ``root/{pairs_prefix}{train,valid,test}.{en,fr}`` into ``root/pairs-bin``
    with the same dictionary."""
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", root / "mono.txt",
             "--validpref", root / "mono.valid.txt", "--destdir", root / "bin",
             "--workers", "2"], cwd=REPO)
    pairs = f"{root}/{pairs_prefix}"
    run_cli(["fairseq-preprocess", "-s", "en", "-t", "fr", "--trainpref", f"{pairs}train",
             "--validpref", f"{pairs}valid", "--testpref", f"{pairs}test",
             "--srcdict", root / "bin/dict.txt", "--tgtdict", root / "bin/dict.txt",
             "--destdir", root / "pairs-bin", "--workers", "2"], cwd=REPO)


def kill_after_first_save(cmd):
    """Start ``cmd``, SIGKILL it once a checkpoint is written, after the run
    went on past it (so unsaved updates are lost as in a real crash)."""
    env = cli_env()
    proc = subprocess.Popen([str(BIN_DIR / cmd[0])] + [str(c) for c in cmd[1:]], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    saved = False
    for line in proc.stdout:  # fairseq logs to stdout
        saved = saved or "Saved checkpoint" in line
        if saved and "num_updates=12" in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


HOLD = """
import sys, time
from pathlib import Path
from projects.runner import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def hold_elsewhere(directory):
    """Another process holding ``directory`` (as a second driver would)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def unsup_data(root):
    """Non-parallel en and fr monolingual text, a small parallel valid/test set,
    binarized with mass-binarize (one joint dictionary)."""
    write(root / "mono.en", synthetic_sentences(1, 300, prefix="e"))
    write(root / "mono.fr", [to_french(s) for s in synthetic_sentences(2, 300, prefix="e")])
    write(root / "mono.valid.en", synthetic_sentences(3, 20, prefix="e"))
    write(root / "mono.valid.fr", [to_french(s) for s in synthetic_sentences(4, 20, prefix="e")])
    pairs = synthetic_sentences(5, 40, prefix="e")
    for split, lines in (("valid", pairs[:20]), ("test", pairs[20:])):
        write(root / f"{split}.en", lines)
        write(root / f"{split}.fr", [to_french(s) for s in lines])
    run_cli([sys.executable, "-m", "mass_tools.binarize", "--destdir", root / "bin",
             "--langs", "en,fr", "--mono-train", f"{root}/mono.{{lang}}",
             "--mono-valid", f"{root}/mono.valid.{{lang}}", "--pair", "en-fr",
             "--train", root / "valid", "--valid", root / "valid", "--test", root / "test"],
            cwd=REPO)
    return root


def cross_lingual_mass_checkpoint(data, save_dir, updates):
    """A few updates of masked_s2s --langs en,fr: save_dir/checkpoint_last.pt."""
    run_cli(["fairseq-train", data / "bin", "--user-dir", "mass_plugin", "--task", "masked_s2s",
             "--langs", "en,fr", "--arch", "transformer_mass_tiny", "--criterion",
             "masked_s2s_loss", "--cpu", "--optimizer", "adam", "--lr", "0.003",
             "--max-tokens", "300", "--max-update", str(updates), "--disable-validation",
             "--save-dir", save_dir, "--num-workers", "0"], cwd=REPO)


def recipe(script):
    """examples/SCRIPT, or a project's recipe named from the repository root."""
    return str(REPO / script if "/" in script else REPO / "examples" / script)


def bash(script, cwd=REPO, **variables):
    """stdout and stderr of a recipe (``recipe(script)``) run under these
    variables, this environment's commands first on PATH; it must succeed."""
    env = cli_env()
    env.update({k: str(v) for k, v in variables.items()})
    proc = subprocess.run(["bash", recipe(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1500)
    if proc.returncode != 0:
        raise AssertionError(f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout + proc.stderr


def bash_error(script, **variables):
    """stderr of an example that must stop with exit status 1 under these variables"""
    proc = subprocess.run(["bash", recipe(script)], cwd=REPO,
                          env={**cli_env(), **{k: str(v) for k, v in variables.items()}},
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stderr


# Trainer-level runs (fairseq's own Trainer, as fairseq-train builds it) in
# each precision, their loss curves, and the weights of every rank of a job

# every dropout of transformer_mass_tiny: fairseq's model arguments suppress
# unset defaults, so the architecture keeps attention and activation dropout
# at 0.1 unless they are given
NO_DROPOUT = ("--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0")
# fairseq's fp16 on the CPU: FP16Optimizer flattens its fp32 copy of the
# weights on torch.cuda.current_device() unless told not to flatten
PRECISION_FLAGS = {
    ("cpu", "fp32"): ["--cpu"], ("cpu", "bf16"): ["--cpu"],
    ("cpu", "fp16"): ["--cpu", "--fp16", "--fp16-no-flatten-grads"],
    ("cpu", "memory-efficient-fp16"): ["--cpu", "--memory-efficient-fp16"],
    ("cuda", "fp32"): [], ("cuda", "bf16"): [], ("cuda", "fp16"): ["--fp16"],
    ("cuda", "memory-efficient-fp16"): ["--memory-efficient-fp16"],
}
# what runs ALL_RANKS writes (see tests/helpers/train_all_ranks.py)
ALL_RANKS = str(REPO / "tests" / "helpers" / "train_all_ranks.py")


def build_trainer(data, device, precision, *extra, seed=1):
    """A fairseq Trainer for a tiny transformer_mass on ``data``
    (``binarize_bilingual``'s layout, --langs en,fr), built as fairseq-train
    builds it, from the weights of ``seed``; ``precision`` is fp32, fp16,
    memory-efficient-fp16 or bf16 (PRECISION_FLAGS). bf16 is set on the
    configuration as fairseq-hydra-train's common.bf16=true does
    (fairseq-train's --bf16 means a TPU)."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = [str(data), "--user-dir", str(PLUGIN_DIR), "--langs", "en,fr",
            "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss",
            "--optimizer", "adam", "--lr", "0.001", "--max-tokens", "300",
            "--seed", str(seed), "--num-workers", "0", "--required-batch-size-multiple", "1",
            *PRECISION_FLAGS[device, precision], *extra]
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), argv))
    cfg.common.bf16 = precision == "bf16"
    utils.import_user_module(cfg.common)
    utils.set_torch_seed(seed)  # as fairseq-train does before building the model
    task = tasks.setup_task(cfg.task)
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    return Trainer(cfg, task, model, criterion)


def train_batches(trainer, n):
    """The first ``n`` training batches of epoch 1, from fairseq's own loader
    (which pins them when CUDA is available)."""
    iterator = trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False)
    return [next(iterator) for _ in range(n)]


def trainer_weights(trainer):
    """The model's weights, in fp32 on the CPU."""
    return {k: v.detach().float().cpu().clone() for k, v in trainer.model.state_dict().items()}


def assert_no_dropout(model):
    """No module of ``model`` drops anything: fairseq's dropout modules, the
    attention's and the activation's included, all at p = 0."""
    rates = {name: module.p for name, module in model.named_modules() if hasattr(module, "p")
             and "dropout" in type(module).__name__.lower()}
    assert rates and not any(rates.values()), {k: p for k, p in rates.items() if p}


def logged_step(trainer, batch):
    """``trainer.train_step(batch)``'s log with what fairseq's Trainer logs
    beside it (the gradient norm ``gnorm``, 3 decimals, the loss scale...),
    or None for an update it skipped."""
    from fairseq.logging import metrics

    with metrics.aggregate(new_root=True) as logged:
        log = trainer.train_step(batch)
    return None if log is None else {**logged.get_smoothed_values(), **log}


def training_curve(data, device, precision, updates, *extra):
    """The training loss and the gradient norm (``gnorm``, fairseq's 3
    decimals) of each of ``updates`` updates of masked_s2s, cycling over the
    first epoch's batches, from the weights of seed 1 with every dropout off
    (so runs in two precisions draw nothing at random). None marks an update
    that fp16 skipped for an overflow."""
    trainer = build_trainer(data, device, precision, "--task", "masked_s2s", *NO_DROPOUT,
                            *extra)
    assert_no_dropout(trainer.model)
    batches = list(trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False))
    logs = [logged_step(trainer, [batches[i % len(batches)]]) for i in range(updates)]
    return {key: [log[key] if log else None for log in logs] for key in ("loss", "gnorm")}


def loss_curve(data, device, precision, updates, *extra):
    """The training losses of ``training_curve``."""
    return training_curve(data, device, precision, updates, *extra)["loss"]


def assert_loss_curves_match(half, full, tolerance):
    """``half`` follows ``full`` update by update within ``tolerance``, with no
    update skipped; prints each update's gap (pytest shows it on failure)."""
    assert len(half) == len(full) and None not in half and None not in full, (half, full)
    gaps = [abs(a - b) for a, b in zip(half, full)]
    for update, (a, b, gap) in enumerate(zip(half, full, gaps), start=1):
        print(f"update {update:3d}: {a:.3f} against {b:.3f}, gap {gap:.3f}")
    assert max(gaps) <= tolerance, f"largest gap {max(gaps):.3f} over {tolerance}"


def assert_training_curves_match(half, full, loss_gap, gnorm_gap):
    """``training_curve`` ``half`` follows ``full``: the losses within
    ``loss_gap`` (assert_loss_curves_match), and the gradient norms fairseq
    logs within ``gnorm_gap`` of fp32's, relative. A loss scale left in, or
    taken out twice, changes the logged norm by its factor, even where Adam,
    which hardly changes when every gradient is multiplied by a constant,
    keeps the loss curve."""
    assert_loss_curves_match(half["loss"], full["loss"], loss_gap)
    gaps = [abs(a - b) / b for a, b in zip(half["gnorm"], full["gnorm"])]
    for update, (a, b, gap) in enumerate(zip(half["gnorm"], full["gnorm"], gaps), start=1):
        print(f"update {update:3d}: gnorm {a:.3f} against {b:.3f}, relative gap {gap:.4f}")
    assert max(gaps) <= gnorm_gap, f"largest relative gnorm gap {max(gaps):.4f} over {gnorm_gap}"


def assert_every_rank_ends_with(expected, run_dir, atol, rtol, ranks=(0, 1)):
    """Each rank's final weights, ``run_dir/rank{R}.pt`` (written by
    ALL_RANKS), are close to the state dict ``expected``, tensor by tensor."""
    for rank in ranks:
        weights = torch.load(run_dir / f"rank{rank}.pt")
        assert weights.keys() == expected.keys(), rank
        for name, tensor in expected.items():
            assert torch.allclose(tensor, weights[name], atol=atol, rtol=rtol), (rank, name)
