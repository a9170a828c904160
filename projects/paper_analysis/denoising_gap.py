"""Why does denoising lead MASS? The objectives on one model, several seeds,
scored on the valid set, then the per-sentence analysis of overlap.py.

    python -m projects.paper_analysis.denoising_gap --seeds 1,2,3 --jobs 2

Runs the paper analysis (``python -m projects.paper_analysis``) at the
quickstart's scale, once per seed, in WORK/sSEED: the bundled data, one
4,000-piece sentencepiece model, the 2+2-layer, 128-dimension model in XLM's
embedding style, 1,200 pre-training updates on the monolingual text of both
languages (no language embeddings) and 1,200 en->fr fine-tuning updates, the
last checkpoint translated (beam 5) and scored on the valid set. The points:

* ``none``: no pre-training;
* ``mass_r0.50``: MASS, half of each sentence masked and predicted;
* ``mass_r1.00``: MASS with k = m (the whole sentence masked and predicted);
* ``whole_r0.50``: MASS's encoder input (half the sentence masked), the
  decoder fed the whole sentence and predicting every token of it;
* ``dae``: fairseq's ``denoising`` (BART's text infilling).

Then WORK/denoising-gap.csv (a row per point and seed), each point's mean and
range over the seeds, and the overlap analysis of overlap.py on the
hypotheses. The test set plays no part. Finished points are kept: the same
command resumes, and more seeds add runs. Any other option goes to the paper
analysis of every seed after these settings, so it overrides them (e.g.
``--pretrain-updates 3 --finetune-updates 3`` for a quick check of the wiring).
"""

import argparse
import csv
import json
import statistics
import sys
from functools import partial
from pathlib import Path

from projects.paper_analysis import analysis, overlap
from projects.paper_analysis.runs import Runner
from projects.runner import run_guarded

POINTS = ("none", "mass_r0.50", "mass_r1.00", "whole_r0.50", "dae")
# the quickstart's scale (projects/paper_analysis/screen.py), for every seed
SCALE = ["--pretrain-updates", "1200", "--finetune-updates", "1200", "--max-tokens", "2048",
         "--lr", "0.001", "--warmup", "300", "--vocab-size", "4000", "--layers", "2",
         "--dim", "128", "--ffn", "512", "--heads", "4"]
POINT_ARGS = ["--ratios", "0.5,1", "--ablations", "whole", "--ablation-ratio", "0.5",
              "--baselines", "none,dae", "--embedding-style", "xlm", "--score-on", "valid"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--raw-dir", default="examples/data",
                        help="raw text in the layout of examples/prepare_data.sh")
    parser.add_argument("--work-dir", default="work/denoising-gap")
    parser.add_argument("--jobs", type=int, default=2, help="points trained at a time")
    parser.add_argument("--report-only", action="store_true",
                        help="only the CSV, the summary and the overlap analysis")
    args, args.analysis_args = parser.parse_known_args(argv)
    try:
        args.seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds}: give whole numbers, comma-separated")
    return args


def seed_runner(args, seed, point_args=None):
    """The paper analysis's runner for one seed, its data prepared;
    ``point_args`` (default: this study's points, then the options given)
    follow the quickstart's scale."""
    work = Path(args.work_dir) / f"s{seed}"
    if point_args is None:
        point_args = POINT_ARGS + args.analysis_args
    analysis_args = analysis.parse_args(
        ["--raw-dir", args.raw_dir, "--work-dir", str(work), "--seed", str(seed),
         "--jobs", str(args.jobs), *SCALE, *point_args])
    runner = Runner(analysis_args)
    runner.check_signature()
    runner.prepare_data()
    return runner


def run_all(args):
    """Every (seed, point), ``args.jobs`` at a time; the failures' names."""
    tasks = []
    for seed in args.seeds:
        runner = seed_runner(args, seed)
        points = analysis.points_of(runner.args)
        if sorted(p.name for p in points) != sorted(POINTS):  # options given override them
            raise SystemExit(f"error: the points must be {', '.join(POINTS)}, not "
                             f"{', '.join(p.name for p in points)}")
        total = len(points)
        tasks += [(f"seed {seed} [{i}/{total}] ", f"s{seed}/{point.name}",
                   partial(analysis.run_point, runner, point, i, total))
                  for i, point in enumerate(points, 1)]
    return run_guarded(tasks, args.jobs, catch=Exception)


def collect(work, seeds):
    """A row per finished (point, seed): valid BLEU, chrF, fine-tuned ppl."""
    rows = []
    for point in POINTS:
        for seed in seeds:
            path = work / f"s{seed}" / "points" / point / "result.json"
            if path.exists():
                result = json.loads(path.read_text())
                rows.append(dict(point=point, seed=seed, valid_bleu=result["bleu"],
                                 valid_chrf=result["chrf"],
                                 finetune_valid_ppl=result["finetune_valid_ppl"]))
    return rows


def report(work, rows):
    """WORK/denoising-gap.csv and each point's mean and range over its seeds."""
    with open(work / "denoising-gap.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, ["point", "seed", "valid_bleu", "valid_chrf",
                                      "finetune_valid_ppl"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'point':12s} {'seeds':>5s} {'valid BLEU mean (range)':>26s} "
          f"{'chrF mean':>9s} {'ft ppl':>7s}")
    for point in POINTS:
        mine = [r for r in rows if r["point"] == point]
        if not mine:
            continue
        bleu = [r["valid_bleu"] for r in mine]
        print(f"{point:12s} {len(mine):5d} {statistics.mean(bleu):8.2f} "
              f"({min(bleu):.2f} to {max(bleu):.2f})     "
              f"{statistics.mean(r['valid_chrf'] for r in mine):9.2f} "
              f"{statistics.mean(r['finetune_valid_ppl'] for r in mine):7.2f}")
    print(f"== {len(rows)} run(s) in {work / 'denoising-gap.csv'}")


def main(argv=None):
    args = parse_args(argv)
    work = Path(args.work_dir)
    failures = [] if args.report_only else run_all(args)
    work.mkdir(parents=True, exist_ok=True)
    rows = collect(work, args.seeds)
    report(work, rows)
    seed_dirs = [work / f"s{seed}" for seed in args.seeds]
    overlap.main(["--raw-dir", args.raw_dir, "--pair", "en-fr", "--subset", "valid",
                  "--baseline", "mass_r0.50", "--out", str(work / "overlap.csv"),
                  *[str(d) for d in seed_dirs if d.exists()]])
    if failures:
        sys.exit(f"error: {len(failures)} run(s) failed: {', '.join(failures)}; fix the "
                 "cause and run the same command again")


if __name__ == "__main__":
    main()
