"""The benchmark's quick mode as a smoke run: every table is produced from
real measurements. Speeds are not asserted (that is what the benchmark's
output is for), only what holds whatever the machine.

The driver runs in this process, and so do its rows: each is measured by
bench_worker.worker, what the fresh process of a real run executes, but
for the first row, which goes through that process (``--worker``)."""

import copy
import json
import math
import re
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from benchmarks import bench_data, bench_worker, benchmark
from conftest import REPO, binarize_splits, cli_env, synthetic_sentences


def run_benchmark(argv, monkeypatch, capsys):
    """benchmark.main(argv) here, each row but the first measured in this
    process; fairseq-preprocess from the tests' warm server. Its stdout."""
    measured = []

    def measure(spec, args):
        if not measured:  # the real path: a process of its own
            measured.append(real(spec, args))
            return measured[-1]
        worker_args = copy.copy(args)
        worker_args.profile_dir = args.profile_dir or args.workdir
        measured.append(bench_worker.worker(spec, worker_args))
        return measured[-1]

    real = benchmark.measure
    env = cli_env()
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    if "MASS_TEST_WARM_SOCKET" in env:
        monkeypatch.setenv("MASS_TEST_WARM_SOCKET", env["MASS_TEST_WARM_SOCKET"])
    monkeypatch.setattr(benchmark, "measure", measure)
    monkeypatch.setattr(bench_data, "fairseq_bin", lambda name: name)
    monkeypatch.chdir(REPO)
    benchmark.main(argv)
    assert len(measured) > 1
    return capsys.readouterr().out


@pytest.mark.slow
def test_quick_benchmark_measures_every_configuration_on_the_same_batches(
        tmp_path, monkeypatch, capsys):
    output = tmp_path / "results.jsonl"
    stdout = run_benchmark(["--quick", "--workdir", str(tmp_path / "work"), "--output",
                            str(output)], monkeypatch, capsys)
    for title in ("Training cost", "masked_s2s by mask ratio", "Data cost",
                  "Decoding", "Sentences of 64 tokens"):
        assert title in stdout

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


@pytest.mark.slow
def test_steady_state_mode_warms_up_counts_flops_and_profiles(tmp_path, monkeypatch, capsys):
    """The GPU tables' measurement (--steady, always on with --device cuda),
    shrunken to the CPU: warm-up, timed updates cycling through the same
    batches, FLOPs from the matrix products, the profiler's table."""
    output = tmp_path / "results.jsonl"
    stdout = run_benchmark(
        ["--quick", "--steady", "--updates", "3", "--warmup-min", "2", "--warmup-max", "3",
         "--sizes", "512", "--tables", "sizes,base", "--variant", "big=--max-tokens 1024",
         "--profile-steps", "2", "--workdir", str(tmp_path / "work"), "--output",
         str(output)], monkeypatch, capsys)
    assert "Steady state, 2+2 layers, 64 dims, fp32, --max-tokens 512" in stdout
    assert "masked_s2s 0.5 / denoising sentences/s at 512 tokens" in stdout
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["name"] for row in rows] == [
        "denoising (BART) mask 0.5", "masked_s2s 0.5", "masked_s2s 0.5 fp32",
        "masked_s2s 0.5 fp32, big", "denoising (BART) mask 0.5 fp32"]
    # a --variant's --max-tokens sets its row's batches, not the others'
    assert [row["max_tokens"] for row in rows[2:]] == [512, 1024, 512]
    tokens_per_batch = [row["sentences_per_batch"] * row["src_tokens_per_s"]
                        / row["sentences_per_s"] for row in rows]
    assert tokens_per_batch[3] > 1.5 * tokens_per_batch[2]
    # a --variant row: measured beside the row without its options, ratio printed
    assert "masked_s2s 0.5 fp32, big / denoising fp32 sentences/s, base model:" in stdout
    assert (tmp_path / "work/profile-masked_s2s-base-1024-fp32-big.txt").exists()
    assert len({row["batches"] for row in rows[:2]}) == 1  # the same batches
    assert len({row["batches"] for row in rows[2:3] + rows[4:]}) == 1
    assert rows[3]["batches"] != rows[2]["batches"]
    for row in rows:
        assert row["timed_steps"] == 3 and 2 <= row["warmup_steps"] <= 3
        assert row["tflops"] > 0 and row["mfu"] is None  # no known peak on a CPU
        # real tokens only: never more FLOPs than counting the padding too
        assert 0 < row["real_tflops"] <= row["tflops"] and 0 <= row["src_pad"] < 1
    # MASS decodes half the sentence: fewer FLOPs per sentence than denoising
    per_sentence = [row["tflops"] / row["sentences_per_s"] for row in rows[:2]]
    assert per_sentence[1] < per_sentence[0]
    profile = (tmp_path / "work/profile-masked_s2s-d512-512-fp32.txt").read_text()
    assert "2 steps" in profile and "aten::" in profile


GPU_CHECK = str(REPO / "benchmarks/gpu_check.sh")
DEFAULT_STEPS = ["tests", "quickstart", "hub", "base_fp16", "base_bf16", "ranks_fp16",
                 "ranks_bf16", "online"]
LISTED = re.compile(r"^(\w+) \(limit (\d+) s, expected (\d+) s, phase (\d+)(, warm)?\): (.*)$",
                    re.M)


def gpu_check_dry_run(out, steps=None):
    env = {**cli_env(), "DRY_RUN": "1", **({"STEPS": steps} if steps else {})}
    return subprocess.run(["bash", GPU_CHECK, str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True)


@pytest.mark.slow
def test_gpu_check_lists_its_steps_within_the_budget_and_refuses_to_run_without_a_gpu(
        tmp_path):
    """The dry run: each default step with its limit, expected duration and
    command; every limit at least 1.33x the expected duration; the limits on
    the critical path (the longest of each phase, with the runner's 15 s
    start and 3 s to end a cut step) within 8 minutes; one pytest process for
    every GPU test; at most 8 files in the output folder."""
    dry = gpu_check_dry_run(tmp_path / "dry")
    assert dry.returncode == 0, dry.stderr
    listed = LISTED.findall(dry.stdout)
    assert [name for name, *_ in listed] == DEFAULT_STEPS
    longest = {}
    for name, limit, expected, phase, warm, command in listed:
        assert int(limit) >= 1.33 * int(expected), name
        longest[phase] = max(longest.get(phase, 0), int(limit))
    assert 15 + sum(limit + 3 for limit in longest.values()) <= 8 * 60
    assert len(longest) == len(listed) - 1  # only the tests and the quickstart side by side
    assert {name for name, *_, warm, _ in listed if warm} == {"hub", "base_fp16", "base_bf16"}
    pytest_steps = [(name, command) for name, *_, command in listed
                    if re.search(r"-m pytest\b", command)]
    assert len(pytest_steps) == 1 and pytest_steps[0][0] == "tests"
    words = pytest_steps[0][1].split()
    assert words[words.index("python"):words.index("pytest") + 1] == ["python", "-u", "-m",
                                                                      "pytest"]
    assert " -m gpu -n 0 " in pytest_steps[0][1] and words[-1] == "tests"  # every file
    assert not re.search(r"&&|;|\|", pytest_steps[0][1])  # one command, one process
    files = re.search(r"^output files: (.*)$", dry.stdout, re.M).group(1).split(", ")
    assert len(files) <= 8 and "summary.md" in files
    assert "warning" not in dry.stdout
    assert sorted(p.name for p in (tmp_path / "dry").iterdir()) == ["summary.md"]
    summary = (tmp_path / "dry/summary.md").read_text()
    assert all(f"| {step} | not run (dry run) |" in summary for step in DEFAULT_STEPS)
    for script_name in ("benchmarks.hub_devices", "benchmarks.two_ranks",
                        "examples/quickstart.sh", "projects/unsupervised/online_bt.sh"):
        assert script_name in dry.stdout
    if not torch.cuda.is_available():
        real = subprocess.run(["bash", GPU_CHECK, str(tmp_path / "real")], cwd=REPO,
                              env=cli_env(), capture_output=True, text=True)
        assert real.returncode == 3 and "no CUDA GPU here" in real.stderr


@pytest.mark.slow
def test_gpu_check_keeps_the_benchmark_for_a_call_of_its_own(tmp_path):
    """STEPS=benchmark and STEPS=speed each fit the budget and the 8 files
    alone; STEPS=all passes the budget and says so; an unknown step is
    refused by name."""
    for name in ("benchmark", "speed"):
        alone = gpu_check_dry_run(tmp_path / name, name)
        listed = LISTED.findall(alone.stdout)
        assert [n for n, *_ in listed] == [name] and "warning" not in alone.stdout
        assert "-m benchmarks.benchmark --device cuda" in listed[0][-1]
        files = re.search(r"^output files: (.*)$", alone.stdout, re.M).group(1).split(", ")
        assert len(files) <= 8
    assert "--tables speed" in listed[0][-1] and "--budget-s" in listed[0][-1]
    every = gpu_check_dry_run(tmp_path / "all", "all")
    assert [name for name, *_ in LISTED.findall(every.stdout)] == DEFAULT_STEPS + [
        "benchmark", "speed"]
    assert re.search(r"^warning: .* past the 480 s budget", every.stdout, re.M)
    wrong = gpu_check_dry_run(tmp_path / "wrong", "hub,bogus")
    assert wrong.returncode != 0 and "unknown step(s) bogus" in wrong.stderr
    for module in ("benchmarks.benchmark", "benchmarks.hub_devices", "benchmarks.two_ranks",
                   "benchmarks.gpu_check"):
        help_out = subprocess.run(["python", "-m", module, "--help"], cwd=REPO,
                                  env=cli_env(), capture_output=True, text=True)
        assert help_out.returncode == 0, help_out.stderr


def test_gpu_check_table_rules_catch_a_short_limit_and_an_over_budget_plan():
    from dataclasses import replace

    from benchmarks.gpu_check import MARGIN, plan, problems, select

    steps = select(plan("/out", "/work"), "default")
    assert problems(steps) == []
    # the rule: a limit of at least MARGIN (> 1) times the expected duration,
    # whole seconds; the hub step's limit at the least it may be, then a second under
    assert MARGIN > 1
    hub = next(s for s in steps if s.name == "hub")
    least = math.ceil(MARGIN * hub.expected_s)
    assert problems([replace(s, limit_s=least) if s is hub else s for s in steps]) == []
    short = [replace(s, limit_s=least - 1) if s is hub else s for s in steps]
    assert problems(short) == [f"hub: limit {least - 1} s is under {MARGIN}x its expected "
                               f"{hub.expected_s} s"]
    longer = [replace(s, limit_s=s.limit_s + 20) if s.name == "online" else s for s in steps]
    assert any("past the 480 s budget" in p for p in problems(longer))
    beside = [replace(s, phase=1) if s.name == "hub" else s for s in steps]
    assert "phase 1: a warm step must run alone" in problems(beside)


@pytest.mark.slow
def test_gpu_check_runner_tees_cuts_forks_warm_steps_and_writes_rows_as_they_end(tmp_path):
    """The runner on the CPU with a tiny table: two steps side by side, one
    cut at its 3 s limit (its first line kept, the next step started); warm
    steps in forks of the runner, which imported fairseq (the pretrain_base
    preset trains 2 updates of a tiny model there); a failure's message in
    its row; a step whose input an earlier step did not make."""
    lines = synthetic_sentences(60, 200)
    binarize_splits(tmp_path, {"train": lines, "valid": lines[:20]})
    (tmp_path / "probe.py").write_text(
        "import os, sys\n"
        "print('warm', 'fairseq_cli.hydra_train' in sys.modules, os.getppid() == "
        "int(os.environ['RUNNER_PID']))\n")
    (tmp_path / "fail.py").write_text("import sys\nsys.exit('error: no such file: x.txt')\n")
    hydra = ["fairseq-hydra-train", "--config-dir", str(REPO / "mass_plugin/config"),
             "--config-name", "pretrain_base", f"common.user_dir={REPO / 'mass_plugin'}",
             f"task.data={tmp_path}", "common.cpu=true", "common.fp16=false",
             "model._name=transformer_mass_tiny", "optimization.max_update=2",
             "optimization.update_freq=[1]", "dataset.max_tokens=500",
             "dataset.num_workers=0", "checkpoint.no_save=true", "common.log_interval=1",
             f"checkpoint.save_dir={tmp_path / 'base'}"]
    table = [
        ("slow", 1, 2, 3, "a.log", ["python", "-u", "-c",
                                     "import time; print('first line'); time.sleep(60)"], False),
        ("side", 1, 2, 30, "b.log", ["python", "-c", "print('side by side')"], False),
        ("probe", 2, 2, 60, "b.log", ["python", str(tmp_path / "probe.py")], True),
        ("base_cpu", 3, 30, 240, "b.log", hydra, True),
        ("fails", 4, 2, 60, "b.log", ["python", str(tmp_path / "fail.py")], True),
        ("after", 5, 2, 60, "b.log", ["python", "-c", "print(1)"], False),
    ]
    # run with -c from the repository root, so that the benchmarks package imports
    driver = (
        "import os, sys\n"
        "import dataclasses\nfrom benchmarks.gpu_check import Step\n"
        "from benchmarks.gpu_check_run import run\n"
        "os.environ['RUNNER_PID'] = str(os.getpid())\n"
        f"steps = [Step(n, p, e, lim, 'test', log, tuple(c), warm=w) for n, p, e, lim, log, c, w "
        f"in {table!r}]\n"
        f"steps[-1] = dataclasses.replace(steps[-1], needs={str(tmp_path / 'none.pt')!r})\n"
        f"sys.exit(run(steps, {str(tmp_path / 'out')!r}, 'a test'))\n")
    (tmp_path / "out").mkdir()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-u", "-c", driver], cwd=REPO, env=cli_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert time.monotonic() - started < 300
    rows = re.findall(r"^\| (\w+) \| ([^|]*) \| ([^|]*) \|[^|]*\|[^|]*\| (.*) \|$",
                      (tmp_path / "out/summary.md").read_text(), re.M)
    rows = rows[1:]  # after the header
    by_name = {name: (result, took, measured) for name, result, took, measured in rows}
    assert [name for name, *_ in rows] == ["side", "slow", "probe", "base_cpu", "fails",
                                           "after"]  # in the order they ended
    assert by_name["slow"][0] == "cut at its 3 s limit" and int(by_name["slow"][1][:-2]) < 10
    assert by_name["side"][0] == by_name["probe"][0] == by_name["base_cpu"][0] == "passed"
    assert "num_updates 2" in by_name["base_cpu"][2] and "done training in" in by_name[
        "base_cpu"][2]
    assert by_name["fails"][0] == "failed (exit 1)"
    assert by_name["fails"][2] == "error: no such file: x.txt"
    assert by_name["after"][0].startswith("not run: no ") and "none.pt" in by_name["after"][0]
    assert (tmp_path / "out/a.log").read_text().splitlines()[1] == "first line"
    log = (tmp_path / "out/b.log").read_text()
    assert "side by side" in log and "warm True True" in log and "no such file: x.txt" in log
    assert "[slow] first line" in proc.stdout  # teed to the console too
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.log", "b.log",
                                                                   "summary.md"]


def test_gpu_check_rows_say_what_each_step_measured():
    """The summary's "measured" cell, from lines as each tool prints them."""
    from benchmarks.gpu_check import plan
    from benchmarks.gpu_check_run import measured

    steps = {s.name: s for s in plan("/out", "/work")}
    outputs = {
        "tests": ["tests/test_gpu.py::test_a[cuda-fp16] PASSED", "GPU-CHECK FAILED "
                  "tests/test_gpu.py::test_b[cuda-fp16] (call): AssertionError: [0.1, 0.9]",
                  "==== 1 failed, 10 passed, 381 deselected in 95.20s ===="],
        "quickstart": ["== en->fr test: 300 sentences", "BLEU|nrefs:1|tok:13a = 2.25 20.1/3.5"],
        "hub": ["cpu float32: 16/16 equal to the CPU's, 3.1 sentences/s (beam 5)",
                "NVIDIA H200 float16: 15/16 equal to the CPU's, 17.3 sentences/s (beam 5)"],
        "ranks_bf16": ["cuda bf16: 24 updates, largest loss gap 0.0100 (tolerance 0.05)"],
        "base_fp16": ["epoch 001 | loss 9.1 | wps 1200.5 | ups 1.9 | num_updates 20",
                      "done training in 12.3 seconds"],
        "online": ["direction  BLEU  chrF", "en-fr      0.52  12.1", "fr-en      0.61  13.0"],
        "benchmark": ["", "Targets", "  masked_s2s 0.5 fp16 / denoising: 1.38x", "",
                      "# total 150 s"],
    }
    cells = {name: measured(steps[name], lines, True) for name, lines in outputs.items()}
    assert cells == {
        "tests": "1 failed, 10 passed, 381 deselected in 95.20s; tests/test_gpu.py::test_b["
                 "cuda-fp16] (call): AssertionError: [0.1, 0.9]",
        "quickstart": "BLEU|nrefs:1|tok:13a = 2.25",
        "hub": "NVIDIA H200 float16: 15/16 equal to the CPU's, 17.3 sentences/s (beam 5)",
        "ranks_bf16": "cuda bf16: 24 updates, largest loss gap 0.0100 (tolerance 0.05)",
        "base_fp16": "wps 1200.5 ups 1.9 num_updates 20 done training in 12.3 s",
        "online": "en-fr 0.52 12.1; fr-en 0.61 13.0",
        "benchmark": "masked_s2s 0.5 fp16 / denoising: 1.38x"}
    crashed = ["Traceback (most recent call last):", "RuntimeError: CUDA error: out of memory",
               "  next line"]
    assert measured(steps["hub"], crashed, False) == "RuntimeError: CUDA error: out of memory"


@pytest.mark.slow
def test_gpu_check_report_prints_a_failure_as_it_happens(tmp_path):
    """The tests step's pytest plugin: the failing test's message comes
    before the next test runs, so a step cut later still has it."""
    (tmp_path / "test_two.py").write_text(
        "def test_first():\n    assert 1 + 1 == 3, 'arithmetic-broke-here'\n\n"
        "def test_second():\n    print('second ran')\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider",
                           "-p", "benchmarks.gpu_check_report", "-o", "addopts=",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_two.py")],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    line = re.search(r"^GPU-CHECK FAILED (.*)$", proc.stdout, re.M)
    assert line and line.group(1).startswith("test_two.py::test_first (call): AssertionError: "
                                              "arithmetic-broke-here")
    assert line.start() < proc.stdout.index("second ran")


def test_gpu_busy_share_counts_kernels_not_the_annotation_ranges():
    """The GPU timeline repeats fairseq's record_function ranges ("forward",
    "optimizer"), which span kernels and the idle gaps between them."""
    from benchmarks.step_profile import kernel_seconds

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    def event(name, device, microseconds):
        return SimpleNamespace(name=name, device_type=device,
                               time_range=SimpleNamespace(elapsed_us=lambda: microseconds))

    events = [event("forward", cpu, 900), event("forward", cuda, 800),
              event("aten::mm", cpu, 50), event("nvjet_sm90_gemm", cuda, 300),
              event("Memcpy HtoD (Pageable -> Device)", cuda, 20)]
    assert kernel_seconds(events) == pytest.approx(320e-6)


@pytest.mark.slow
def test_two_ranks_check_matches_update_freq_2_on_the_cpu(tmp_path):
    """benchmarks/two_ranks.py (gpu_check.sh's ranks step) on the CPU: the
    two ranks' loss curve is one rank's with --update-freq 2."""
    lines = synthetic_sentences(50, 300)
    binarize_splits(tmp_path, {"train": lines, "valid": lines[:20]})
    proc = subprocess.run(
        ["python", "-m", "benchmarks.two_ranks", "--data-bin", str(tmp_path), "--langs", "",
         "--device", "cpu", "--updates", "8", "--max-tokens", "300",
         "--work-dir", str(tmp_path / "work")],
        cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"^cpu fp32: 8 updates, largest loss gap 0\.0\d* ", proc.stdout, re.M)
    assert "2 ranks " in proc.stdout


@pytest.mark.slow
def test_cost_estimate_scales_the_measured_rate_by_counted_flops(tmp_path):
    """python -m benchmarks.estimate_cost with the same small model and
    dictionary on both sides: the paper's model then trains pre-training at
    exactly the measured rate, run 6's committed 269,988 tokens/s (15 G
    tokens: 15 GPU-hours), the output says what the rate was measured on, and
    the larger dictionary is what the paper's side is counted with."""
    proc = subprocess.run(
        ["python", "-m", "benchmarks.estimate_cost", "--dims", "quick,quick",
         "--vocab", "3000", "--measured-vocab", "3000", "--workdir", str(tmp_path / "work")],
        cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = re.findall(r"^(base|paper)\s+(masked_s2s|translation)\s+([\d.]+) M\s+([\d.]+)$",
                      proc.stdout, flags=re.M)
    assert len(rows) == 4
    per_token = {(model, workload): float(flops) for model, workload, _, flops in rows}
    assert per_token[("base", "masked_s2s")] == per_token[("paper", "masked_s2s")] > 0
    # translation runs the decoder over every target token, MASS over half
    assert per_token[("paper", "translation")] > per_token[("paper", "masked_s2s")]
    assert re.search(r"pre-training, pretrain\.sh: 15\.00 G tokens \(625,000 updates of 24,000 "
                     r"tokens\) at 269,988 tokens/s -> 15 GPU-hours", proc.stdout), proc.stdout
    assert re.search(r"row 'masked_s2s 0\.5 fp16' of docs/results/gpu-run6/call2-benchmark\.jsonl: "
                     r"one GPU \(NVIDIA H200\), fp16, 65,536 tokens per step", proc.stdout)
    assert "generation, data loading and checkpoints not counted" in proc.stdout
    dictionary = (tmp_path / "work/vocab3000/mono-bin/dict.txt").read_text().splitlines()
    assert len(dictionary) == 3000 - 4  # fairseq adds its 4 special symbols


def test_cost_estimate_names_the_rows_of_a_log_without_the_rate(tmp_path):
    """A --rate-row that the log lacks (or a log that is not there) stops
    with the file and the rows it holds, before any FLOPs are counted."""
    from benchmarks import estimate_cost

    log = tmp_path / "results.jsonl"
    log.write_text('{"name": "denoising (BART) mask 0.5 fp16", "src_tokens_per_s": 1.0}\n')
    with pytest.raises(SystemExit, match=r"--rate-row 'masked_s2s 0\.5 fp16' is not a measured row "
                       r"of .*results\.jsonl \(its rows: 'denoising \(BART\) mask 0\.5 fp16'\)"):
        estimate_cost.main(["--rate-log", str(log)])
    with pytest.raises(SystemExit, match="--rate-log .*missing.jsonl"):
        estimate_cost.main(["--rate-log", str(tmp_path / "missing.jsonl")])


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_two_ranks_starts_each_precisions_command_as_an_executable(precision):
    """torchrun runs its program with Python unless told --no-python: the
    bf16 command, this Python with -c (fairseq-train's --bf16 means a TPU),
    failed on the GPU as `python python -c ...`."""
    from benchmarks import two_ranks
    args = two_ranks.parse_args(["--data-bin", "data", "--precision", precision])
    train = two_ranks.command(args, ["data", "--fp16"])
    cmd = two_ranks.torchrun(train)
    assert cmd[0] == "torchrun" and cmd[-len(train) - 1:] == ["--no-python", *train]
    assert train[0] == ("fairseq-train" if precision == "fp16" else sys.executable)
