#!/usr/bin/env python3
"""MASS pre-training cost side by side with fairseq's own tasks, in one run.

    python benchmarks/benchmark.py                  # CPU: 15 rows, 2 + 12 updates each
    python benchmarks/benchmark.py --updates 4      # 21 minutes on 2 idle CPU cores
    python benchmarks/benchmark.py --quick          # smoke run, about 2 minutes
    python benchmarks/benchmark.py --device cuda    # GPU: steady state, fp16 and bf16

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
data cost is measured on its own. ``--quick`` took 105 s on 2 idle CPU
cores (8.5 minutes while other jobs shared the cores).

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
of each, so the default run uses 8,000 sentences.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

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
                        help="steady state: which tables, in this order, of 'base' and "
                        "'sizes' (default base,sizes)")
    parser.add_argument("--peak-tflops", type=float,
                        help="the GPU's dense fp16/bf16 peak in TFLOP/s, for the FLOP "
                        "utilisation (default: from the device name, for known GPUs)")
    parser.add_argument("--profile-steps", type=int, default=5,
                        help="steady state: steps under torch's profiler for the profiled "
                        "rows (0: none)")
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
    args.tables = [t for t in args.tables.split(",") if t]
    unknown = set(args.tables) - {"sizes", "base"}
    if unknown:
        parser.error(f"--tables: unknown {', '.join(sorted(unknown))} (choose sizes, base)")
    return args


# ---------------------------------------------------------------- data

def run(cmd, env=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def fairseq_bin(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def prepare(args):
    """Subwords and binarized data for every configuration, with one dictionary."""
    import sentencepiece as spm

    work = args.workdir
    os.makedirs(work, exist_ok=True)
    if os.path.exists(os.path.join(work, "copy-bin", "dict.src.txt")):
        return work
    n = 2000 if args.quick else 20000
    lines = []
    for lang in ("en", "fr"):
        with open(os.path.join(args.data, f"mono.{lang}"), encoding="utf-8") as f:
            lines += [line.strip() for line in f if line.strip()][: n // 2]
    random.Random(1).shuffle(lines)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=os.path.join(work, "spm"),
        vocab_size=2000 if args.quick else 8000, character_coverage=1.0,
        bos_id=-1, eos_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(work, "spm.model"))
    pieces = [" ".join(p) for p in sp.encode(lines, out_type=str)]
    with open(os.path.join(work, "train.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    for side in ("src", "tgt"):  # sentence-copy pairs
        with open(os.path.join(work, f"copy.{side}"), "w", encoding="utf-8") as f:
            f.write("\n".join(pieces) + "\n")
    preprocess = fairseq_bin("fairseq-preprocess")
    run([preprocess, "--only-source", "--trainpref", f"{work}/train.txt",
         "--destdir", f"{work}/mono-bin", "--workers", "2"])
    run([preprocess, "-s", "src", "-t", "tgt", "--trainpref", f"{work}/copy",
         "--srcdict", f"{work}/mono-bin/dict.txt", "--tgtdict", f"{work}/mono-bin/dict.txt",
         "--destdir", f"{work}/copy-bin", "--workers", "2"])
    return work


def prepare_fixed_length(args, length):
    """Sentences of exactly ``length`` tokens (with </s>), for the length table."""
    work = os.path.join(args.workdir, f"len{length}")
    if os.path.exists(os.path.join(work, "mono-bin", "dict.txt")):
        return work
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(args.workdir, "train.txt"), encoding="utf-8") as f:
        stream = f.read().split()
    n = 64 if args.quick else 400
    rng = random.Random(length)
    with open(os.path.join(work, "train.txt"), "w", encoding="utf-8") as f:
        for _ in range(n):
            start = rng.randrange(len(stream) - length)
            f.write(" ".join(stream[start:start + length - 1]) + "\n")
    run([fairseq_bin("fairseq-preprocess"), "--only-source", "--trainpref",
         f"{work}/train.txt", "--srcdict", f"{args.workdir}/mono-bin/dict.txt",
         "--destdir", f"{work}/mono-bin", "--workers", "1"])
    return work


# ---------------------------------------------------------------- configurations

# model dimensions: the CPU tables' model, the pretrain_base preset's
# (transformer_mass_base: GELU, dropout 0.1 everywhere) and --quick's
DIMS = {
    "d512": dict(layers=6, dim=512, ffn=2048, heads=8, activation="relu", dropouts=(0.1, 0, 0)),
    "base": dict(layers=6, dim=768, ffn=3072, heads=12, activation="gelu",
                 dropouts=(0.1, 0.1, 0.1)),
    "quick": dict(layers=2, dim=64, ffn=256, heads=4, activation="relu", dropouts=(0.1, 0, 0)),
}


def describe(args, dims):
    dims = DIMS["quick" if args.quick else dims]
    return f"{dims['layers']}+{dims['layers']} layers, {dims['dim']} dims"


def model_args(args, dims="d512"):
    dims = DIMS["quick" if args.quick else dims]
    out = []
    for side in ("encoder", "decoder"):
        out += [f"--{side}-layers", dims["layers"], f"--{side}-embed-dim", dims["dim"],
                f"--{side}-ffn-embed-dim", dims["ffn"], f"--{side}-attention-heads",
                dims["heads"], f"--{side}-learned-pos"]
    dropout, attention, activation = dims["dropouts"]
    return out + ["--share-all-embeddings", "--dropout", dropout, "--attention-dropout",
                  attention, "--activation-dropout", activation,
                  "--activation-fn", dims["activation"],
                  "--max-source-positions", "1024", "--max-target-positions", "1024"]


def denoising(work, ratio):
    return ["--task", "denoising", f"{work}/mono-bin", "--arch", "bart_base",
            "--criterion", "cross_entropy", "--mask", ratio, "--mask-random", "0.1",
            "--mask-length", "span-poisson", "--poisson-lambda", "3.5",
            "--replace-length", "1", "--permute-sentences", "0", "--rotate", "0",
            "--insert", "0", "--sample-break-mode", "eos", "--tokens-per-sample", "1024"]


def masked_s2s(work, ratio):
    return ["--task", "masked_s2s", f"{work}/mono-bin", "--arch", "transformer_mass",
            "--criterion", "masked_s2s_loss", "--mask-ratio", ratio]


def copy_translation(work, arch="transformer"):
    return ["--task", "translation", f"{work}/copy-bin", "-s", "src", "-t", "tgt",
            "--arch", arch, "--criterion", "cross_entropy"]


def measure(spec, args):
    """Run bench_worker.worker for ``spec`` in a fresh Python process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec),
           "--device", args.device, "--updates", str(args.updates),
           "--warmup-min", str(args.warmup_min), "--warmup-max", str(args.warmup_max),
           "--profile-steps", str(args.profile_steps), "--workdir", args.workdir]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else []
    cmd += ["--precision", "fp16"] if args.device == "cuda" else []
    out = run(cmd, env=spec.get("env"))
    result = json.loads(out.strip().splitlines()[-1])
    sys.stderr.write(f"  {result['name']}: {result['sentences_per_s']:.1f} sentences/s\n")
    return result


# ---------------------------------------------------------------- tables

def _cell(value, fmt):
    return "-" if value is None else fmt.format(value)


def table(title, rows, columns, ratios=None):
    """Print ``rows`` (dicts) with ``columns`` [(key, header, format)], plus
    the ratio to the first row of each column in ``ratios`` (default: all)."""
    print(f"\n{title}")
    if len({row.get("batches") for row in rows}) > 1:  # a bug, not a measurement
        raise RuntimeError(f"{title}: the rows were not measured on the same batches")
    ratio_columns = [c for c in columns if ratios is None or c[0] in ratios]
    header = ["configuration"] + [h for _, h, _ in columns]
    header += [f"{h} x" for _, h, _ in ratio_columns]
    lines = [header]
    for row in rows:
        cells = [row["name"]] + [_cell(row.get(k), fmt) for k, _, fmt in columns]
        cells += [f"{row[k] / rows[0][k]:.2f}" for k, _, _ in ratio_columns]
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)))


SPEED = [("sentences_per_s", "sent/s", "{:.1f}"), ("src_tokens_per_s", "src tok/s", "{:.0f}"),
         ("peak_mb", "peak MB", "{:.0f}")]
STEADY = SPEED + [("step_ms", "step ms", "{:.1f}"), ("tflops", "TFLOP/s", "{:.3g}"),
                  ("mfu_pct", "MFU %", "{:.1f}"), ("gpu_busy_pct", "GPU busy %", "{:.0f}"),
                  ("warmup_steps", "warm-up", "{}")]


def cpu_tables(args, spec, work):
    """The CPU tables: fixed updates after two warm-up updates."""
    main_rows = [spec("denoising (BART) mask 0.5", denoising(work, 0.5)),
                 spec("translation copy", copy_translation(work), decode=True),
                 spec("masked_s2s 0.5", masked_s2s(work, 0.5))]
    table("Training cost, same model and batch size", main_rows, SPEED)
    mass_copy = spec("translation copy, transformer_mass",
                     copy_translation(work, "transformer_mass"), decode=True)
    ratios = [0.15] if args.quick else [0.15, 0.3, 0.7]
    ratio_rows = [main_rows[2]] + [spec(f"masked_s2s {r}", masked_s2s(work, r)) for r in ratios]
    table("masked_s2s by mask ratio", ratio_rows, SPEED)

    print("\nData cost (masking + collation) per batch vs one training step")
    for row in main_rows:
        print(f"  {row['name']}: data {1000 * row['data_s']:.1f} ms, step "
              f"{1000 * row['step_s']:.1f} ms, {100 * row['data_s'] / row['step_s']:.1f}%")

    table("Decoding (beam 5, 32 output tokens), transformer_mass vs transformer",
          [dict(name="transformer", decode=main_rows[1]["decode_sentences_per_s"]),
           dict(name="transformer_mass", decode=mass_copy["decode_sentences_per_s"])],
          [("decode", "sent/s", "{:.1f}")])

    lengths = [64] if args.quick else [64, 128, 256, 512]
    for length in lengths:
        fixed = prepare_fixed_length(args, length)
        rows = [spec(f"denoising L={length}", denoising(fixed, 0.5), data=fixed),
                spec(f"masked_s2s L={length}", masked_s2s(fixed, 0.5), data=fixed)]
        table(f"Sentences of {length} tokens", rows, SPEED)


def steady_tables(args, spec, work):
    """The steady-state tables; returns the target checks as text lines."""
    def steady(name, argv, size, dims="d512", precision=None, profile=False, env=None):
        precision = precision or args.precision
        slug = f"{name.split()[0]}-{dims}-{size}-{precision}" + ("-cudnn" if env else "")
        row = spec(name, argv + model_args(args, dims), max_tokens=size, steady=True,
                   precision=precision, profile=profile, slug=slug, env=env or {})
        row["step_ms"] = 1000 * row["step_s"]
        row["mfu_pct"] = None if row.get("mfu") is None else 100 * row["mfu"]
        row["gpu_busy_pct"] = None if row.get("gpu_busy") is None else 100 * row["gpu_busy"]
        return row

    checks = []
    for name in args.tables:
        checks += (base_table if name == "base" else sizes_table)(args, steady, work)
    return checks


def sizes_table(args, steady, work):
    """denoising against masked_s2s at each --sizes, the 512-dimension model."""
    checks = []
    for size in args.sizes:
        rows = [steady("denoising (BART) mask 0.5", denoising(work, 0.5), size),
                steady("masked_s2s 0.5", masked_s2s(work, 0.5), size,
                       profile=size == max(args.sizes))]
        table(f"Steady state, {describe(args, 'd512')}, {args.precision}, --max-tokens {size}",
              rows, STEADY, ratios=["sentences_per_s", "src_tokens_per_s", "peak_mb"])
        ratio = rows[1]["sentences_per_s"] / rows[0]["sentences_per_s"]
        checks.append(f"masked_s2s 0.5 / denoising sentences/s at {size} tokens: "
                      f"{ratio:.2f}x (target >= 1.3x)")
    return checks


def base_table(args, steady, work):
    """The pretrain_base model: masked_s2s in each --base-precisions (with
    --cudnn-row also with torch's cuDNN attention, which the plugin turns
    off), beside denoising."""
    size = args.base_size
    first = args.base_precisions[0]
    rows = [steady(f"masked_s2s 0.5 {p}", masked_s2s(work, 0.5), size, "base", p,
                   profile=True) for p in args.base_precisions]
    if args.device == "cuda" and args.cudnn_row:
        rows.append(steady(f"masked_s2s 0.5 {first}, cuDNN attention", masked_s2s(work, 0.5),
                           size, "base", first, profile=True,
                           env={"MASS_PLUGIN_CUDNN_ATTENTION": "1"}))
    rows.append(steady(f"denoising (BART) mask 0.5 {first}", denoising(work, 0.5),
                       size, "base", first))
    table(f"Steady state, the pretrain_base model ({describe(args, 'base')}), --max-tokens "
          f"{size}", rows, STEADY, ratios=["sentences_per_s", "src_tokens_per_s"])
    checks = [f"masked_s2s 0.5 / denoising sentences/s, base model, {first}: "
              f"{rows[0]['sentences_per_s'] / rows[-1]['sentences_per_s']:.2f}x "
              "(target >= 1.3x)"]
    for row in rows[:-1]:
        mfu = "unknown peak" if row["mfu_pct"] is None else f"{row['mfu_pct']:.1f}%"
        checks.append(f"{row['name']} (base) model FLOP utilisation: {mfu} of "
                      f"{row.get('peak_tflops')} TFLOP/s on {row.get('device')} "
                      "(target >= 30%)")
    return checks


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        from bench_worker import worker
        print(json.dumps(worker(json.loads(args.worker), args)))
        return
    started = time.perf_counter()
    work = prepare(args)
    if args.output:
        open(args.output, "w").close()

    def spec(name, argv, data=work, **extra):
        extra.setdefault("max_tokens", args.max_tokens)
        extra.setdefault("precision", args.precision)
        if not extra.get("steady"):
            argv = argv + model_args(args)
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
          f"{'quick' if args.quick else 'full'} mode")
    checks = steady_tables(args, spec, work) if args.steady else cpu_tables(args, spec, work)
    if checks:
        print("\nTargets")
        for line in checks:
            print(f"  {line}")
    print(f"\n# total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
