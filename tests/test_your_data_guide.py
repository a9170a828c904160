"""docs/your-data.md's worked example runs as written, on the German/English
slice it names (examples/data/en-de/), down to sacreBLEU: the ```bash blocks
of its numbered sections, in order, in one shell. examples/README.md's "your
own text" points to this guide, so this test covers both. The test shrinks
the run through variables only: every `MAX_UPDATE=N` of the page becomes 3,
and the environment sets `NUM_GPUS=0` and `BEAM=1`, which the page's
commands leave to it. Fine-tuning is given no model options: it takes the
pre-trained checkpoint's."""

import re
import subprocess

import pytest
from fairseq import checkpoint_utils
from helpers.doc_blocks import FENCE, bash_blocks

from conftest import REPO, cli_env

GUIDE = REPO / "docs" / "your-data.md"
NUMBERED = re.compile(r"^\d+\. ")
UPDATES = re.compile(r"\bMAX_UPDATE=\d+")


def step_one_output(text):
    """The lines of the ```text block of section 1 (what prepare_data.sh prints)."""
    section = text.split("## 1. ", 1)[1].split("\n## ", 1)[0]
    blocks = [body for info, body in FENCE.findall(section) if info.strip() == "text"]
    assert blocks, "section 1 shows no output"
    return blocks[0].splitlines()


@pytest.mark.slow
def test_the_guides_worked_example_runs_as_written_down_to_sacrebleu(tmp_path):
    text = GUIDE.read_text(encoding="utf-8")
    commands = [c for block in bash_blocks(text, lambda h: bool(NUMBERED.match(h)))
                for c in block]
    assert sum(bool(UPDATES.search(c)) for c in commands) == 2, (
        "the guide's pre-training and fine-tuning no longer set MAX_UPDATE")
    script = "\n".join(["set -euo pipefail"] + [UPDATES.sub("MAX_UPDATE=3", c) for c in commands])
    (tmp_path / "examples").symlink_to(REPO / "examples")  # as from the repository root
    env = cli_env()
    env.update(NUM_GPUS="0", BEAM="1")
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    # step 1 prints what the page says it prints
    printed = proc.stdout.splitlines()
    assert all(line in printed for line in step_one_output(text)), proc.stdout[:2000]
    # pre-trained on both languages, fine-tuned from it, every test line translated
    assert "valid on 'valid.de' subset" in log and "valid on 'valid.en' subset" in log
    assert "loading pretrained model from work/de-en/pretrain/checkpoint_best.pt" in log
    # fine-tuning built the pre-trained model's sizes and style, given only to pre-training
    assert ("fine-tuning transformer_mass (2+2 layers, 128 dims, --embedding-style xlm) from "
            "work/de-en/pretrain/checkpoint_best.pt") in log
    saved = checkpoint_utils.load_checkpoint_to_cpu(
        str(tmp_path / "work/de-en/ft/checkpoint_best.pt"))["cfg"]["model"]
    assert (saved.encoder_layers, saved.encoder_embed_dim, saved.encoder_ffn_embed_dim,
            saved.embedding_style) == (2, 128, 512, "xlm")
    test_lines = (REPO / "examples/data/en-de/test.en").read_text().count("\n")
    assert f"== de->en test: {test_lines} sentences" in log
    hypotheses = tmp_path / "work/de-en/ft/checkpoint_best.test.de-en.txt"
    assert hypotheses.read_text(encoding="utf-8").count("\n") == test_lines
    bleu = re.search(r"^\s*BLEU\|nrefs:1\|.* = [\d.]+ .*$", proc.stdout, flags=re.M)
    assert bleu, proc.stdout[-2000:]
    print(bleu.group(0).strip())
