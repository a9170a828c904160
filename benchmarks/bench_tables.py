"""The tables benchmark.py prints: which configurations each measures, and
their formatting (speeds, peak memory, ratios to the first row)."""

import re
import time

from benchmarks.bench_configs import (
    FAST_PATHS,
    STUDY_DENOISING,
    copy_translation,
    denoising,
    describe,
    masked_s2s,
    model_args,
)
from benchmarks.bench_data import prepare_fixed_length
from benchmarks.bench_worker import utilisation


def _cell(value, fmt):
    return "-" if value is None else fmt.format(value)


def table(title, rows, columns, ratios=None):
    """Print ``rows`` (dicts) with ``columns`` [(key, header, format)], plus
    the ratio to the first row of each column in ``ratios`` (default: all)."""
    print(f"\n{title}")
    # rows of one batch size train on the same batches (else a bug, not a
    # measurement); a row at another --max-tokens has batches of its own
    for tokens in {row.get("max_tokens") for row in rows}:
        if len({row.get("batches") for row in rows if row.get("max_tokens") == tokens}) > 1:
            raise RuntimeError(f"{title}: the rows at --max-tokens {tokens} were not "
                               "measured on the same batches")
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
                  ("src_pad_pct", "src pad %", "{:.1f}"), ("real_mfu_pct", "MFU real %", "{:.1f}"),
                  ("mfu_pct", "MFU padded %", "{:.1f}"), ("gpu_busy_pct", "GPU busy %", "{:.0f}"),
                  ("warmup_steps", "warm-up", "{}")]


def percent(row):
    """The row's shares and utilisations as percentages (None where unknown)."""
    for name in ("mfu", "real_mfu", "gpu_busy", "src_pad", "tgt_pad"):
        value = row.get(name)
        row[f"{name}_pct"] = None if value is None else 100 * value


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
    def steady(name, argv, size, dims="d512", precision=None, profile=False, env=None,
               variant=None, **extra):
        precision = precision or args.precision
        slug = f"{name.split()[0]}-{dims}-{size}-{precision}"
        slug += "-cudnn" if env else ""
        slug += "-" + re.sub("[^A-Za-z0-9]+", "-", variant) if variant else ""
        row = spec(name, argv + model_args(args, dims), max_tokens=size, steady=True,
                   precision=precision, profile=profile, slug=slug, env=env or {}, **extra)
        row["step_ms"] = 1000 * row["step_s"]
        percent(row)
        return row

    checks = []
    tables = {"base": base_table, "sizes": sizes_table, "speed": speed_table}
    for name in args.tables:
        checks += tables[name](args, steady, work)
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


def variant_size(options, size):
    """A --variant's options without ``--max-tokens N``, and the tokens per
    step of its row: N where given (the row's batches are made at that
    size), else ``size``."""
    options = list(options)
    if "--max-tokens" not in options:
        return options, size
    i = options.index("--max-tokens")
    if i + 1 >= len(options) or not options[i + 1].isdigit():
        raise SystemExit(f"--variant options {' '.join(options)!r}: --max-tokens needs a "
                         "number of tokens")
    return options[:i] + options[i + 2:], int(options[i + 1])


def base_table(args, steady, work):
    """The pretrain_base model: masked_s2s in each --base-precisions (with
    --cudnn-row also with torch's cuDNN attention, which the plugin turns
    off) and each --variant in the first, beside denoising in each
    precision; each masked_s2s row's ratio is to denoising in its precision."""
    size = args.base_size
    first = args.base_precisions[0]
    rows = [steady(f"masked_s2s 0.5 {p}", masked_s2s(work, 0.5), size, "base", p,
                   profile=True) for p in args.base_precisions]
    if args.device == "cuda" and args.cudnn_row:
        rows.append(steady(f"masked_s2s 0.5 {first}, cuDNN attention", masked_s2s(work, 0.5),
                           size, "base", first, profile=True,
                           env={"MASS_PLUGIN_CUDNN_ATTENTION": "1"}))
    for name, options in args.variant:
        options, tokens = variant_size(options, size)
        rows.append(steady(f"masked_s2s 0.5 {first}, {name}", masked_s2s(work, 0.5) + options,
                           tokens, "base", first, profile=True, variant=name))
    baselines = {p: steady(f"denoising (BART) mask 0.5 {p}", denoising(work, 0.5), size,
                           "base", p) for p in args.base_precisions}
    rows += list(baselines.values())
    table(f"Steady state, the pretrain_base model ({describe(args, 'base')}), --max-tokens "
          f"{size} unless a row says otherwise", rows, STEADY,
          ratios=["sentences_per_s", "src_tokens_per_s"])
    mass_rows = [row for row in rows if row["name"].startswith("masked_s2s")]
    checks = []
    for row in mass_rows:
        precision = row["precision"]
        ratio = row["sentences_per_s"] / baselines[precision]["sentences_per_s"]
        checks.append(f"{row['name']} / denoising {precision} sentences/s, base model: "
                      f"{ratio:.2f}x (target >= 1.3x)")
    for row in mass_rows:
        if row["real_mfu_pct"] is None:
            mfu = "unknown peak"
        else:
            mfu = (f"{row['real_mfu_pct']:.1f}% on real tokens ({row['mfu_pct']:.1f}% counting "
                   "padding)")
        checks.append(f"{row['name']} (base) model FLOP utilisation: {mfu} of "
                      f"{row.get('peak_tflops')} TFLOP/s on {row.get('device')} "
                      "(target >= 30% on real tokens)")
    return checks


def speed_rows(args, steady, work):
    """The rows of the speed table, in the order they run (the most needed
    first: a run cut short keeps them): (key, row)."""
    size, freq = args.base_size, 4
    fast = dict(options=FAST_PATHS, memory_efficient=True)
    mass = masked_s2s(work, 0.5)
    shipped_dae = denoising(work, **STUDY_DENOISING)
    same_model_dae = denoising(work, arch="transformer_mass", **STUDY_DENOISING)

    def row(key, name, argv, precision, tokens=size, options=(), flops_of=None, **extra):
        # the preset's gradient clipping on every row; FLOPs depend on the
        # task, the model and the batches only: a row ``flops_of`` another
        # takes that row's count instead of counting again
        argv = argv + list(options) + ["--clip-norm", "1.0"]
        return key, flops_of, lambda: steady(name, argv, tokens, "base", precision,
                                             variant=key, count_flops=flops_of is None,
                                             **extra)

    return [
        row("mass_fp16", "masked_s2s fp16, as shipped", mass, "fp16", profile=True),
        row("bart_fp16", "denoising fp16, bart_base as shipped", shipped_dae, "fp16"),
        row("dae_fp16", "denoising fp16, transformer_mass", same_model_dae, "fp16"),
        row("mass_fast_fp16", "masked_s2s fp16, fast paths", mass, "fp16", profile=True,
            flops_of="mass_fp16", **fast),
        row("dae_fast_fp16", "denoising fp16, transformer_mass, fast paths", same_model_dae,
            "fp16", flops_of="dae_fp16", **fast),
        row("mass_fast_bf16", "masked_s2s bf16, fast paths", mass, "bf16",
            flops_of="mass_fp16", **fast),
        row("dae_fast_bf16", "denoising bf16, transformer_mass, fast paths", same_model_dae,
            "bf16", flops_of="dae_fp16", **fast),
        row("mass_fast_fp16_4096x4", f"masked_s2s fp16, fast paths, {4096:,} tokens x {freq}",
            mass, "fp16", tokens=4096, update_freq=freq, **fast),
        row("mass_bf16", "masked_s2s bf16, as shipped", mass, "bf16", flops_of="mass_fp16"),
        row("mass_sdpa_fp16", "masked_s2s fp16, --attention sdpa", mass, "fp16",
            options=FAST_PATHS[:2], flops_of="mass_fp16"),
        row("mass_compile_fp16", "masked_s2s fp16, --compile-layers", mass, "fp16",
            options=FAST_PATHS[2:3], flops_of="mass_fp16"),
        row("mass_adam_fp16", "masked_s2s fp16, torch_adam, memory-efficient", mass, "fp16",
            options=FAST_PATHS[3:], memory_efficient=True, flops_of="mass_fp16"),
    ]


SPEED_COLUMNS = [("src_tokens_per_s", "real src tok/s", "{:.0f}"),
                 ("sentences_per_s", "sent/s", "{:.1f}"),
                 ("src_pad_pct", "src pad %", "{:.1f}"), ("tgt_pad_pct", "tgt pad %", "{:.1f}"),
                 ("real_mfu_pct", "MFU real %", "{:.1f}"), ("mfu_pct", "MFU padded %", "{:.1f}"),
                 ("step_ms", "step ms", "{:.1f}"), ("peak_mb", "peak MB", "{:.0f}"),
                 ("gpu_busy_pct", "GPU busy %", "{:.0f}"), ("warmup_steps", "warm-up", "{}")]


def speed_table(args, steady, work):
    """The fast paths on the base model in fp16 and bf16 at --base-size
    tokens a step, beside fairseq's denoising as shipped (bart_base) and on
    transformer_mass with the same options, and the pretrain_base preset's
    4,096 tokens x 4; returns the target checks."""
    if args.device == "cpu":
        print("\n(on a CPU this table checks the wiring: fp16 rows train in fp32)")
    rows, longest, skipped = {}, 0.0, []
    for key, flops_of, measure in speed_rows(args, steady, work):
        elapsed = time.perf_counter() - args.started
        if args.budget_s and elapsed + longest > args.budget_s:
            skipped.append(key)
            continue
        rows[key] = measure()
        longest = max(longest, time.perf_counter() - args.started - elapsed)
        if flops_of in rows and rows[flops_of]["batches"] == rows[key]["batches"]:
            counted = {k: rows[flops_of].get(k) for k in ("step_flops", "step_real_flops")}
            if None not in counted.values():
                rows[key].update(counted, flops_from=flops_of)
                rows[key].update(utilisation(rows[key], rows[key]["step_s"],
                                             rows[key].get("peak_tflops")))
                percent(rows[key])
    table(f"Speed, the pretrain_base model ({describe(args, 'base')}), --max-tokens "
          f"{args.base_size} unless a row says otherwise; real tokens only", list(rows.values()),
          SPEED_COLUMNS, ratios=["src_tokens_per_s"])
    if skipped:
        print(f"  not run (--budget-s {args.budget_s:.0f}): {', '.join(skipped)}")
    return speed_checks(rows)


def speed_checks(rows):
    """The targets, each a line, from the speed table's rows (a line whose
    rows did not run says so)."""
    def ratio(a, b):
        if a not in rows or b not in rows:
            return float("nan")
        return rows[a]["src_tokens_per_s"] / rows[b]["src_tokens_per_s"]

    fast = [k for k in ("mass_fast_fp16", "mass_fast_bf16") if k in rows]
    if not fast:
        return ["the fast-path rows did not run"]
    best = max(fast, key=lambda k: rows[k]["src_tokens_per_s"])
    mfu = rows[best].get("real_mfu_pct")
    return [
        f"model FLOP utilisation on real tokens, {rows[best]['name']}: "
        + ("unknown peak" if mfu is None else f"{mfu:.1f}%") + " (target >= 30%)",
        f"bf16 / fp16, fast paths: {ratio('mass_fast_bf16', 'mass_fast_fp16'):.2f}x "
        "(target >= 1.0x)",
        f"masked_s2s / denoising like for like (transformer_mass, the same options), fast "
        f"paths: fp16 {ratio('mass_fast_fp16', 'dae_fast_fp16'):.2f}x, bf16 "
        f"{ratio('mass_fast_bf16', 'dae_fast_bf16'):.2f}x; as shipped: "
        f"{ratio('mass_fp16', 'dae_fp16'):.2f}x (target >= 1.3x)",
        f"masked_s2s as shipped / denoising as shipped (bart_base), fp16: "
        f"{ratio('mass_fp16', 'bart_fp16'):.2f}x; fast paths against it: "
        f"{ratio('mass_fast_fp16', 'bart_fp16'):.2f}x",
        f"4,096 tokens x 4 / one step of --base-size tokens, fast paths, fp16: "
        f"{ratio('mass_fast_fp16_4096x4', 'mass_fast_fp16'):.2f}x (target >= 0.85x)",
    ]
