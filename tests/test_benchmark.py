"""The benchmark's quick mode as a smoke run: every table is produced from
real measurements. Speeds are not asserted (that is what the benchmark's
output is for), only what holds whatever the machine."""

import json
import math
import subprocess
import sys

from conftest import REPO, cli_env


def test_quick_benchmark_measures_every_configuration_on_the_same_batches(tmp_path):
    output = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/benchmark.py"), "--quick",
         "--workdir", str(tmp_path / "work"), "--output", str(output)],
        cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for title in ("Training cost", "masked_s2s by mask ratio", "Data cost",
                  "Decoding", "Sentences of 64 tokens"):
        assert title in proc.stdout

    rows = {row["name"]: row for row in map(json.loads, output.read_text().splitlines())}
    assert {"denoising (BART) mask 0.5", "translation copy", "masked_s2s 0.5",
            "masked_s2s 0.15", "translation copy, transformer_mass"} <= set(rows)
    for row in rows.values():
        assert row["sentences_per_s"] > 0 and row["step_s"] > 0 and row["data_s"] > 0
    # the comparison is only fair if every configuration saw the same sentences
    main = ["denoising (BART) mask 0.5", "translation copy", "masked_s2s 0.5"]
    assert len({rows[name]["batches"] for name in main}) == 1
    tokens_per_sentence = [rows[name]["src_tokens_per_s"] / rows[name]["sentences_per_s"]
                           for name in main]
    assert all(math.isclose(t, tokens_per_sentence[0]) for t in tokens_per_sentence)
    for name in ("translation copy", "translation copy, transformer_mass"):
        assert rows[name]["decode_sentences_per_s"] > 0
