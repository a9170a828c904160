"""The MASS paper's analysis on your own data, as one command.

For each point, pre-train the same small Transformer for the same number of
updates on the monolingual text of all languages, fine-tune it for the same
number of updates on the parallel pairs, translate the test set and score it:

* the span length sweep: ``--mask-ratio`` r for each r of ``--ratios`` (0 is
  the end point k = 1, BERT-like; 1 is k = m, a language model);
* the ablations at each ``--ablation-ratio``: ``discrete`` (k tokens anywhere,
  not one span), ``feed`` (the decoder also sees the tokens the encoder saw),
  ``whole`` (fed as ``feed``, the decoder predicts every token of the
  sentence: MASS's encoder masking with a denoising auto-encoder's target)
  and ``original`` (the original MASS code's four choices together: the
  decoder kept from the ``[MASK]`` states, spans favouring the sentence's
  ends, XLM's embeddings, noise in the decoder's input);
* the baselines: ``none`` (no pre-training), ``dae`` (fairseq's ``denoising``
  task on the same architecture) and ``bert_lm`` (the encoder pre-trained as a
  masked LM, the decoder as a language model, then joined; the two get the
  same number of updates as one MASS run each).

Measured per point: the masked-span perplexity of the pre-trained model on
the held-out monolingual text (with its own masking and with a 50% span, so
that points can be compared), the fine-tuned model's validation perplexity,
and sacreBLEU / chrF on the test set (``--score-on valid``: the valid set,
to choose and analyse on). Writes ``results.csv`` and
``results.png`` in ``--work-dir``. Finished points are not recomputed: run the
same command again after an interruption (an interrupted training resumes
from its last checkpoint), or with more points to add them.

  python -m projects.paper_analysis --raw-dir examples/data --work-dir work/analysis

``--raw-dir`` has the layout of examples/prepare_data.sh: ``mono.LANG`` and
``mono.valid.LANG`` per language, ``train|valid|test.SRC`` and ``.TGT``.

The parts, beside this file: runs.py (the runs, through the recipes of
examples/), pretrain.py (each kind of pre-training), bert_lm.py (the bert_lm
checkpoint), eval.py (the perplexities) and plot.py
(results.csv and results.png).
"""

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from functools import partial

from projects.paper_analysis.eval import masked_span_ppl
from projects.paper_analysis.plot import plot, write_csv
from projects.paper_analysis.pretrain import pretrain_point
from projects.paper_analysis.runs import Runner
from projects.runner import exclusive, progress, run_guarded

PRESETS = {
    # about an hour on 2 CPU cores with the default points (see docs/results.md)
    "cpu": dict(layers=2, dim=128, ffn=512, heads=4, pretrain_updates=500,
                finetune_updates=250, max_tokens=2048, lr=0.001, warmup=100,
                vocab_size=4000),
    # the paper's base Transformer; MASS used far larger budgets still
    "gpu": dict(layers=6, dim=512, ffn=2048, heads=8, pretrain_updates=20000,
                finetune_updates=5000, max_tokens=8192, lr=0.0005, warmup=4000,
                vocab_size=32000),
}


# the masking every point is also measured with: one uniform 50% span, clean
# decoder input
SPAN50 = {"mask_ratio": 0.5, "mask_mode": "span", "feed_unmasked": False,
          "reconstruct_sentence": False,
          "span_start": "uniform", "decoder_mask_prob": 0.0, "decoder_random_token_prob": 0.0}


@dataclass
class Point:
    name: str
    kind: str  # mass | discrete | feed | whole | original | none | dae | bert_lm
    ratio: float = None


def build_parser():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python -m projects.paper_analysis --raw-dir examples/data "
        "--work-dir work/analysis",
    )
    parser.add_argument("--raw-dir", default="examples/data",
                        help="raw text in the layout of examples/prepare_data.sh")
    parser.add_argument("--work-dir", default="work/analysis",
                        help="everything goes here; rerun with the same one to resume")
    parser.add_argument("--langs", default="en,fr", help="monolingual languages")
    parser.add_argument("--pair", default="en-fr", help="SRC-TGT of the fine-tuning")
    parser.add_argument("--ratios", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                        help="--mask-ratio values of the sweep (0: k=1, 1: k=m)")
    parser.add_argument("--ablations", default="discrete,feed",
                        help="any of discrete,feed,whole,original (empty for none)")
    parser.add_argument("--ablation-ratio", default="0.5",
                        help="the --mask-ratio of the ablations; comma-separated for several")
    parser.add_argument("--baselines", default="none,dae,bert_lm",
                        help="any of none,dae,bert_lm (empty for none)")
    parser.add_argument("--embedding-style", choices=("fairseq", "xlm"), default="xlm",
                        help="transformer_mass's --embedding-style for every point, pre-training "
                        "and fine-tuning from random initialisation ('original' points always "
                        "use xlm). Default xlm, the plugin's; fairseq reruns the tables made "
                        "before xlm became the default")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                        help="model size and budgets; the options below override it")
    for name, kind in (("layers", int), ("dim", int), ("ffn", int), ("heads", int),
                       ("pretrain-updates", int), ("finetune-updates", int),
                       ("max-tokens", int), ("lr", float), ("warmup", int),
                       ("vocab-size", int)):
        parser.add_argument(f"--{name}", type=kind, default=None)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--score-on", choices=("test", "valid"), default="test",
                        help="the set each point is translated and scored on: valid to "
                        "choose and analyse, test for a final number, once")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=None,
                        help="points trained at the same time, each with its share of "
                        "the CPU threads (default: one per core, at most 4, on a CPU; "
                        "1 with a GPU)")
    parser.add_argument("--plot-only", action="store_true",
                        help="only rewrite results.csv and results.png")
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.jobs is None:
        import torch

        args.jobs = 1 if torch.cuda.is_available() else min(4, os.cpu_count() or 1)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    check_points(parser, args)
    return args


def check_points(parser, args):
    """Languages, ratios, ablations and baselines from their comma-separated
    lists, or the parser's error naming the option at fault."""
    args.langs = [lang for lang in args.langs.split(",") if lang]
    args.src, _, args.tgt = args.pair.partition("-")
    if not args.tgt or args.src not in args.langs or args.tgt not in args.langs:
        parser.error(f"--pair {args.pair} must be SRC-TGT with both in --langs")
    try:
        args.ratios = [float(r) for r in args.ratios.split(",") if r]
    except ValueError:
        parser.error(f"--ratios must be comma-separated numbers, got {args.ratios!r}")
    try:
        args.ablation_ratio = [float(r) for r in args.ablation_ratio.split(",") if r]
    except ValueError:
        parser.error("--ablation-ratio must be comma-separated numbers, got "
                     f"{args.ablation_ratio!r}")
    if any(not 0 <= r <= 1 for r in args.ratios + args.ablation_ratio):
        parser.error("mask ratios must be in [0, 1]")
    args.ablations = [a for a in args.ablations.split(",") if a]
    args.baselines = [b for b in args.baselines.split(",") if b]
    for flag, given, known in (("--ablations", args.ablations,
                                ("discrete", "feed", "whole", "original")),
                               ("--baselines", args.baselines, ("none", "dae", "bert_lm"))):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"{flag}: unknown {', '.join(unknown)} (choose from "
                         f"{', '.join(known)})")


def points_of(args):
    points = [Point(f"mass_r{r:.2f}", "mass", r) for r in args.ratios]
    points += [Point(f"{a}_r{r:.2f}", a, r) for a in args.ablations
               for r in args.ablation_ratio]
    points += [Point(b, b) for b in args.baselines]
    return points


def run_point(runner, point, index, total):
    """Pre-train, measure, fine-tune and translate one point; its result row
    (kept in the point's result.json, which a second run reads back)."""
    pdir = runner.work / "points" / point.name
    result_path = pdir / "result.json"
    with exclusive(pdir):
        if result_path.exists():
            progress(f"[{index}/{total}] {point.name}: done before, kept")
            return json.loads(result_path.read_text())
        return measure_point(runner, point, pdir, f"[{index}/{total}] {point.name}")


def measure_point(runner, point, pdir, label):
    """Pre-train, measure, fine-tune and translate; the row, also written
    to the point's result.json."""
    start = time.time()
    progress(f"{label}: started (logs in {pdir})")
    init = pretrain_point(runner, point, pdir)
    row = dict(point=point.name, kind=point.kind, mask_ratio=point.ratio,
               pretrain_seconds=round(time.time() - start))
    if point.ratio is not None:
        a = runner.args
        row["ppl_own_masking"] = masked_span_ppl(init, runner.mono_bin, a.langs,
                                                 a.max_tokens, a.seed)
        row["ppl_span50"] = masked_span_ppl(init, runner.mono_bin, a.langs, a.max_tokens,
                                            a.seed, SPAN50)
    checkpoint, row["finetune_valid_ppl"] = runner.finetune(init, pdir)
    row["bleu"], row["chrf"] = runner.translate(checkpoint, pdir)
    row["scored_on"] = runner.args.score_on
    row["total_seconds"] = round(time.time() - start)
    (pdir / "result.json").write_text(json.dumps(row, indent=1) + "\n")
    progress(f"{label}: BLEU {row['bleu']}, fine-tuned valid ppl "
             f"{row['finetune_valid_ppl']}, span ppl {row.get('ppl_span50', '-')} "
             f"({row['total_seconds']} s)")
    return row


def run_points(runner, points, jobs):
    """Every point, ``jobs`` at a time; the names of those that failed (the
    others go on)."""
    total = len(points)
    return run_guarded([(f"[{i}/{total}] ", point.name, partial(run_point, runner, point, i, total))
                        for i, point in enumerate(points, 1)], jobs, catch=Exception)


def write_results(args, work, points):
    """results.csv and results.png from the finished points."""
    rows = []
    for point in points:
        path = work / "points" / point.name / "result.json"
        if path.exists():
            rows.append(json.loads(path.read_text()))
    csv_path, png_path = work / "results.csv", work / "results.png"
    write_csv(rows, csv_path)
    title = (f"{args.layers}+{args.layers} layers, {args.dim} dim; {args.pretrain_updates} "
             f"pre-training + {args.finetune_updates} fine-tuning updates "
             f"of {args.max_tokens} tokens; {args.pair}")
    plot(rows, png_path, title)
    print(f"== {len(rows)} of {len(points)} points in {csv_path} and {png_path}")


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)  # before fairseq's imports set INFO
    args = parse_args(argv)
    runner = Runner(args)
    points = points_of(args)
    failures = []
    if not args.plot_only:
        runner.check_signature()
        runner.prepare_data()
        failures = run_points(runner, points, args.jobs)
    write_results(args, runner.work, points)
    if failures:
        sys.exit(f"error: {len(failures)} point(s) failed: {', '.join(failures)}; "
                 "fix the cause and run the same command again")


if __name__ == "__main__":
    main()
