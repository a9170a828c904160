#!/usr/bin/env python3
"""The GPU acceptance check: its steps, each with a time limit and the
duration expected of it, and the runner that benchmarks/gpu_check.sh starts.

    python -m benchmarks.gpu_check --out work/gpu-check [--steps default] [--dry-run]

Each step's output goes, line by line as it comes, to the console and to its
log under --out, and the step's row goes to --out/summary.md as it ends:
passed, failed, or cut at its limit (its whole process group is ended and
the next step starts). Steps of one phase run side by side (the GPU tests
beside the quickstart: neither measures a speed); phases run one after
another. A warm step runs in a fork of this process, which imports torch,
fairseq and the plugin while the first phase runs, so it starts without the
10 s a new Python took on run 5's machine (docs/results/gpu.md).

The table's rule, tested: each limit is at least MARGIN times the step's
expected duration (the expected at most 75% of the limit), and the default
steps' limits on the critical path (the longest of each phase), plus this
runner's start and a kill grace per phase, fit BUDGET_S.
"""

import argparse
import os
import re
import shlex
import sys
from dataclasses import dataclass, field

from benchmarks.gpu_check_run import (
    KILL_GRACE_S,
    Summary,
    machine,
    phases,
    require_gpu,
    run,
)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# a device call runs at most 10 minutes and a session's device time is 15,
# the machine's start (a few minutes) included
BUDGET_S = 480
MARGIN = 1.33
# this runner's start before the first step: Python and torch, ~10 s
# expected (a new Python with fairseq took ~10 s on run 5's machine), 15 s allowed
START_EXPECTED_S, START_S = 10, 15

# name: (phase, expected s, limit s, the basis of the expected duration).
# Durations are run 5's (docs/results/gpu.md), on an H200 machine where
# every new Python with fairseq took about 10 s to start.
TIMES = {
    "tests": (1, 102, 136,
              "run 5: pytest's start and the first 3 of the 11 GPU cases in 26 s; the 3 "
              "other in-process cases of test_gpu.py ~5 s each, the 4 of test_gpu_kernels.py "
              "~3 s each, the resume case's 3 fairseq-train runs ~13 s each (10 s start), "
              "collecting every test file ~5 s, sharing the GPU with the quickstart ~5 s"),
    "quickstart": (1, 100, 135,
                   "run 5 (300 + 300 updates): 85 s to the start of decoding; 200 + 200 "
                   "updates ~10 s less; decoding and scoring the 300 test sentences ~18 s "
                   "(fairseq-generate's 10 s start, sacrebleu); sharing the GPU ~5 s"),
    "hub": (2, 9, 12,
            "run 5: 17 s as a Python of its own (its CUDA context included), less its "
            "~10 s start; ~2 s to spare"),
    "base_fp16": (3, 16, 22,
                  "run 5 (40 updates): 23.6 s of training with a 4.2 s checkpoint; 20 "
                  "updates without one ~10 s, the data and the model ~4 s, ~2 s more for "
                  "validation; no 10 s start (warm)"),
    "base_bf16": (4, 16, 22, "as base_fp16; run 5's bf16 run kept pace with its fp16 run"),
    "ranks_fp16": (5, 40, 54,
                   "run 5 (40 updates): the fp16 half ended inside the step's 60 s; now 24 "
                   "updates: one rank's fairseq-train (10 s start, ~3 s of training), then "
                   "torchrun (~5 s) and its two ranks (10 s start side by side, gloo, ~5 s), "
                   "~5 s to spare"),
    "ranks_bf16": (6, 40, 54, "as ranks_fp16"),
    "online": (7, 97, 130,
               "run 5 (150 updates, 2 validations): 74.7 s of training; 100 updates and 1 "
               "validation ~50 s; fairseq-train's start, data, checkpoints ~13 s; decoding "
               "and scoring the test set both ways ~30 s (2 fairseq-generate starts of 10 "
               "s, 2 sacrebleu); ~4 s of shell"),
    "benchmark": (8, 150, 200,
                  "run 5: its data and the base table's two rows were done within the step's "
                  "155 s (it was cut in the table after)"),
    "speed": (9, 345, 460,
              "not yet run on a GPU: the speed table's rows, each a Python of its own (~10 s "
              "start, ~5 s data), >= 10 warm-up and 100 timed updates at ~0.15 s (run 6's base "
              "step), ~10 s counting FLOPs where counted, ~30-60 s more to compile; rows that "
              "would start past the benchmark's --budget-s 380 are reported as not run"),
}
# not in the default set: with them the limits pass BUDGET_S; each fits a call alone
OPTIONAL = ("benchmark", "speed")
# the speed table's profiled rows: the step before and after the fast paths
SPEED_PROFILES = ("profile-masked_s2s-base-65536-fp16-mass-fp16.txt",
                  "profile-masked_s2s-base-65536-fp16-mass-fast-fp16.txt")

# the quickstart's model, a little larger batch; the online step reuses it
MODEL_ARGS = ("--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 128 "
              "--decoder-embed-dim 128 --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 "
              "--encoder-attention-heads 4 --decoder-attention-heads 4 --num-workers 0")
# the base model at 65,536 tokens per step: masked_s2s against denoising
BENCH_ARGS = "--tables base --base-size 65536 --base-precisions fp16"


@dataclass(frozen=True)
class Step:
    """One step: ``command`` runs from the repository root with ``env`` added;
    ``warm``: in a fork of the runner; ``needs``: a file an earlier step makes;
    ``fresh``: a work folder emptied first (a recipe would resume from it)."""
    name: str
    phase: int
    expected_s: int
    limit_s: int
    basis: str
    log: str
    command: tuple
    warm: bool = False
    env: dict = field(default_factory=dict)
    needs: str = ""
    fresh: str = ""
    optional: bool = False


def step(name, log, command, **options):
    phase, expected, limit, basis = TIMES[name]
    return Step(name, phase, expected, limit, basis, log, tuple(command),
                optional=name in OPTIONAL, **options)


def plan(out, work, model_args=None, bench_args=None):
    """Every step, in order, with the commands for --out ``out`` and the work
    folder ``work`` (checkpoints and data, kept out of ``out``)."""
    model_args = model_args or MODEL_ARGS
    quick = os.path.join(work, "quickstart")
    data_bin = os.path.join(quick, "data-bin")
    pretrained = os.path.join(quick, "checkpoints/pretrain/checkpoint_best.pt")
    hydra = ["fairseq-hydra-train", "--config-dir", os.path.join(REPO, "mass_plugin/config"),
             "--config-name", "pretrain_base", f"common.user_dir={REPO}/mass_plugin",
             f"task.data={data_bin}", "task.langs='en,fr'", "optimization.max_update=20",
             "common.log_interval=10", "dataset.num_workers=2", "checkpoint.no_save=true"]
    ranks = ["python", "-u", "-m", "benchmarks.two_ranks", "--data-bin", data_bin,
             "--device", "cuda", "--updates", "24", "--precision"]
    return [
        # one pytest for every GPU case of every test file; a failure's
        # message is printed as it happens (gpu_check_report.py)
        step("tests", "tests.log", ["python", "-u", "-m", "pytest", "-m", "gpu", "-n", "0",
                                    "-v", "-rA", "--tb=short", "-p", "no:cacheprovider",
                                    "-p", "benchmarks.gpu_check_report",
                                    "--continue-on-collection-errors", "tests"]),
        step("quickstart", "quickstart.log", ["bash", "examples/quickstart.sh"], fresh=quick,
             env={"NUM_GPUS": "1", "WORK_DIR": quick, "PRETRAIN_UPDATES": "200",
                  "FINETUNE_UPDATES": "200", "MODEL_ARGS": model_args}),
        step("hub", "steps.log", ["python", "-m", "benchmarks.hub_devices", "--work-dir", quick,
                                  "--output", os.path.join(work, "hub.json")], warm=True,
             needs=os.path.join(quick, "checkpoints/ft-en-fr/checkpoint_best.pt")),
        step("base_fp16", "steps.log", hydra + [f"checkpoint.save_dir={work}/base-fp16"],
             warm=True, needs=os.path.join(data_bin, "dict.txt"), fresh=f"{work}/base-fp16"),
        step("base_bf16", "steps.log", hydra + [f"checkpoint.save_dir={work}/base-bf16",
                                                "common.fp16=false", "common.bf16=true"],
             warm=True, needs=os.path.join(data_bin, "dict.txt"), fresh=f"{work}/base-bf16"),
        step("ranks_fp16", "steps.log", ranks + ["fp16", "--work-dir", f"{work}/ranks-fp16"],
             needs=os.path.join(data_bin, "dict.txt"), fresh=f"{work}/ranks-fp16"),
        step("ranks_bf16", "steps.log", ranks + ["bf16", "--work-dir", f"{work}/ranks-bf16"],
             needs=os.path.join(data_bin, "dict.txt"), fresh=f"{work}/ranks-bf16"),
        step("online", "online.log", ["bash", "projects/unsupervised/online_bt.sh"],
             needs=pretrained, fresh=f"{work}/online",
             env={"NUM_GPUS": "1", "DATA_BIN": data_bin, "PRETRAINED": pretrained,
                  "REFERENCE_PREFIX": "examples/data/test", "WORK_DIR": f"{work}/online",
                  "MODEL_ARGS": model_args, "MASK_RATIO": "1.0", "MAX_UPDATE": "100",
                  "VALIDATE_EVERY": "100", "MAX_TOKENS": "2048", "LR": "0.0005",
                  "WARMUP": "100", "BEAM": "1", "LOG_INTERVAL": "50"}),
        # the base model's steady state (benchmark.py alone measures more)
        step("benchmark", "benchmark.log",
             ["python", "-u", "-m", "benchmarks.benchmark", "--device", "cuda", "--workdir",
              f"{work}/benchmark", "--output", os.path.join(out, "benchmark.jsonl"),
              *shlex.split(bench_args or BENCH_ARGS)]),
        # the fast paths against the step as shipped and against denoising, on
        # batches padded as at scale; the profiles of the step before and after
        step("speed", "speed.log",
             ["python", "-u", "-m", "benchmarks.benchmark", "--device", "cuda", "--tables",
              "speed", "--base-size", "65536", "--warmup-min", "10", "--steady-batches", "16",
              "--profile-steps", "3", "--budget-s", "380", "--workdir", f"{work}/speed",
              "--profile-dir", out, "--output", os.path.join(out, "speed.jsonl")]),
    ]


def select(steps, names):
    """The steps named in ``names`` (space- or comma-separated; "default":
    all but the optional ones, "all": every one), in the table's order."""
    wanted = set(re.split(r"[\s,]+", names.strip())) - {""}
    known = {s.name for s in steps}
    unknown = wanted - known - {"default", "all"}
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(s.name for s in steps)}, default or all")
    return [s for s in steps if s.name in wanted or "all" in wanted
            or ("default" in wanted and not s.optional)]


def worst_case_s(steps):
    """The longest the run can take: each phase at its longest limit."""
    return START_S + sum(max(s.limit_s for s in group) + KILL_GRACE_S
                         for group in phases(steps))


def expected_s(steps):
    return START_EXPECTED_S + sum(max(s.expected_s for s in group) for group in phases(steps))


def output_files(steps):
    names = {s.name for s in steps}
    files = ["summary.md"] + sorted({s.log for s in steps})
    files += ["benchmark.jsonl"] if "benchmark" in names else []
    return files + (["speed.jsonl", *SPEED_PROFILES] if "speed" in names else [])


def problems(steps):
    """What breaks the table's rules for ``steps``: a limit under MARGIN times
    the expected duration, limits past BUDGET_S, a log written by two steps at
    once, a warm step beside another, more than 8 files in --out."""
    found = [] if steps else ["no step selected"]
    found += [f"{s.name}: limit {s.limit_s} s is under {MARGIN}x its expected {s.expected_s} s"
             for s in steps if s.limit_s < MARGIN * s.expected_s]
    if START_S < MARGIN * START_EXPECTED_S:
        found.append(f"the runner's start: {START_S} s allowed, under {MARGIN}x "
                     f"{START_EXPECTED_S} s")
    if worst_case_s(steps) > BUDGET_S:
        found.append(f"the limits on the critical path, with the start and kill graces, "
                     f"come to {worst_case_s(steps)} s, past the {BUDGET_S} s budget")
    for group in phases(steps):
        if len({s.log for s in group}) < len(group):
            found.append(f"phase {group[0].phase}: two steps side by side write one log")
        if len(group) > 1 and any(s.warm for s in group):
            found.append(f"phase {group[0].phase}: a warm step must run alone")
    if len(output_files(steps)) > 8:
        found.append(f"{len(output_files(steps))} files in the output folder, more than 8")
    return found


def quote(word):
    """``word`` as a shell would need it; "task.langs='en,fr'" stays readable."""
    if "'" in word and not re.search(r'["$`\\]', word):
        return f'"{word}"'
    return shlex.quote(word)


def describe(s):
    """NAME (limit L s, expected E s, phase P[, warm]): [ENV=...] COMMAND"""
    kind = ", warm" if s.warm else ""
    env = "".join(f"{k}={quote(v)} " for k, v in s.env.items())
    return (f"{s.name} (limit {s.limit_s} s, expected {s.expected_s} s, phase {s.phase}{kind}): "
            f"{env}{' '.join(map(quote, s.command))}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="work/gpu-check",
                        help="summary.md and the logs (at most 8 files; default work/gpu-check)")
    parser.add_argument("--work-dir", default="",
                        help="checkpoints and data (default: OUT.work, beside --out)")
    parser.add_argument("--steps", default="default",
                        help="step names, space- or comma-separated; default: every step but "
                        f"{', '.join(OPTIONAL)}; all: every step")
    parser.add_argument("--model-args", default="", help="the quickstart's and the online "
                        "step's model (default: 2+2 layers, 128 dimensions)")
    parser.add_argument("--bench-args", default="", help=f"the benchmark's options "
                        f"(default: {BENCH_ARGS})")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the steps, write summary.md with 'not run (dry run)'")
    args = parser.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.work_dir = os.path.abspath(args.work_dir or os.path.normpath(args.out) + ".work")
    return args


def main(argv=None):
    args = parse_args(argv)
    table = plan(args.out, args.work_dir, args.model_args, args.bench_args)
    try:
        steps = select(table, args.steps)
    except ValueError as e:
        sys.exit(f"error: --steps / STEPS: {e}")
    if not steps:
        sys.exit("error: --steps / STEPS names no step (try default)")
    if not args.dry_run:
        require_gpu()
    os.makedirs(args.out, exist_ok=True)
    if args.dry_run:
        return dry_run(steps, args.out)
    for line in problems(steps):
        print(f"warning: {line}")
    return run(steps, args.out, machine())


def dry_run(steps, out):
    summary = Summary(os.path.join(out, "summary.md"), "dry run: no step was run")
    for s in steps:
        print(describe(s))
        print(f"    expected: {s.basis}")
        summary.row(s, "not run (dry run)")
    print(f"\n{len(steps)} steps; expected about {expected_s(steps)} s, at most "
          f"{worst_case_s(steps)} s with every step at its limit (budget {BUDGET_S} s)")
    print(f"output files: {', '.join(output_files(steps))}")
    for line in problems(steps):
        print(f"warning: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
