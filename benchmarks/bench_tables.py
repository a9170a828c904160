"""The tables benchmark.py prints: which configurations each measures, and
their formatting (speeds, peak memory, ratios to the first row)."""

import re

from bench_configs import copy_translation, denoising, describe, masked_s2s, model_args
from bench_data import prepare_fixed_length


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
    def steady(name, argv, size, dims="d512", precision=None, profile=False, env=None,
               variant=None):
        precision = precision or args.precision
        slug = f"{name.split()[0]}-{dims}-{size}-{precision}"
        slug += "-cudnn" if env else ""
        slug += "-" + re.sub("[^A-Za-z0-9]+", "-", variant) if variant else ""
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
        mfu = "unknown peak" if row["mfu_pct"] is None else f"{row['mfu_pct']:.1f}%"
        checks.append(f"{row['name']} (base) model FLOP utilisation: {mfu} of "
                      f"{row.get('peak_tflops')} TFLOP/s on {row.get('device')} "
                      "(target >= 30%)")
    return checks
