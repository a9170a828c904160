#!/usr/bin/env python3
"""MASS pre-training cost side by side with fairseq's own tasks, in one run.

    python -m benchmarks.benchmark                  # CPU: 15 rows, 2 + 12 updates each
    python -m benchmarks.benchmark --quick          # smoke run, a few minutes
    python -m benchmarks.benchmark --device cuda    # GPU: steady state, fp16 and bf16
    python -m benchmarks.benchmark --device cuda --tables speed   # the fast paths

(from the repository root).
On the same batches of the same sentences, with the same model dimensions,
each configuration trains with fairseq's own Trainer, in a fresh process (so
that peak memory is its own).

On a CPU, a fixed number of updates after 2 warm-up updates:

- fairseq ``denoising`` (BART span masking, ``--mask`` at the same ratio),
- fairseq ``translation`` on sentence-copy pairs (plain seq2seq cost),
- ``masked_s2s`` (ours) at ``--mask-ratio`` 0.5, then 0.15, 0.3, 0.7.

It prints sentences/s, source tokens/s (tokens of the original sentences),
peak memory (CUDA: allocated; CPU: peak RSS of the timed updates above the
process's RSS before loading data) and ratios to the first row; the share
of a step spent masking and collating; decoding speed of ``transformer_mass``
vs fairseq's ``transformer``; and cost against sentence length. Timings
exclude data loading (batches are prepared before the clock starts); the
data cost is measured on its own.

On a GPU (``--device cuda``, or ``--steady`` anywhere) every configuration is
measured in steady state: warm-up updates until the step time settles (at
least ``--warmup-min``), then ``--updates`` timed updates (at least 100 on
CUDA) cycling through the same batches in the same order. Tables: fairseq's
``denoising`` against ``masked_s2s`` at 0.5 for each ``--sizes`` tokens per
GPU, with the 6+6-layer 512-dimension model; then the ``pretrain_base``
preset's model (6+6 layers, 768 dimensions, GELU) in fp16 and bf16 beside
``denoising`` at its dimensions. Besides speed and peak memory: model
TFLOP/s and FLOP utilisation (FLOPs counted from the model's matrix products
by torch's FlopCounterMode, against the GPU's dense fp16/bf16 peak), and,
for the profiled rows, the share of the step the GPU was busy (torch
profiler; the top operators go to ``--workdir``/profile-*.txt).

The sentences are the first 10,000 non-empty lines of each of ``mono.en``
and ``mono.fr`` in ``--data`` (1,000 of each with ``--quick``), or all of
them if a file is shorter: the bundled ``examples/data`` holds 4,000 lines
of each, so the default run uses 8,000 sentences. The batches are those
fairseq makes of a large corpus with their length distribution
(``--batching corpus``, ``--corpus-sentences``; see bench_batches.py), so
that they are padded as at scale; each row reports the share of padding
among its source and target tokens, and source tokens/s count the real
tokens only. The ``speed`` table (``--tables speed``) measures the fast paths
of ``transformer_mass`` (``--attention sdpa``, ``--compile-layers``,
``--optimizer torch_adam``) on the base model against fairseq's
``denoising`` as shipped and on the same model with the same options.
"""

import argparse
import json
import os
import sys
import time

from benchmarks.bench_batches import BATCHINGS
from benchmarks.bench_configs import model_args
from benchmarks.bench_data import prepare, run
from benchmarks.bench_tables import cpu_tables, steady_tables

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(REPO, "examples", "data"),
                        help="directory with mono.en and mono.fr (raw text); the first 10,000 "
                        "non-empty lines of each are used (1,000 with --quick)")
    parser.add_argument("--workdir", default=os.path.join(REPO, "work", "benchmark"))
    parser.add_argument("--quick", action="store_true",
                        help="tiny model, few updates: checks the script, not the numbers")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"],
                        help="CPU: fp32 (fairseq's fp16/bf16 need CUDA); CUDA: fp16 (the "
                        "steady-state base table measures both fp16 and bf16)")
    parser.add_argument("--fp16", action="store_true", help="same as --precision fp16")
    parser.add_argument("--updates", type=int, help="timed updates per configuration "
                        "(default 12 on a CPU, 3 with --quick, 100 in steady state)")
    parser.add_argument("--max-tokens", type=int, default=4096,
                        help="tokens per step (CPU tables)")
    parser.add_argument("--steady", action="store_true",
                        help="the steady-state tables (always on with --device cuda)")
    parser.add_argument("--sizes", help="steady state: tokens per GPU and step, comma-"
                        "separated (default 65536,32768,16384; 1024,512 with --quick); the base "
                        "table uses the largest")
    parser.add_argument("--warmup-min", type=int, default=20,
                        help="steady state: warm-up updates at least (default 20)")
    parser.add_argument("--warmup-max", type=int, default=60,
                        help="steady state: warm-up updates at most, settled or not")
    parser.add_argument("--base-size", type=int,
                        help="steady state: tokens per GPU of the base table (default: the "
                        "largest of --sizes)")
    parser.add_argument("--base-precisions", default=None,
                        help="steady state: precisions of the base table's masked_s2s rows "
                        "(default fp16,bf16 on CUDA)")
    parser.add_argument("--cudnn-row", action="store_true",
                        help="steady state on CUDA: the base table also measures masked_s2s "
                        "with torch's cuDNN attention, which the plugin turns off")
    parser.add_argument("--tables", default="base,sizes",
                        help="steady state: which tables, in this order, of 'base', "
                        "'sizes' and 'speed' (default base,sizes)")
    parser.add_argument("--batching", choices=BATCHINGS, default="corpus",
                        help="'corpus' (the default): batches as fairseq makes them of a "
                        "corpus of --corpus-sentences sentences with the data's lengths; "
                        "'sample': the data's own sentences batched (more padding)")
    parser.add_argument("--corpus-sentences", type=int, default=2_000_000,
                        help="--batching corpus: the sentences of the corpus batched")
    parser.add_argument("--steady-batches", type=int, default=32,
                        help="steady state, --batching corpus: the batches (per update) the "
                        "timed updates cycle through")
    parser.add_argument("--peak-tflops", type=float,
                        help="the GPU's dense fp16/bf16 peak in TFLOP/s, for the FLOP "
                        "utilisation (default: from the device name, for known GPUs)")
    parser.add_argument("--profile-steps", type=int, default=5,
                        help="steady state: steps under torch's profiler for the profiled "
                        "rows (0: none)")
    parser.add_argument("--mass-args", default="",
                        help="more fairseq-train options for every masked_s2s row, e.g. "
                        "'--loss-chunk-tokens 8192': to measure an option against a run "
                        "without it")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=OPTIONS",
                        help="steady state: one more row in the base table, masked_s2s in the "
                        "first --base-precisions with these fairseq-train options, e.g. "
                        "'fused=--cross-attention fused'; repeat for more rows. Measured in "
                        "the same run as the row without them, so the ratio is side by side")
    parser.add_argument("--budget-s", type=float,
                        help="speed table: start no row once this many seconds have passed "
                        "since the start, less the longest row so far (the rows left are "
                        "reported as not run)")
    parser.add_argument("--profile-dir",
                        help="where the profiled rows' operator tables go (default --workdir)")
    parser.add_argument("--output", help="also write the results as JSON lines here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one measurement
    return resolve_defaults(parser, parser.parse_args(argv))


def resolve_defaults(parser, args):
    """The defaults that depend on other options; errors through ``parser``."""
    if args.fp16:
        args.precision = "fp16"
    if args.precision is None:
        args.precision = "fp16" if args.device == "cuda" else "fp32"
    if args.precision != "fp32" and args.device != "cuda":
        parser.error(f"--precision {args.precision} needs --device cuda (fairseq's "
                     "fp16 and bf16 paths assume CUDA)")
    args.steady = args.steady or args.device == "cuda"
    if args.updates is None:
        args.updates = 100 if args.steady and not args.quick else (3 if args.quick else 12)
    if args.steady and args.device == "cuda" and args.updates < 100 and not args.quick:
        parser.error("--updates: steady state on a GPU times at least 100 updates")
    sizes = args.sizes or ("1024,512" if args.quick else "65536,32768,16384")
    try:
        args.sizes = [int(size) for size in sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: expected comma-separated token counts, got {sizes!r}")
    args.base_size = args.base_size or max(args.sizes)
    default = "fp16,bf16" if args.device == "cuda" else args.precision
    args.base_precisions = (args.base_precisions or default).split(",")
    variants = []
    for variant in args.variant:
        name, sep, options = variant.partition("=")
        if not sep or not name.strip() or not options.strip():
            parser.error(f"--variant {variant!r}: expected NAME=OPTIONS, e.g. "
                         "'fused=--cross-attention fused'")
        variants.append((name.strip(), options.split()))
    args.variant = variants
    args.tables = [t for t in args.tables.split(",") if t]
    unknown = set(args.tables) - {"sizes", "base", "speed"}
    if unknown:
        parser.error(f"--tables: unknown {', '.join(sorted(unknown))} (choose sizes, base, "
                     "speed)")
    args.workdir = os.path.abspath(args.workdir)
    if args.profile_dir:
        args.profile_dir = os.path.abspath(args.profile_dir)
    return args


def measure(spec, args):
    """Run bench_worker.worker for ``spec`` in a fresh Python process."""
    cmd = [sys.executable, "-m", "benchmarks.benchmark", "--worker", json.dumps(spec),
           "--device", args.device, "--updates", str(args.updates),
           "--warmup-min", str(args.warmup_min), "--warmup-max", str(args.warmup_max),
           "--profile-steps", str(args.profile_steps), "--workdir", args.workdir,
           "--steady-batches", str(args.steady_batches),
           "--profile-dir", args.profile_dir or args.workdir]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else []
    cmd += ["--precision", "fp16"] if args.device == "cuda" else []
    out = run(cmd, env=spec.get("env"), cwd=REPO)
    result = json.loads(out.strip().splitlines()[-1])
    sys.stderr.write(f"  {result['name']}: {result['sentences_per_s']:.1f} sentences/s\n")
    return result


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        from benchmarks.bench_worker import worker
        print(json.dumps(worker(json.loads(args.worker), args)))
        return
    started = args.started = time.perf_counter()
    work = prepare(args)
    if args.output:
        open(args.output, "w").close()

    def spec(name, argv, data=work, **extra):
        extra.setdefault("max_tokens", args.max_tokens)
        extra.setdefault("precision", args.precision)
        extra.setdefault("batching", args.batching)
        extra.setdefault("corpus_sentences", args.corpus_sentences)
        if not extra.get("steady"):
            argv = argv + model_args(args)
        if args.mass_args and "masked_s2s" in argv:
            argv = argv + args.mass_args.split()
        result = measure(dict(name=name, argv=argv, sentences=f"{data}/mono-bin/train",
                              **extra), args)
        if args.output:  # each row as it is measured: a run cut short keeps them
            with open(args.output, "a") as f:
                f.write(json.dumps(result) + "\n")
        return result

    mode = (f"steady state: >= {args.warmup_min} warm-up updates until settled, then "
            f"{args.updates} timed" if args.steady else
            f"{args.updates} timed updates, --max-tokens {args.max_tokens}")
    print(f"# device {args.device} {args.precision}, {mode}, "
          f"{'quick' if args.quick else 'full'} mode, batches: {args.batching}"
          + (f" ({args.corpus_sentences:,} sentences)" if args.batching == "corpus" else "")
          + (f"; masked_s2s rows with {args.mass_args}" if args.mass_args else ""))
    checks = steady_tables(args, spec, work) if args.steady else cpu_tables(args, spec, work)
    if checks:
        print("\nTargets")
        for line in checks:
            print(f"  {line}")
    print(f"\n# total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
