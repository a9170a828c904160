"""Checkpoints load through an allow-list; code-running pickles are refused."""

import argparse
import collections
import io
import pickle

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.distributed.utils import _TensorPlaceholder
from omegaconf import OmegaConf

from conftest import CreatesAFile
from mass_plugin.checkpoint_broadcast import load_portable, portable
from mass_plugin.checkpoint_safety import (
    SAFE_GLOBALS,
    CorruptCheckpointError,
    UnsafeCheckpointError,
)


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


def test_what_rank_0_sends_loads_weights_only_with_its_configuration():
    """mass_plugin.checkpoint_broadcast: a loaded checkpoint's state (an
    omegaconf configuration, a Namespace, numpy scalars, fairseq's tensor
    placeholders) crosses to the other ranks through the weights-only
    unpickler and the allow-list; anything else is refused."""
    cfg = OmegaConf.create({"task": {"_name": "masked_s2s", "mask_ratio": 0.5}})
    OmegaConf.set_struct(cfg, True)
    state = {"cfg": cfg, "args": argparse.Namespace(arch="transformer_mass"),
             "extra_state": collections.OrderedDict(bleu=np.float64(1.5)),
             "last_optimizer_state": {"state": {0: _TensorPlaceholder(3)}, "lr": [1e-3]}}
    sent = io.BytesIO()
    torch.save(portable(state), sent)
    got = load_portable(sent.getvalue())
    assert OmegaConf.is_config(got["cfg"]) and OmegaConf.is_struct(got["cfg"])
    assert got["cfg"].task.mask_ratio == 0.5 and got["args"].arch == "transformer_mass"
    assert isinstance(got["extra_state"], collections.OrderedDict)
    assert got["last_optimizer_state"]["state"][0] == _TensorPlaceholder(3)
    assert OmegaConf.is_config(state["cfg"])  # the sender's own object is untouched
    # the process's allow-list is as it was: checkpoints with a Namespace and
    # numpy scalars still load weights-only afterwards
    assert set(SAFE_GLOBALS) <= set(torch.serialization.get_safe_globals())
    assert _TensorPlaceholder not in torch.serialization.get_safe_globals()
    unsafe = io.BytesIO()
    torch.save({"payload": CreatesAFile("/nonexistent/never")}, unsafe)
    with pytest.raises(pickle.UnpicklingError):
        load_portable(unsafe.getvalue())
