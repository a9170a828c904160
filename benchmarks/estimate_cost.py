"""Estimated GPU-hours of the paper's recipes (examples/paper/, SCALE=paper)
on one H200, from a measured throughput and counted FLOPs. An estimate, not
a run.

    python benchmarks/estimate_cost.py [--measured-tokens-per-s 271800]

The throughput: one H200 trained the base model (6+6 layers, 768
dimensions, an 8,000-piece dictionary) with masked_s2s at 50% in fp16 at
11,600 sentences/s, 65,536 tokens per step (docs/results/gpu.md, run 5),
sentences of 23.43 tokens on average (the benchmark's text, run 2): 271,800
source tokens/s. The FLOPs: counted here on the CPU with torch's
FlopCounterMode (benchmarks/flops.py), for a training step per source token
of the base model as measured and of the paper's model (6+6 layers, 1,024
dimensions, FFN 4,096, 8 heads, a ``--vocab`` dictionary), on batches of
the bundled text: masked_s2s at 50% for pre-training, translation for
back-translation, fine-tuning and summarization. The paper's model is
assumed to run at the base model's FLOP rate:

    tokens/s = measured tokens/s x FLOPs per token (base, masked_s2s)
                                   / FLOPs per token (paper, workload)
    hours    = tokens trained / tokens/s / 3600

A larger model usually sustains a higher rate, but the paper's 3,000 tokens
per GPU and step far a lower one (run 2: the 512-dimension model's
utilisation halved from 65,536 to 16,384 tokens per step), so train with as
many tokens per step as memory allows (fewer GPUs, the same tokens per
update). Not counted: generation (back-translation, validation BLEU), data
loading, checkpoints.
"""

import argparse
import os
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_configs import copy_translation, masked_s2s, model_args  # noqa: E402

# run 5's 11,600 sentences/s x run 2's 23.43 tokens a sentence (254,897 source
# tokens/s over 10,879 sentences/s), and the dictionary of that benchmark
MEASURED_TOKENS_PER_S = 271_800
MEASURED_VOCAB = 8000
# tokens trained by each recipe at SCALE=paper (updates x tokens per update,
# from examples/paper/), the workload counted for it, and what is left out
RECIPES = [
    ("pre-training, pretrain.sh", "masked_s2s", 625_000 * 24_000, "validation"),
    ("online back-translation, unsup_online_bt.sh", "translation", 187_500 * 16_000,
     "the greedy back-translation of every batch"),
    ("offline back-translation, unsup_offline_bt.sh (3 rounds, both directions)",
     "translation", 3 * 2 * 31_250 * 16_000,
     "fairseq-generate over 5 M sentences a language and round"),
    ("low-resource fine-tuning, low_resource.sh (one direction, one start)", "translation",
     20_000 * 16_000, "validation, decoding"),
    # XSum: 204,045 training articles, 25 epochs, sources cut at 512 tokens:
    # at most this many source tokens (most articles are shorter)
    ("summarization, summarization.sh (25 epochs of XSum, at most)", "translation",
     25 * 204_045 * 512, "decoding; attention over 512-token sources costs more per token"),
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
    from bench_worker import build_trainer, same_batches
    from flops import training_step_flops

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measured-tokens-per-s", type=float, default=MEASURED_TOKENS_PER_S,
                        help="source tokens/s of one GPU training the base model with "
                        "masked_s2s (default: one H200, run 5)")
    parser.add_argument("--measured-vocab", type=int, default=MEASURED_VOCAB,
                        help="the dictionary size of that measurement")
    parser.add_argument("--vocab", type=int, default=60000,
                        help="dictionary size of the paper's model (60k BPE codes)")
    parser.add_argument("--dims", default="base,paper",
                        help="the measured model's and the paper's sizes, names of "
                        "bench_configs.DIMS (a test counts quick,quick)")
    parser.add_argument("--data", default=os.path.join(REPO, "examples", "data"))
    parser.add_argument("--workdir", default=os.path.join(REPO, "work", "estimate-cost"))
    args = parser.parse_args(argv)
    from bench_data import prepare

    work = prepare(SimpleNamespace(data=args.data, workdir=args.workdir, quick=True))
    sizes = dict(zip(("base", "paper"), args.dims.split(",")))
    counted = {}
    for model, vocab in (("base", args.measured_vocab), ("paper", args.vocab)):
        data = os.path.join(args.workdir, f"vocab{vocab}")
        for name in ("mono-bin", "copy-bin"):
            extended_dictionary(os.path.join(work, name), os.path.join(data, name), vocab)
        for workload in ("masked_s2s", "translation"):
            counted[(model, workload)] = flops_per_token(data, workload, sizes[model])
    print("model   workload      parameters  GFLOP per source token (training step)")
    for (dims, workload), (per_token, params) in counted.items():
        print(f"{dims:7s} {workload:12s} {params / 1e6:9.1f} M  {per_token / 1e9:.3f}")
    measured_flops = args.measured_tokens_per_s * counted[("base", "masked_s2s")][0]
    print(f"\nestimate on one GPU whose base-model masked_s2s rate is "
          f"{args.measured_tokens_per_s:,.0f} tokens/s (paper's model, {args.vocab:,}-symbol "
          "dictionary):")
    total = 0.0
    for name, workload, tokens, left_out in RECIPES:
        per_s = measured_flops / counted[("paper", workload)][0]
        hours = tokens / per_s / 3600
        total += hours
        print(f"  {name}: {tokens / 1e9:.2f} G tokens at {per_s:,.0f} tokens/s -> "
              f"{hours:,.0f} GPU-hours (not counted: {left_out})")
    print(f"  all of them: {total:,.0f} GPU-hours")


if __name__ == "__main__":
    main()
