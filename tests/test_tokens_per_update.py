"""mass_tools/tokens_per_update.py: predicted tokens per pre-training update,
checked where the answer is known (k = 1 and k = m) and bounded in between."""

import json
import subprocess

import pytest

from conftest import REPO, binarize_splits, cli_env, synthetic_sentences

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow


def test_predicted_tokens_per_update_follow_the_span_length(tmp_path):
    binarize_splits(tmp_path, {"train.en": synthetic_sentences(1, 200, prefix="e"),
                               "train.fr": synthetic_sentences(2, 200, prefix="f")})
    # 400 sentences of about 12 tokens in batches of at most 256 tokens:
    # about 28 batches an epoch, so 30 updates run into the second epoch
    proc = subprocess.run(
        ["python", "-m", "mass_tools.tokens_per_update", str(tmp_path),
         "--langs", "en,fr", "--max-tokens", "256", "--updates", "30",
         "--ratios", "0,0.5,1", "--json"],
        cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {row["mask_ratio"]: row for row in map(json.loads, proc.stdout.splitlines())}
    assert set(rows) == {0.0, 0.5, 1.0}
    # every ratio sees the same batches
    assert len({(r["source_tokens"], r["sentences"]) for r in rows.values()}) == 1
    sentences, source = rows[0.0]["sentences"], rows[0.0]["source_tokens"]
    assert source <= 256
    assert sentences * 30 > 400  # the count went on into the second epoch
    assert rows[0.0]["predicted_tokens"] == sentences  # k = 1: one token a sentence
    assert rows[1.0]["predicted_tokens"] == source  # k = m: every token
    # k = round(m / 2) per sentence: within half a token a sentence of m / 2
    half = rows[0.5]["predicted_tokens"]
    assert abs(half - source / 2) <= sentences / 2 + 1e-6
