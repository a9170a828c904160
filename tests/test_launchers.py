"""Distributed training through the launchers users use, on CPUs (gloo).

torchrun on one node and as two "nodes" on the loopback, with fairseq's
default DDP backend (``pytorch_ddp``) and its ``legacy_ddp``: every rank
ends with the weights of one process with ``--update-freq 2``, with plain
SGD (where a gradient summed instead of averaged over the ranks would show)
and with Adam, for MASS pre-training and for fine-tuning from a MASS
checkpoint. Each worker imports the plugin itself (``--user-dir``). fairseq's
own spawn needs a GPU per process: without one it stops with the torchrun
command to use. A worker killed mid-run stops the job with its rank named;
the same command then resumes to the weights of an uninterrupted run.
"""

import os
import re
import signal
import subprocess

import pytest
import torch
from fairseq import checkpoint_utils

from conftest import (
    ALL_RANKS,
    BIN_DIR,
    REPO,
    assert_every_rank_ends_with,
    binarize_splits,
    cli_env,
    free_port,
    synthetic_sentences,
    to_french,
)

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

WORKER = ALL_RANKS
DISTRIBUTED = ["--distributed-backend", "gloo", "--distributed-world-size", "2"]
# fp32 on a CPU; the ranks add their gradients in another order than one
# process accumulating two batches
ATOL, RTOL = 2e-5, 1e-4


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("launchers")
    mono = synthetic_sentences(40, 400)
    pairs = synthetic_sentences(41, 200)
    binarize_splits(root, {
        "train": mono, "valid": synthetic_sentences(42, 20),
        "train.en-fr.en": pairs, "train.en-fr.fr": [to_french(s) for s in pairs],
        "valid.en-fr.en": pairs[:20], "valid.en-fr.fr": [to_french(s) for s in pairs[:20]]})
    for lang in ("en", "fr"):  # the translation task reads one dictionary a language
        (root / f"dict.{lang}.txt").write_text((root / "dict.txt").read_text())
    return root


def common(save_dir, optimizer):
    # no dropout: the set-ups compared draw their masks in different orders
    args = ["--user-dir", "mass_plugin", "--arch", "transformer_mass_tiny", "--cpu",
            "--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0",
            "--max-tokens", "300", "--max-update", "8", "--seed", "5", "--num-workers", "0",
            "--disable-validation", "--save-dir", save_dir, "--log-format", "simple",
            "--log-interval", "1"]
    if optimizer == "sgd":
        return args + ["--optimizer", "sgd", "--lr", "0.5"]
    return args + ["--optimizer", "adam", "--lr", "0.002"]


def pretrain_args(data, save_dir, optimizer):
    return [data, "--task", "masked_s2s", "--criterion", "masked_s2s_loss",
            *common(save_dir, optimizer)]


def finetune_args(data, save_dir, optimizer, start):
    return [data, "--task", "translation", "-s", "en", "-t", "fr",
            "--criterion", "cross_entropy", "--finetune-from-model", start,
            *common(save_dir, optimizer)]


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """The one-process pre-training run (``one_process``) with an optimizer,
    run once for the module: ``reference(optimizer)`` is its save dir."""
    runs = {}

    def save_dir(optimizer):
        if optimizer not in runs:
            runs[optimizer] = tmp_path_factory.mktemp(f"one-{optimizer}")
            one_process(pretrain_args(data, runs[optimizer], optimizer))
        return runs[optimizer]
    return save_dir


def run(cmd, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], cwd=REPO, env=cli_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def one_process(args):
    """The reference: one process, two batches an update."""
    return run(["python", WORKER, *args, "--update-freq", "2"])


def torchrun(args, launcher=(), real=False):
    """The torchrun command of two ranks on one node: through the tests' warm
    server, or the real console script (whose workers are its children)."""
    port = free_port()
    agent = str(BIN_DIR / "torchrun") if real else "torchrun"
    return [agent, "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
            "--master_port", str(port), *launcher, WORKER, *map(str, args), *DISTRIBUTED]


def two_nodes(args):
    """Two torchrun agents of one process each, node 0 and node 1, meeting on
    the loopback (static rendezvous at the master address)."""
    port = free_port()
    agents = [subprocess.Popen(
        ["torchrun", "--nnodes", "2", "--node_rank", str(node),
         "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", str(port),
         WORKER, *map(str, args), *DISTRIBUTED],
        cwd=REPO, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for node in (0, 1)]
    logs = [agent.communicate(timeout=600)[0] for agent in agents]
    for agent, log in zip(agents, logs):
        assert agent.returncode == 0, log[-4000:]
    return logs


def assert_ranks_match(reference_dir, run_dir, ranks=(0, 1)):
    """Every rank ends with the reference's weights, and training moved them
    from where it started (two runs that trained nothing would match too)."""
    expected = torch.load(reference_dir / "rank0.pt")
    assert_every_rank_ends_with(expected, run_dir, ATOL, RTOL, ranks)
    start = torch.load(run_dir / "rank0.start.pt")
    assert any(not torch.equal(start[k], expected[k]) for k in expected)


@pytest.mark.parametrize("optimizer,ddp", [("sgd", None), ("sgd", "legacy_ddp"),
                                           ("adam", "legacy_ddp")])
def test_torchrun_one_node_equals_update_freq_2(data, reference, tmp_path, optimizer, ddp):
    """Plain SGD with each backend: Adam's steps hardly change when every
    gradient is doubled, SGD's do (a sum over the ranks instead of a mean)."""
    backend = ["--ddp-backend", ddp] if ddp else []  # None: fairseq's default, pytorch_ddp
    log = run(torchrun([*pretrain_args(data, tmp_path / "two", optimizer), *backend]))
    assert "num_updates 8" in log
    assert_ranks_match(reference(optimizer), tmp_path / "two")


def test_two_nodes_on_the_loopback_equal_update_freq_2(data, reference, tmp_path):
    two_nodes(pretrain_args(data, tmp_path / "two", "sgd"))
    assert_ranks_match(reference("sgd"), tmp_path / "two")


def assert_every_rank_started_from(checkpoint, run_dir, ranks=(0, 1)):
    """Each rank's weights when training began (``rank{R}.start.pt``, written
    once the trainer loaded what it starts from) are ``checkpoint``'s."""
    loaded = checkpoint_utils.load_checkpoint_to_cpu(str(checkpoint))["model"]
    for rank in ranks:
        start = torch.load(run_dir / f"rank{rank}.start.pt")
        assert start.keys() == loaded.keys(), rank
        assert all(torch.equal(start[k], loaded[k]) for k in loaded), rank


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fine_tuning_a_mass_checkpoint_under_torchrun_equals_update_freq_2(data, reference,
                                                                          tmp_path, optimizer):
    """Every rank starts from the MASS checkpoint's weights and ends with
    those of one process with --update-freq 2, away from the start."""
    start = reference("adam") / "checkpoint_last.pt"
    one_process(finetune_args(data, tmp_path / "one", optimizer, start))
    log = run(torchrun(finetune_args(data, tmp_path / "two", optimizer, start)))
    assert f"Loaded checkpoint {start} (epoch" in log  # fairseq's line once it loaded it
    assert_every_rank_started_from(start, tmp_path / "two")
    assert_ranks_match(tmp_path / "one", tmp_path / "two")


def test_fairseqs_own_spawn_without_a_gpu_names_the_torchrun_command(data, tmp_path):
    proc = subprocess.run(
        [str(BIN_DIR / "fairseq-train"), *map(str, pretrain_args(data, tmp_path, "sgd")),
         *DISTRIBUTED], cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "torchrun --nproc_per_node 2" in proc.stderr, proc.stderr[-2000:]
    assert not list(tmp_path.glob("*.pt"))


def rank_of(pid):
    """The RANK a torchrun worker was started with, from its environment."""
    with open(f"/proc/{pid}/environ", "rb") as env:
        variables = dict(item.split(b"=", 1) for item in env.read().split(b"\0") if b"=" in item)
    return int(variables.get(b"RANK", b"-1"))


def kill_rank_after_first_save(cmd, rank):
    """Start the torchrun command ``cmd``; once a checkpoint is saved and the
    run went on past it, SIGKILL the worker of ``rank``. Returns torchrun's
    exit status and output (it must end by itself: no hang)."""
    agent = subprocess.Popen(cmd, cwd=REPO, env=cli_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    lines, saved = [], False
    for line in agent.stdout:
        lines.append(line)
        saved = saved or "Saved checkpoint" in line
        if saved and "num_updates 6" in line.replace("=", " "):
            children = open(f"/proc/{agent.pid}/task/{agent.pid}/children").read().split()
            victim = next(int(pid) for pid in children if rank_of(pid) == rank)
            os.kill(victim, signal.SIGKILL)
            break
    rest, _ = agent.communicate(timeout=120)
    return agent.returncode, "".join(lines) + rest, victim


def test_a_killed_worker_stops_the_job_naming_its_rank_and_the_same_command_resumes(
        data, tmp_path):
    args = [*pretrain_args(data, tmp_path / "run", "adam"), "--max-update", "12",
            "--save-interval-updates", "4"]
    code, log, victim = kill_rank_after_first_save(torchrun(args, real=True), rank=1)
    assert code != 0
    # torchrun's report names the dead worker: its rank, its pid, the signal
    assert re.search(r"rank\s*:\s*1 \(local_rank: 1\)\s+exitcode\s*:\s*-9 "
                     rf"\(pid: {victim}\)", log), log[-3000:]
    assert not (tmp_path / "run" / "rank0.pt").exists()  # it did not finish
    resumed = run(torchrun(args))
    assert "Loaded checkpoint" in resumed and "num_updates 12" in resumed
    run(torchrun([*pretrain_args(data, tmp_path / "straight", "adam"), "--max-update", "12",
                  "--save-interval-updates", "4"]))
    assert_ranks_match(tmp_path / "straight", tmp_path / "run")
