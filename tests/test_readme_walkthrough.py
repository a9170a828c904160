"""README's fairseq-only block ("Pre-train, fine-tune, translate with
fairseq's commands") runs as written on real text: the first lines of the
bundled English/French sample, raw, in a directory where `--user-dir
mass_plugin` resolves as from the repository root. The test only adds
options at the end of some commands, which argparse lets win: a small
sentencepiece vocabulary, the tiny model, a few updates, the CPU."""

import os
import re
import subprocess

import pytest
from helpers.doc_blocks import bash_blocks, with_options

from conftest import BIN_DIR, PLUGIN_DIR, REPO, cli_env, write

README = REPO / "README.md"
SECTION = "Pre-train, fine-tune, translate with fairseq's commands"
# what each program gets added at the end of its arguments
SHRINK = {
    "mass-learn-subwords": ["--vocab-size", "1000"],
    "fairseq-train": ["--arch", "transformer_mass_tiny", "--max-update", "3", "--cpu",
                      "--max-tokens", "1024", "--num-workers", "0"],
    "fairseq-generate": ["--cpu"],
}
# the first lines of each file of examples/data
LINES = {"mono": 500, "mono.valid": 40, "train": 300, "valid": 30, "test": 30}


@pytest.mark.slow
def test_the_readme_fairseq_block_runs_as_written_and_scores_with_sacrebleu(tmp_path):
    blocks = bash_blocks(README.read_text(encoding="utf-8"), lambda h: h == SECTION)
    assert len(blocks) == 1, f"expected one bash block under '## {SECTION}'"
    commands = blocks[0]
    programs = {command.split()[0] for command in commands}
    assert set(SHRINK) <= programs, "the block no longer runs the commands the test shrinks"
    for name, n in LINES.items():
        for lang in ("en", "fr"):
            lines = (REPO / "examples" / "data" / f"{name}.{lang}").read_text().splitlines()
            write(tmp_path / f"{name}.{lang}", lines[:n])
    (tmp_path / "mass_plugin").symlink_to(PLUGIN_DIR)  # as from the repository root
    script = "\n".join(["set -euo pipefail"] + [
        with_options(command, command.split()[0], SHRINK.get(command.split()[0], []))
        for command in commands])
    env = cli_env()
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{script}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    # sentencepiece undone: as many raw-text hypotheses as reference lines
    hypotheses = (tmp_path / "hyp.fr").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == LINES["test"]
    assert not any("\u2581" in line for line in hypotheses), "sentencepiece's marks left in"
    assert "loading pretrained model from checkpoints/pretrain/checkpoint_best.pt" in (
        proc.stdout + proc.stderr)
    assert re.search(r"^\s*BLEU\|nrefs:1\|.* = [\d.]+ ", proc.stdout, flags=re.M), proc.stdout
    assert re.search(r"^chrF2\|.* = [\d.]+", proc.stdout, flags=re.M), proc.stdout
