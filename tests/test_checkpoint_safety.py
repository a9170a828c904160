"""Checkpoints load through an allow-list; code-running pickles are refused."""

import argparse

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils

from conftest import CreatesAFile
from mass_plugin.checkpoint_safety import CorruptCheckpointError, UnsafeCheckpointError


def fairseq_like_state():
    return {
        "args": None,
        "cfg": {"model": argparse.Namespace(arch="transformer_mass_tiny", dropout=0.1),
                "task": {"_name": "masked_s2s"}},
        "model": {"w": torch.zeros(2, 2)},
        # --eval-bleu keeps BLEU n-gram counts as numpy arrays in the meters
        "extra_state": {"metrics": {"loss": np.float64(1.5),
                                    "_bleu_counts": np.array([10, 6, 3, 1])}, "epoch": 3},
        "optimizer_history": [{"num_updates": 10, "optimizer_name": "Adam",
                               "lr_scheduler_state": {"best": 1.5}}],
    }


def test_a_fairseq_style_checkpoint_loads_without_disabling_weights_only(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    path = tmp_path / "checkpoint.pt"
    torch.save(fairseq_like_state(), path)
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert state["cfg"]["model"].arch == "transformer_mass_tiny"
    assert state["extra_state"]["metrics"]["loss"] == 1.5
    assert state["extra_state"]["metrics"]["_bleu_counts"].tolist() == [10, 6, 3, 1]


@pytest.mark.parametrize("force_unsafe_env", [False, True])
def test_a_checkpoint_that_would_run_code_is_refused_and_nothing_runs(
        tmp_path, monkeypatch, force_unsafe_env):
    marker = tmp_path / "payload-ran"
    evil = tmp_path / "evil.pt"
    state = fairseq_like_state()
    state["extra_state"]["payload"] = CreatesAFile(marker)
    torch.save(state, evil)
    assert not marker.exists()
    if force_unsafe_env:
        # even with torch's global escape hatch set, the plugin's check refuses
        monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UnsafeCheckpointError, match=r"io\.open") as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(evil))
    assert str(evil) in str(err.value)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage"])
def test_a_damaged_checkpoint_gives_a_clear_error(tmp_path, damage):
    path = tmp_path / "checkpoint.pt"
    torch.save(fairseq_like_state(), path)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "empty": b"",
                      "garbage": b"not a checkpoint at all" * 10}[damage])
    with pytest.raises((CorruptCheckpointError, UnsafeCheckpointError)) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value)
