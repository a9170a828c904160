"""A code-running checkpoint never runs through a documented command.

Each case hands a checkpoint whose pickle would create a marker file to a
fairseq command with ``--user-dir mass_plugin`` (or the hub interface) and
checks that the command refuses it and that the marker never appears: in
the zip and the legacy format, with and without
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``, from a local and a remote-style path,
through ``--path``, ``--restore-file``, ``--finetune-from-model`` and
``--ema-seed-model``.
"""

import argparse
import shutil
import subprocess
import sys

import pytest
import torch
from fairseq import checkpoint_utils

from conftest import PLUGIN_DIR, REPO, CreatesAFile, cli_env
from mass_plugin.checkpoint_safety import TRUST_ENV, UnscannableCheckpointError

REFUSED = "refusing to load checkpoint"


def payload_checkpoint(path, marker, legacy=False):
    """A fairseq-shaped checkpoint that creates ``marker`` when unpickled."""
    state = {"args": None, "cfg": {"model": argparse.Namespace(arch="transformer_mass_tiny")},
             "model": {"w": torch.zeros(2)}, "payload": CreatesAFile(marker)}
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    assert not marker.exists()
    return path


def run(cmd, force_unsafe=False, trust=None, cwd=REPO):
    env = cli_env()
    if force_unsafe:
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    if trust is not None:
        env[TRUST_ENV] = str(trust)
    if cmd[0].startswith("fairseq-"):
        cmd = [shutil.which(cmd[0], path=env["PATH"])] + [str(c) for c in cmd[1:]]
    return subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=300)


@pytest.fixture
def pair_dicts(tmp_path):
    """A translation data dir with only its dictionaries: fairseq-generate
    reads them, then the checkpoint, before any data."""
    data = tmp_path / "data-bin"
    data.mkdir()
    for lang in ("en", "fr"):
        (data / f"dict.{lang}.txt").write_text("a 1\nb 1\n")
    return data


def generate_args(data, path):
    return ["fairseq-generate", data, "--user-dir", PLUGIN_DIR, "--task", "translation",
            "-s", "en", "-t", "fr", "--path", path, "--cpu"]


@pytest.mark.slow
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("force_unsafe", [False, True], ids=["default", "force-no-weights-only"])
def test_fairseq_generate_refuses_a_payload_checkpoint(tmp_path, pair_dicts, legacy,
                                                       force_unsafe):
    marker = tmp_path / "payload-ran"
    evil = payload_checkpoint(tmp_path / "evil.pt", marker, legacy=legacy)
    proc = run(generate_args(pair_dicts, evil), force_unsafe=force_unsafe)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr and str(evil) in proc.stderr
    if legacy:
        assert "legacy" in proc.stderr and TRUST_ENV in proc.stderr
    else:
        assert "io.open" in proc.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_trusting_a_legacy_payload_still_loads_it_weights_only(tmp_path, pair_dicts):
    # the opt-in skips the scan, not torch's weights-only unpickler, even
    # when the environment asks torch to turn that unpickler off
    marker = tmp_path / "payload-ran"
    evil = payload_checkpoint(tmp_path / "evil.pt", marker, legacy=True)
    proc = run(generate_args(pair_dicts, evil), force_unsafe=True, trust=evil)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr
    assert "without scanning it" in proc.stdout + proc.stderr
    assert not marker.exists()


# A path fairseq's PathManager resolves through a registered handler (as
# for s3:// or manifold://): "remote-test://NAME" is fetched from ROOT into a
# cache directory, the way a download would be.
REMOTE_GENERATE = """
import os, shutil, sys
from iopath.common.file_io import PathHandler
from fairseq.file_io import IOPathManager
from fairseq_cli.generate import cli_main

ROOT, CACHE = sys.argv.pop(1), sys.argv.pop(1)

class CopyingHandler(PathHandler):
    PREFIX = "remote-test://"
    def _get_supported_prefixes(self):
        return [self.PREFIX]
    def _source(self, path):
        return os.path.join(ROOT, path[len(self.PREFIX):])
    def _get_local_path(self, path, **kwargs):
        os.makedirs(CACHE, exist_ok=True)
        return shutil.copy(self._source(path), CACHE)
    def _exists(self, path, **kwargs):
        return os.path.exists(self._source(path))
    def _isfile(self, path, **kwargs):
        return os.path.isfile(self._source(path))
    def _open(self, path, mode="r", **kwargs):
        return open(self._source(path), mode)

IOPathManager.register_handler(CopyingHandler())
sys.argv[0] = "fairseq-generate"
cli_main()
"""


@pytest.mark.slow
def test_a_remote_path_is_scanned_in_its_local_copy(tmp_path, pair_dicts):
    marker = tmp_path / "payload-ran"
    remote = tmp_path / "remote"
    remote.mkdir()
    payload_checkpoint(remote / "evil.pt", marker)
    script = tmp_path / "remote_generate.py"
    script.write_text(REMOTE_GENERATE)
    cmd = [sys.executable, script, remote, tmp_path / "cache"]
    cmd += generate_args(pair_dicts, "remote-test://evil.pt")[1:]
    proc = run([str(c) for c in cmd], force_unsafe=True)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr and "remote-test://evil.pt" in proc.stderr
    assert "local copy" in proc.stderr
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--restore-file", "--finetune-from-model",
                                  "--ema-seed-model"])
def test_fairseq_train_refuses_a_payload_checkpoint(tmp_path, mono_data, flag):
    data_dir, _, _ = mono_data
    marker = tmp_path / "payload-ran"
    evil = payload_checkpoint(tmp_path / "evil.pt", marker)
    cmd = ["fairseq-train", data_dir, "--user-dir", PLUGIN_DIR, "--task", "masked_s2s",
           "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss",
           "--optimizer", "adam", "--lr", "0.0001", "--max-tokens", "500",
           "--max-update", "1", "--cpu", "--save-dir", tmp_path / "ckpt",
           "--no-epoch-checkpoints", flag, evil]
    if flag == "--ema-seed-model":
        cmd.append("--store-ema")
    proc = run(cmd, force_unsafe=True)
    assert proc.returncode != 0
    assert REFUSED in proc.stderr and "io.open" in proc.stderr
    assert not marker.exists()


def test_the_hub_interface_refuses_a_payload_checkpoint(tmp_path, monkeypatch, mono_data):
    from mass_plugin.models.transformer_mass import TransformerMassModel

    data_dir, _, _ = mono_data
    marker = tmp_path / "payload-ran"
    payload_checkpoint(data_dir / "evil.pt", marker)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(Exception, match=REFUSED):
        TransformerMassModel.from_pretrained(str(data_dir), checkpoint_file="evil.pt",
                                             data_name_or_path=str(data_dir))
    assert not marker.exists()


def test_a_trusted_legacy_checkpoint_loads_and_an_untrusted_one_says_how(
        tmp_path, monkeypatch):
    path = tmp_path / "old-format.pt"
    torch.save({"args": None, "model": {"w": torch.ones(3)},
                "cfg": {"model": argparse.Namespace(arch="transformer_mass_tiny")},
                "optimizer_history": [{"num_updates": 0, "optimizer_name": "Adam",
                                       "lr_scheduler_state": {"best": 1.0}}],
                "extra_state": {}},
               path, _use_new_zipfile_serialization=False)
    monkeypatch.delenv(TRUST_ENV, raising=False)
    with pytest.raises(UnscannableCheckpointError, match=TRUST_ENV):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    monkeypatch.setenv(TRUST_ENV, str(tmp_path / "other.pt"))  # names another file
    with pytest.raises(UnscannableCheckpointError):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    monkeypatch.setenv(TRUST_ENV, str(path))
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert state["model"]["w"].tolist() == [1.0, 1.0, 1.0]
    assert state["cfg"]["model"].arch == "transformer_mass_tiny"
