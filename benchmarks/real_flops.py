"""The FLOPs of the benchmark's batches counted on every token and on real
tokens only, without training: the factor that turns a model FLOP
utilisation counted with padding (the benchmark's MFU column before it
counted real tokens) into one on real tokens.

    python -m benchmarks.real_flops --batching sample --max-tokens 65536 --dims base

(from the repository root) rebuilds the batches a benchmark run trained on
(the same data preparation, batching and seed as benchmark.py) and counts,
with torch's FlopCounterMode on the CPU, each batch's training step on its
padded shape and on each sentence alone. A step's FLOPs are linear in the
batch size, so a batch's padded FLOPs are its size times those of one row at
its padded shape: the count needs one sentence at a time, never a whole
batch, and runs on a CPU in minutes for the base model.
"""

import argparse
import json
import os
from types import SimpleNamespace

import numpy as np

from benchmarks.bench_batches import BATCHINGS, make_batches
from benchmarks.bench_configs import masked_s2s, model_args
from benchmarks.bench_data import prepare

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(REPO, "examples", "data"),
                        help="as benchmark.py's --data")
    parser.add_argument("--workdir", default=os.path.join(REPO, "work", "benchmark"),
                        help="as benchmark.py's --workdir (its prepared data is reused)")
    parser.add_argument("--batching", choices=BATCHINGS, default="sample")
    parser.add_argument("--corpus-sentences", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=None,
                        help="how many batches (default: every batch of --batching sample, "
                        "32 of --batching corpus)")
    parser.add_argument("--max-tokens", type=int, default=65536)
    parser.add_argument("--dims", default="base", help="a model of bench_configs.DIMS")
    parser.add_argument("--mfu-log",
                        help="a benchmark's JSON-lines output (--output) whose rows at "
                        "--max-tokens counted their MFU with padding: each masked_s2s 0.5 "
                        "row is printed on real tokens too (its MFU times real / padded)")
    return parser.parse_args(argv)


def row_flops(trainer, sample, row, pad, cache, padded):
    """The FLOPs of one row of ``sample`` alone, with its padding (``padded``)
    or without; counted once per shape."""
    from benchmarks.flops import sentence_sample, training_step_flops

    alone = sentence_sample(sample, row, None if padded else pad)
    shape = (alone["net_input"]["src_tokens"].size(1), alone["target"].size(1))
    if shape not in cache:
        cache[shape] = training_step_flops(trainer, alone)
    return cache[shape]


def count(args):
    """(padded FLOPs, real FLOPs, padded source slots, real source tokens)."""
    from benchmarks.bench_worker import build_trainer

    args.quick = False
    work = prepare(SimpleNamespace(data=args.data, workdir=os.path.abspath(args.workdir),
                                   quick=False))
    spec = dict(argv=[str(a) for a in masked_s2s(work, "0.5") + model_args(args, args.dims)],
                max_tokens=args.max_tokens, precision="fp32")
    task, _, trainer = build_trainer(spec, "cpu")
    dataset, pad = task.dataset("train"), task.source_dictionary.pad()
    batches, sizes = make_batches(os.path.join(work, "mono-bin", "train"), args.max_tokens,
                                  args.batches, args.batching, args.corpus_sentences)
    cache, totals = {}, np.zeros(4)
    for batch in batches:
        sample = dataset.collater([dataset[i] for i in batch])
        n = sample["net_input"]["src_tokens"].size(0)
        totals += (n * row_flops(trainer, sample, 0, pad, cache, padded=True),
                   sum(row_flops(trainer, sample, r, pad, cache, padded=False)
                       for r in range(n)),
                   sample["net_input"]["src_tokens"].numel(), int(sizes[batch].sum()))
    return totals


def main(argv=None):
    args = parse_args(argv)
    padded, real, slots, tokens = count(args)
    print(f"# masked_s2s 0.5, {args.dims} model, --batching {args.batching}, --max-tokens "
          f"{args.max_tokens}")
    print(f"source tokens: {tokens:.0f} real of {slots:.0f} padded slots "
          f"({100 * (1 - tokens / slots):.1f}% padding)")
    print(f"training FLOPs: {real:.4g} on real tokens of {padded:.4g} counting padding: "
          f"real / padded = {real / padded:.3f}")
    print(f"FLOPs per real source token: {real / tokens / 1e9:.3f} G real, "
          f"{padded / tokens / 1e9:.3f} G counting padding")
    if args.mfu_log:
        print_real_mfu(args.mfu_log, args.max_tokens, real / padded)


def print_real_mfu(path, max_tokens, ratio):
    """Each masked_s2s 0.5 row of a benchmark log at ``max_tokens`` (the
    batches and model counted here; another task's batches pad otherwise):
    its MFU counting padding and on real tokens."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    print(f"\n{path}, masked_s2s 0.5 rows: model FLOP utilisation counting padding -> "
          f"on real tokens (x {ratio:.3f})")
    for row in rows:
        if (row.get("max_tokens") == max_tokens and row.get("mfu") is not None
                and row["name"].startswith("masked_s2s 0.5 ")):
            print(f"  {row['name']}: {100 * row['mfu']:.1f}% -> {100 * row['mfu'] * ratio:.1f}%")


if __name__ == "__main__":
    main()
