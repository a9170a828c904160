"""A run killed with SIGKILL and restarted with the same command ends exactly
where an uninterrupted run ends: same data order, same masks, same weights."""

import pytest
import torch

from conftest import (
    REPO,
    assert_same_weights,
    kill_after_first_save,
    largest_weight_change,
    preprocess,
    run_cli,
    synthetic_sentences,
    write,
)

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    write(root / "mono.txt", synthetic_sentences(20, 400))
    write(root / "mono.valid.txt", synthetic_sentences(21, 30))
    for split, seed, n in (("train", 22, 300), ("valid", 23, 20), ("test", 24, 10)):
        lines = synthetic_sentences(seed, n)
        write(root / f"{split}.en", lines)
        write(root / f"{split}.fr", [" ".join(reversed(s.split())) for s in lines])
    preprocess(root)
    return root


def command(root, task, save_dir):
    data = {"masked_s2s": root / "bin", "translation": root / "pairs-bin"}[task]
    criterion = {"masked_s2s": "masked_s2s_loss",
                 "translation": "label_smoothed_cross_entropy"}[task]
    # 300 sentences at 400 tokens per batch: about 20 updates per epoch, so
    # the kill lands mid-epoch and the restart must fast-forward the data
    return ["fairseq-train", data, "--user-dir", "mass_plugin", "--task", task,
            "--arch", "transformer_mass_tiny", "--criterion", criterion, "--cpu",
            "--optimizer", "adam", "--lr", "0.002", "--max-tokens", "400",
            "--max-update", "30", "--save-interval-updates", "10", "--seed", "7",
            "--num-workers", "2", "--disable-validation", "--save-dir", save_dir,
            "--log-format", "simple", "--log-interval", "1"]


@pytest.mark.parametrize("task", ["masked_s2s", "translation"])
def test_killed_and_restarted_run_equals_an_uninterrupted_one(data, tmp_path, task):
    run_cli(command(data, task, tmp_path / "straight"), cwd=REPO)
    kill_after_first_save(command(data, task, tmp_path / "resumed"))
    killed_at = torch.load(tmp_path / "resumed/checkpoint_last.pt")
    assert killed_at["optimizer_history"][-1]["num_updates"] == 10
    out = run_cli(command(data, task, tmp_path / "resumed"), cwd=REPO)
    log = out.stdout + out.stderr
    assert "Loaded checkpoint" in log and "(epoch 1 @ 10 updates)" in log

    straight = torch.load(tmp_path / "straight/checkpoint_last.pt")
    resumed = torch.load(tmp_path / "resumed/checkpoint_last.pt")
    assert resumed["optimizer_history"][-1]["num_updates"] == 30
    assert_same_weights(straight, resumed, atol=1e-6, rtol=0)
    # and training really moved the weights between update 10 and 30
    assert largest_weight_change(killed_at, straight) > 1e-3
