"""The benchmark's quick mode as a smoke run: every table is produced from
real measurements. Speeds are not asserted (that is what the benchmark's
output is for), only what holds whatever the machine."""

import json
import math
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from conftest import REPO, binarize_splits, cli_env, synthetic_sentences


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


def test_steady_state_mode_warms_up_counts_flops_and_profiles(tmp_path):
    """The GPU tables' measurement (--steady, always on with --device cuda),
    shrunken to the CPU: warm-up, timed updates cycling through the same
    batches, FLOPs from the matrix products, the profiler's table."""
    output = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/benchmark.py"), "--quick", "--steady",
         "--updates", "3", "--warmup-min", "2", "--warmup-max", "3", "--sizes", "512",
         "--tables", "sizes,base", "--variant", "fused=--cross-attention fused",
         "--profile-steps", "2", "--workdir", str(tmp_path / "work"), "--output", str(output)],
        cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Steady state, 2+2 layers, 64 dims, fp32, --max-tokens 512" in proc.stdout
    assert "masked_s2s 0.5 / denoising sentences/s at 512 tokens" in proc.stdout
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["name"] for row in rows] == [
        "denoising (BART) mask 0.5", "masked_s2s 0.5", "masked_s2s 0.5 fp32",
        "masked_s2s 0.5 fp32, fused", "denoising (BART) mask 0.5 fp32"]
    # a --variant row: measured beside the row without its options, ratio printed
    assert "masked_s2s 0.5 fp32, fused / denoising sentences/s, base model:" in proc.stdout
    assert (tmp_path / "work/profile-masked_s2s-base-512-fp32-fused.txt").exists()
    assert len({row["batches"] for row in rows[:2]}) == 1  # the same batches
    for row in rows:
        assert row["timed_steps"] == 3 and 2 <= row["warmup_steps"] <= 3
        assert row["tflops"] > 0 and row["mfu"] is None  # no known peak on a CPU
    # MASS decodes half the sentence: fewer FLOPs per sentence than denoising
    per_sentence = [row["tflops"] / row["sentences_per_s"] for row in rows[:2]]
    assert per_sentence[1] < per_sentence[0]
    profile = (tmp_path / "work/profile-masked_s2s-d512-512-fp32.txt").read_text()
    assert "2 steps" in profile and "aten::" in profile


def test_gpu_check_lists_its_steps_and_refuses_to_run_without_a_gpu(tmp_path):
    script = str(REPO / "benchmarks/gpu_check.sh")
    dry = subprocess.run(["bash", script, str(tmp_path / "dry")], cwd=REPO,
                         env={**cli_env(), "DRY_RUN": "1"}, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    steps = ["tests", "quickstart", "hub", "ranks", "online", "base_fp16", "base_bf16",
             "benchmark"]
    listed = re.findall(r"^(\w+) \((\d+) s\): ", dry.stdout, flags=re.M)
    assert [name for name, _ in listed] == steps
    assert sum(int(limit) for _, limit in listed) <= 9.5 * 60
    summary = (tmp_path / "dry/summary.md").read_text()
    assert all(f"| {step} | not run (dry run) |" in summary for step in steps)
    for script_name in ("benchmarks/benchmark.py", "benchmarks/hub_devices.py",
                        "benchmarks/two_ranks.py"):
        assert script_name in dry.stdout
        help_out = subprocess.run([sys.executable, script_name, "--help"], cwd=REPO,
                                  env=cli_env(), capture_output=True, text=True)
        assert help_out.returncode == 0, help_out.stderr
    if not torch.cuda.is_available():
        real = subprocess.run(["bash", script, str(tmp_path / "real")], cwd=REPO,
                              env=cli_env(), capture_output=True, text=True)
        assert real.returncode == 3 and "no CUDA GPU here" in real.stderr


def test_gpu_busy_share_counts_kernels_not_the_annotation_ranges():
    """The GPU timeline repeats fairseq's record_function ranges ("forward",
    "optimizer"), which span kernels and the idle gaps between them."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from step_profile import kernel_seconds

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    def event(name, device, microseconds):
        return SimpleNamespace(name=name, device_type=device,
                               time_range=SimpleNamespace(elapsed_us=lambda: microseconds))

    events = [event("forward", cpu, 900), event("forward", cuda, 800),
              event("aten::mm", cpu, 50), event("nvjet_sm90_gemm", cuda, 300),
              event("Memcpy HtoD (Pageable -> Device)", cuda, 20)]
    assert kernel_seconds(events) == pytest.approx(320e-6)


def test_two_ranks_check_matches_update_freq_2_on_the_cpu(tmp_path):
    """benchmarks/two_ranks.py (gpu_check.sh's ranks step) on the CPU: the
    two ranks' loss curve is one rank's with --update-freq 2."""
    lines = synthetic_sentences(50, 300)
    binarize_splits(tmp_path, {"train": lines, "valid": lines[:20]})
    proc = subprocess.run(
        [sys.executable, "benchmarks/two_ranks.py", "--data-bin", str(tmp_path), "--langs", "",
         "--device", "cpu", "--updates", "8", "--max-tokens", "300",
         "--work-dir", str(tmp_path / "work")],
        cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"^cpu fp32: 8 updates, largest loss gap 0\.0\d* ", proc.stdout, re.M)
    assert "2 ranks " in proc.stdout
