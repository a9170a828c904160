"""A screen of MASS pre-training variants at the quickstart's scale, several
seeds each, scored on the valid set.

    python -m projects.paper_analysis.screen --variants base,original --seeds 1,2,3

For each variant and seed, on the bundled data (``--raw-dir``, prepared once
as the quickstart does: one 4,000-piece sentencepiece model): MASS
pre-training of the quickstart's model (examples/pretrain.sh, mask ratio 0.5,
``--pretrain-updates``, the variant's options, ``--seed``), en->fr
fine-tuning from it (examples/finetune_nmt.sh, ``--finetune-updates``, the
same seed), and the valid set translated and scored (examples/generate.sh,
sacreBLEU and chrF). The controls ``none`` and ``none_xlm`` skip the
pre-training: fine-tuning from random initialisation (``none_xlm`` with the
``xlm`` embedding style). The test set plays no part. One run differs from
another by about a BLEU point, hence the seeds: WORK/screen.csv gets a row
per finished run in the work directory, and the end prints each asked
variant's mean and range over its seeds.
Finished runs are kept: the same command resumes, and more seeds or
variants add runs.
"""

import argparse
import csv
import statistics
import sys
from pathlib import Path

from projects.paper_analysis.pretrain import ORIGINAL
from projects.runner import RecipeRunner, exclusive, finished, progress, run_guarded

MODEL = ("--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 128 "
         "--decoder-embed-dim 128 --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 "
         "--encoder-attention-heads 4 --decoder-attention-heads 4 --num-workers 0")
# the original MASS code's choices (docs/pretraining.md), one at a time and
# together, against the plugin's defaults when the screen ran: fairseq's
# embedding style, named here since xlm became the default
FAIRSEQ = "--embedding-style fairseq"
VARIANTS = {
    "base": FAIRSEQ,
    "hide_cross": f"{FAIRSEQ} --hide-mask-states cross",
    "hide_encoder": f"{FAIRSEQ} --hide-mask-states encoder",
    "span_mass": f"{FAIRSEQ} --span-start mass",
    "xlm": "--embedding-style xlm",
    "decoder_noise": f"{FAIRSEQ} --decoder-mask-prob 0.1 --decoder-random-token-prob 0.1",
    "original": " ".join(ORIGINAL),
}
# controls without pre-training: fine-tuning from random initialisation, with
# these options (none_xlm: is xlm's gain its architecture or its pre-training?)
CONTROLS = {
    "none": FAIRSEQ,
    "none_xlm": "--embedding-style xlm",
}
NAMES = [*VARIANTS, *CONTROLS]
BATCH = dict(MAX_TOKENS=2048, TOKENS_PER_UPDATE=2048, LR=0.001, WARMUP=300)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="base,original",
                        help=f"comma-separated, of: {', '.join(NAMES)}")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--raw-dir", default="examples/data",
                        help="raw text in the layout of examples/prepare_data.sh")
    parser.add_argument("--work-dir", default="work/screen")
    parser.add_argument("--pretrain-updates", type=int, default=1200)
    parser.add_argument("--finetune-updates", type=int, default=1200)
    parser.add_argument("--mask-ratio", default="0.5")
    parser.add_argument("--vocab-size", type=int, default=4000,
                        help="sentencepiece pieces (the quickstart's 4,000)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    args = parser.parse_args(argv)
    args.variants = args.variants.split(",")
    unknown = [v for v in args.variants if v not in NAMES]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from "
                     f"{', '.join(NAMES)}")
    try:
        args.seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds}: give whole numbers, comma-separated")
    return args


def one_run(runner, args, variant, seed):
    """Pre-train, fine-tune and score one (variant, seed); the scores file
    (BLEU <tab> chrF) marks it done."""
    run = runner.work / f"{variant}-s{seed}"
    scores = run / "valid.scores"
    if scores.exists():
        return
    data_bin, seeded = runner.work / "data-bin", f"{MODEL} --seed {seed}"
    if variant in CONTROLS:  # no pre-training; the options go to the fine-tuning
        stages = [("ft", args.finetune_updates, "finetune_nmt.sh",
                   dict(PRETRAINED="", EXTRA_ARGS=f"{seeded} {CONTROLS[variant]}"))]
    else:
        stages = [("pretrain", args.pretrain_updates, "pretrain.sh",
                   dict(MASK_RATIO=args.mask_ratio, VALIDATE_EVERY=400,
                        EXTRA_ARGS=f"{seeded} {VARIANTS[variant]}")),
                  ("ft", args.finetune_updates, "finetune_nmt.sh",
                   dict(PRETRAINED=run / "pretrain/checkpoint_best.pt", EXTRA_ARGS=seeded))]
    with exclusive(run):
        for stage, updates, script, variables in stages:
            if not (run / stage / "done").exists():
                runner.recipe(script, run / f"{stage}.log", f"{stage} {variant} seed {seed}",
                              DATA_BIN=data_bin, SAVE_DIR=run / stage, MAX_UPDATE=updates,
                              **BATCH, **variables)
                finished(run / stage)
        runner.recipe("generate.sh", run / "valid.log", f"scoring {variant} seed {seed}",
                      DATA_BIN=data_bin, CHECKPOINT=run / "ft/checkpoint_best.pt",
                      SUBSET="valid", REFERENCE=Path(args.raw_dir).resolve() / "valid.fr",
                      SCORES=scores)
    progress(f"== {variant} seed {seed}: valid BLEU / chrF {scores.read_text().split()}")


def report(work, variants):
    """screen.csv, a row per finished run of the work directory, and each of
    ``variants``' mean and range."""
    rows = []
    for variant in NAMES:
        for path in work.glob(f"{variant}-s*/valid.scores"):
            bleu, chrf = path.read_text().split()
            seed = int(path.parent.name[len(variant) + 2:])
            rows.append(dict(variant=variant, seed=seed, valid_bleu=bleu, valid_chrf=chrf))
    rows.sort(key=lambda r: (NAMES.index(r["variant"]), r["seed"]))
    with open(work / "screen.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, ["variant", "seed", "valid_bleu", "valid_chrf"])
        writer.writeheader()
        writer.writerows(rows)
    for variant in variants:
        bleu = [float(r["valid_bleu"]) for r in rows if r["variant"] == variant]
        if bleu:
            print(f"{variant:14s} valid BLEU mean {statistics.mean(bleu):.2f} over "
                  f"{len(bleu)} seed(s), range {min(bleu):.2f} to {max(bleu):.2f}")
    print(f"== {len(rows)} run(s) in {work / 'screen.csv'}")


def main(argv=None):
    args = parse_args(argv)
    runner = RecipeRunner(args.work_dir, jobs=args.jobs)
    runner.check_signature(dict(raw_dir=str(Path(args.raw_dir).resolve()),
                                pretrain_updates=args.pretrain_updates,
                                finetune_updates=args.finetune_updates,
                                mask_ratio=args.mask_ratio, vocab_size=args.vocab_size))
    if not (runner.work / "data-bin" / "dict.txt").exists():
        runner.recipe("prepare_data.sh", runner.work / "data.log", "preparing the data",
                      RAW_DIR=Path(args.raw_dir).resolve(), WORK_DIR=runner.work,
                      VOCAB_SIZE=args.vocab_size)
    tasks = [(f"{v} seed {s}: ", f"{v}-s{s}",
              lambda v=v, s=s: one_run(runner, args, v, s))
             for s in args.seeds for v in args.variants]
    failures = run_guarded(tasks, args.jobs)
    report(runner.work, args.variants)
    if failures:
        sys.exit(f"error: {len(failures)} run(s) failed: {', '.join(failures)}; fix the cause "
                 "and run the same command again")


if __name__ == "__main__":
    main()
