"""Estimated GPU-hours of the paper's recipes (examples/paper/, SCALE=paper)
on one GPU, from a committed throughput measurement and counted FLOPs. An
estimate, not a run.

    python -m benchmarks.estimate_cost [--rate-log FILE.jsonl --rate-row NAME]

The throughput: the source tokens/s of one row of a committed benchmark
log, by default run 6's (docs/results/gpu-run6/call2-benchmark.jsonl, row
``masked_s2s 0.5 fp16``: one H200 training the base model, 6+6 layers of
768 dimensions, with masked_s2s at 50% in fp16, 65,536 tokens per step, an
8,000-piece dictionary). Its tokens are real (non-pad) source tokens. The
FLOPs: counted here on the CPU with torch's FlopCounterMode
(benchmarks/flops.py), for a training step per source token of the base
model and of the paper's model (6+6 layers, 1,024 dimensions, FFN 4,096, 8
heads, a ``--vocab`` dictionary), on batches of at most 1,024 tokens of the
bundled text: masked_s2s at 50% for pre-training, translation for
back-translation, fine-tuning and summarization. The paper's model is
assumed to run at the base model's FLOP rate:

    tokens/s = measured tokens/s x FLOPs per token (base, masked_s2s)
                                   / FLOPs per token (paper, workload)
    hours    = tokens trained / tokens/s / 3600

So the hours hold for one GPU of the measured kind training as many tokens
per step as the measurement (a recipe's tokens per update reached with
--update-freq, or split over GPUs at the same rate each). The paper's 3,000
tokens per GPU and step would run at a lower rate (run 2: the 512-dimension
model's utilisation halved from 65,536 to 16,384 tokens per step). Not
counted: generation (back-translation's, validation BLEU's, decoding), data
loading, checkpoints.
"""

import argparse
import json
import os
from types import SimpleNamespace

from benchmarks.bench_configs import copy_translation, masked_s2s, model_args

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE_LOG = os.path.join("docs", "results", "gpu-run6", "call2-benchmark.jsonl")
RATE_ROW = "masked_s2s 0.5 fp16"
MEASURED_VOCAB = 8000  # the benchmark's sentencepiece dictionary (bench_data.py)
# tokens trained by each recipe at SCALE=paper (updates x tokens per update,
# from examples/paper/), how, the workload counted for it, and what is left out
RECIPES = [
    ("pre-training, pretrain.sh", 625_000 * 24_000, "625,000 updates of 24,000 tokens",
     "masked_s2s", "validation"),
    ("online back-translation, unsup_online_bt.sh", 187_500 * 16_000,
     "187,500 updates of 16,000 tokens", "translation",
     "the greedy back-translation of every batch"),
    ("offline back-translation, unsup_offline_bt.sh (3 rounds, both directions)",
     3 * 2 * 31_250 * 16_000, "6 x 31,250 updates of 16,000 tokens", "translation",
     "fairseq-generate over 5 M sentences a language and round"),
    ("low-resource fine-tuning, low_resource.sh (one direction, one start)",
     20_000 * 16_000, "20,000 updates of 16,000 tokens", "translation",
     "validation, decoding"),
    # XSum: 204,045 training articles, 25 epochs, sources cut at 512 tokens:
    # at most this many source tokens (most articles are shorter)
    ("summarization, summarization.sh (25 epochs of XSum, at most)", 25 * 204_045 * 512,
     "25 x 204,045 articles of at most 512 tokens", "translation",
     "decoding; attention over 512-token sources costs more per token"),
]


def extended_dictionary(src, dst, vocab):
    """``dst``: the binarized split of ``src`` with a dictionary padded to
    ``vocab`` symbols (the text's ids are unchanged; only the embedding and
    the output projection grow)."""
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name.endswith((".bin", ".idx")) and not os.path.exists(os.path.join(dst, name)):
            os.symlink(os.path.join(src, name), os.path.join(dst, name))
    for name in [n for n in os.listdir(src) if n.startswith("dict")]:
        with open(os.path.join(src, name), encoding="utf-8") as f:
            lines = f.read().splitlines()
        lines += [f"extra{i} 1" for i in range(max(0, vocab - 4 - len(lines)))]
        with open(os.path.join(dst, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return dst


def flops_per_token(work, workload, dims, max_tokens=1024, batches=2):
    """Counted model FLOPs of a training step per source token: the mean over
    ``batches`` batches of the bundled text."""
    from benchmarks.bench_worker import build_trainer, same_batches
    from benchmarks.flops import training_step_flops

    argv = (masked_s2s(work, "0.5") if workload == "masked_s2s" else
            copy_translation(work, "transformer_mass"))
    spec = dict(argv=[str(a) for a in argv + model_args(SimpleNamespace(quick=False), dims)],
                max_tokens=max_tokens, precision="fp32")
    task, model, trainer = build_trainer(spec, "cpu")
    dataset = task.dataset("train")
    split = "mono-bin/train" if workload == "masked_s2s" else "copy-bin/train.src-tgt.src"
    index_batches, sizes = same_batches(os.path.join(work, split), max_tokens, batches)
    flops = tokens = 0
    for batch in index_batches:
        flops += training_step_flops(trainer, dataset.collater([dataset[i] for i in batch]))
        tokens += int(sizes[batch].sum())
    params = sum(p.numel() for p in model.parameters())
    return flops / tokens, params


def measured_rate(path, row):
    """The named row of a benchmark's JSON-lines log: its source tokens/s,
    device, precision and tokens per step; SystemExit naming the file and the
    rows it holds if the row is not there."""
    try:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError as error:
        raise SystemExit(f"error: --rate-log {path}: {error.strerror}; give a benchmark's "
                         "results.jsonl (benchmarks/benchmark.py --output)") from None
    found = [r for r in rows if r.get("name") == row]
    if not found or "src_tokens_per_s" not in found[0]:
        names = ", ".join(repr(r.get("name")) for r in rows)
        raise SystemExit(f"error: --rate-row {row!r} is not a measured row of {path} "
                         f"(its rows: {names})")
    return found[0]


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate-log", default=os.path.join(REPO, RATE_LOG),
                        help="a committed benchmark log (JSON lines) holding the measured "
                        f"rate (default: {RATE_LOG}, GPU run 6)")
    parser.add_argument("--rate-row", default=RATE_ROW,
                        help="the log's row of the base model training masked_s2s "
                        f"(default: {RATE_ROW!r})")
    parser.add_argument("--measured-vocab", type=int, default=MEASURED_VOCAB,
                        help="the dictionary size of that measurement")
    parser.add_argument("--vocab", type=int, default=60000,
                        help="dictionary size of the paper's model (60k BPE codes)")
    parser.add_argument("--dims", default="base,paper",
                        help="the measured model's and the paper's sizes, names of "
                        "bench_configs.DIMS (a test counts quick,quick)")
    parser.add_argument("--data", default=os.path.join(REPO, "examples", "data"))
    parser.add_argument("--workdir", default=os.path.join(REPO, "work", "estimate-cost"))
    return parser


def count_flops(args):
    """{(model, workload): (FLOPs per source token, parameters)}."""
    from benchmarks.bench_data import prepare

    work = prepare(SimpleNamespace(data=args.data, workdir=args.workdir, quick=True))
    sizes = dict(zip(("base", "paper"), args.dims.split(",")))
    counted = {}
    for model, vocab in (("base", args.measured_vocab), ("paper", args.vocab)):
        data = os.path.join(args.workdir, f"vocab{vocab}")
        for name in ("mono-bin", "copy-bin"):
            extended_dictionary(os.path.join(work, name), os.path.join(data, name), vocab)
        for workload in ("masked_s2s", "translation"):
            counted[(model, workload)] = flops_per_token(data, workload, sizes[model])
    return counted


def main(argv=None):
    args = build_parser().parse_args(argv)
    rate = measured_rate(args.rate_log, args.rate_row)
    counted = count_flops(args)
    print("model   workload      parameters  GFLOP per source token (training step)")
    for (dims, workload), (per_token, params) in counted.items():
        print(f"{dims:7s} {workload:12s} {params / 1e6:9.1f} M  {per_token / 1e9:.3f}")
    tokens_per_s = rate["src_tokens_per_s"]
    measured_flops = tokens_per_s * counted[("base", "masked_s2s")][0]
    print(f"\nmeasured rate: {tokens_per_s:,.0f} source tokens/s (real tokens, padding not "
          f"counted), row {rate['name']!r} of {os.path.relpath(args.rate_log, REPO)}: "
          f"one GPU ({rate.get('device', 'device not recorded')}), "
          f"{rate.get('precision', '?')}, {rate.get('max_tokens', 0):,} tokens per step, "
          f"a dictionary of {args.measured_vocab:,} symbols")
    print(f"estimate for one such GPU at that many tokens per step (the paper's model, "
          f"a dictionary of {args.vocab:,} symbols); generation, data loading and checkpoints "
          "not counted:")
    total = 0.0
    for name, tokens, how, workload, left_out in RECIPES:
        per_s = measured_flops / counted[("paper", workload)][0]
        hours = tokens / per_s / 3600
        total += hours
        print(f"  {name}: {tokens / 1e9:.2f} G tokens ({how}) at {per_s:,.0f} tokens/s -> "
              f"{hours:,.0f} GPU-hours (not counted: {left_out})")
    print(f"  all of them: {total:,.0f} GPU-hours")


if __name__ == "__main__":
    main()
