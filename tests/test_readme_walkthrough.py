"""README's fairseq-only block ("Pre-train, fine-tune, translate with
fairseq's commands") runs as written on real text: the first lines of the
bundled English/French sample, raw, in a directory where `--user-dir
mass_plugin` resolves as from the repository root. The test only adds
options at the end of some commands, which argparse lets win: a small
sentencepiece vocabulary, the tiny model, a few updates, the CPU. MASS
pre-training gets 90 updates (10 of warm-up), validated every 30 and at
its epoch's end: on real text its validation loss falls each time."""

import re
import subprocess

import pytest
from helpers.doc_blocks import bash_blocks, with_options

from conftest import PLUGIN_DIR, REPO, cli_env, valid_losses, write

README = REPO / "README.md"
SECTION = "Pre-train, fine-tune, translate with fairseq's commands"
# what each program gets added at the end of its arguments
SHRINK = {
    "mass-learn-subwords": ["--vocab-size", "1000"],
    "fairseq-train": ["--arch", "transformer_mass_tiny", "--max-update", "3", "--cpu",
                      "--max-tokens", "1024", "--num-workers", "0"],
    "fairseq-train --task masked_s2s": ["--max-update", "90", "--validate-interval-updates",
                                        "30", "--save-interval-updates", "30",
                                        "--warmup-updates", "10"],
    # a model of 3 updates translates to the length limit: a short one
    "fairseq-generate": ["--cpu", "--max-len-b", "8"],
}
# the first lines of each file of examples/data
LINES = {"mono": 500, "mono.valid": 40, "train": 300, "valid": 30, "test": 30}


def shrink(command):
    """``command`` with SHRINK's options for its program (and, for MASS
    pre-training, those of "fairseq-train --task masked_s2s" after them)."""
    program = command.split()[0]
    options = list(SHRINK.get(program, []))
    if program == "fairseq-train" and "--task masked_s2s" in command:
        options += SHRINK["fairseq-train --task masked_s2s"]
    return with_options(command, program, options)


@pytest.mark.slow
def test_the_readme_fairseq_block_runs_as_written_and_scores_with_sacrebleu(tmp_path):
    blocks = bash_blocks(README.read_text(encoding="utf-8"), lambda h: h == SECTION)
    assert len(blocks) == 1, f"expected one bash block under '## {SECTION}'"
    commands = blocks[0]
    programs = {command.split()[0] for command in commands}
    assert {key.split()[0] for key in SHRINK} <= programs, (
        "the block no longer runs the commands the test shrinks")
    assert any("--task masked_s2s" in command for command in commands)
    for name, n in LINES.items():
        for lang in ("en", "fr"):
            lines = (REPO / "examples" / "data" / f"{name}.{lang}").read_text().splitlines()
            write(tmp_path / f"{name}.{lang}", lines[:n])
    (tmp_path / "mass_plugin").symlink_to(PLUGIN_DIR)  # as from the repository root
    script = "\n".join(["set -euo pipefail"] + [shrink(command) for command in commands])
    env = cli_env()
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
    # pre-training on real text learns: each validation's loss lower
    pretraining = proc.stdout.split("done training", 1)[0]
    losses = valid_losses(pretraining)
    assert len(losses) >= 3 and all(a > b for a, b in zip(losses, losses[1:])), losses
    assert re.search(r"\| span_acc [\d.]+", pretraining)
