"""MASS or denoising for the same pre-training time? The objectives on one
model at the quickstart's scale, each pre-trained for as many updates as fit
one time budget, then fine-tuned and scored alike on the valid set.

    python -m projects.paper_analysis.compute_matched --seeds 1,2,3 --jobs 2

The settings are those of denoising_gap.py (the quickstart's scale, XLM's
embedding style, 1,200 en->fr fine-tuning updates, beam 5, the valid set);
the points are ``mass_r0.50`` (MASS 50%), ``mass_r1.00`` (k = m),
``whole_r0.50`` (``--reconstruct-sentence``) and ``dae`` (fairseq's
denoising). Three stages, in WORK:

1. timing: each objective's pre-training cost per update, measured here, one
   training at a time, each with the thread count of a run of stage 3: the
   objectives in turn, ``--timing-rounds`` rounds, the order rotated each
   round, every training ``--timing-updates`` updates from scratch on seed
   1's data. A training's cost is the wall-clock between its log lines at
   update 25 and at its last update, per update; an objective's, the median
   over the rounds (WORK/timing.csv).
2. budget: ``--budget-updates`` updates of ``--budget-point`` at its cost;
   every objective gets the updates that fit it (WORK/budget.json, kept once
   written).
3. runs: per seed and objective, pre-training for its updates, fine-tuning
   and translation of the valid set, as denoising_gap.py does them, in
   WORK/sSEED; then WORK/compute-matched.csv and each objective's mean and
   range over the seeds. The test set plays no part.

Finished trainings are kept: the same command resumes (an unfinished timing
training starts again, so that a resume does not count in its time).
"""

import argparse
import copy
import csv
import json
import re
import shutil
import statistics
import sys
from functools import partial
from pathlib import Path

from projects.paper_analysis import analysis, denoising_gap
from projects.paper_analysis.pretrain import pretrain_point
from projects.runner import progress, run_guarded

POINTS = ("mass_r0.50", "mass_r1.00", "whole_r0.50", "dae")
POINT_ARGS = ["--ratios", "0.5,1", "--ablations", "whole", "--ablation-ratio", "0.5",
              "--baselines", "dae", "--embedding-style", "xlm", "--score-on", "valid"]
# a training line of fairseq-train's simple log format: its update count and
# the wall-clock seconds since the training started
LOG_LINE = re.compile(r"num_updates=(\d+),.*\bwall=(\d+(?:\.\d+)?)")
FIRST_TIMED_UPDATE = 25  # the first log line: start-up and the first batch come before it


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--raw-dir", default="examples/data",
                        help="raw text in the layout of examples/prepare_data.sh")
    parser.add_argument("--work-dir", default="work/compute-matched")
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at a time in stage 3")
    parser.add_argument("--timing-rounds", type=int, default=3,
                        help="trainings per objective in the timing")
    parser.add_argument("--timing-updates", type=int, default=200,
                        help="updates of each timing training (more than 25)")
    parser.add_argument("--budget-point", choices=POINTS, default="dae",
                        help="the objective whose updates set the time budget")
    parser.add_argument("--budget-updates", type=int, default=1200,
                        help="that objective's pre-training updates")
    parser.add_argument("--report-only", action="store_true",
                        help="only the CSV and the summary of the finished runs")
    args, args.analysis_args = parser.parse_known_args(argv)
    try:
        args.seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds}: give whole numbers, comma-separated")
    if args.timing_updates <= FIRST_TIMED_UPDATE:
        parser.error(f"--timing-updates {args.timing_updates}: give more than "
                     f"{FIRST_TIMED_UPDATE} (the first log line starts the clock)")
    return args


def with_updates(runner, updates):
    """A copy of ``runner`` whose pre-trainings run ``updates`` updates."""
    other = copy.copy(runner)
    other.args = copy.copy(runner.args)
    other.args.pretrain_updates = updates
    return other


def seconds_per_update(log):
    """The wall-clock per update between the first timed log line and the
    last one of a fairseq-train log; ValueError if it has too few."""
    points = [(int(n), float(w)) for n, w in LOG_LINE.findall(log.read_text(errors="replace"))]
    points = [(n, w) for n, w in points if n >= FIRST_TIMED_UPDATE]
    if len(points) < 2:
        raise ValueError(f"{log}: fewer than two training log lines from update "
                         f"{FIRST_TIMED_UPDATE} on; read it for the training's error")
    (n0, w0), (n1, w1) = points[0], points[-1]
    return (w1 - w0) / (n1 - n0)


def timing(args, runner, points):
    """Stage 1: a row per (round, objective), timed one at a time."""
    rows, timed = [], with_updates(runner, args.timing_updates)
    for rnd in range(1, args.timing_rounds + 1):
        shift = (rnd - 1) % len(points)
        for position, point in enumerate(points[shift:] + points[:shift], 1):
            pdir = Path(args.work_dir).resolve() / "timing" / f"round{rnd}" / point.name
            if not (pdir / "pretrain" / "done").exists():
                shutil.rmtree(pdir, ignore_errors=True)  # a resumed run: not one run's time
                progress(f"timing round {rnd}/{args.timing_rounds}: {point.name} "
                         f"({args.timing_updates} updates)")
                pretrain_point(timed, point, pdir)
            rows.append(dict(round=rnd, position=position, point=point.name,
                             seconds_per_update=round(seconds_per_update(
                                 pdir / "pretrain.log"), 4)))
    return rows


def write_timing(work, rows):
    """WORK/timing.csv, the table, and each objective's median cost."""
    with open(work / "timing.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, ["round", "position", "point", "seconds_per_update"])
        writer.writeheader()
        writer.writerows(rows)
    rounds = sorted({r["round"] for r in rows})
    cost = {p: statistics.median(r["seconds_per_update"] for r in rows if r["point"] == p)
            for p in POINTS}
    print("== timing: seconds per pre-training update, one training at a time")
    print(f"{'point':12s} " + " ".join(f"{'round ' + str(r):>8s}" for r in rounds)
          + f" {'median':>8s}")
    for p in POINTS:
        per_round = {r["round"]: r["seconds_per_update"] for r in rows if r["point"] == p}
        print(f"{p:12s} " + " ".join(f"{per_round[r]:8.4f}" for r in rounds)
              + f" {cost[p]:8.4f}")
    return cost


def budget(args, cost):
    """Stage 2: the updates of each objective (WORK/budget.json, kept once
    written so that the runs of a resumed command keep their updates)."""
    path = Path(args.work_dir) / "budget.json"
    if path.exists():
        saved = json.loads(path.read_text())
        print(f"== budget: {path} kept from the first run")
    else:
        seconds = args.budget_updates * cost[args.budget_point]
        saved = dict(budget_point=args.budget_point, budget_updates=args.budget_updates,
                     budget_seconds=round(seconds, 1),
                     seconds_per_update={p: round(c, 4) for p, c in cost.items()},
                     updates={p: round(seconds / cost[p]) for p in POINTS})
        path.write_text(json.dumps(saved, indent=1) + "\n")
    print(f"== budget: {saved['budget_updates']} updates of {saved['budget_point']}, "
          f"{saved['budget_seconds']} s of pre-training per objective")
    for p in POINTS:
        print(f"{p:12s} {saved['seconds_per_update'][p]:8.4f} s/update "
              f"{saved['updates'][p]:6d} updates")
    return saved["updates"]


def run_all(args, runners, updates):
    """Stage 3: every (seed, objective), ``args.jobs`` at a time; the
    failures' names."""
    tasks = []
    for seed, runner in runners.items():
        points = analysis.points_of(runner.args)
        total = len(points)
        tasks += [(f"seed {seed} [{i}/{total}] ", f"s{seed}/{point.name}",
                   partial(analysis.run_point, with_updates(runner, updates[point.name]),
                           point, i, total))
                  for i, point in enumerate(points, 1)]
    return run_guarded(tasks, args.jobs, catch=Exception)


def collect(work, seeds, updates):
    """A row per finished (objective, seed)."""
    rows = []
    for point in POINTS:
        for seed in seeds:
            path = work / f"s{seed}" / "points" / point / "result.json"
            if path.exists():
                result = json.loads(path.read_text())
                rows.append(dict(point=point, seed=seed, pretrain_updates=updates[point],
                                 pretrain_seconds=result["pretrain_seconds"],
                                 valid_bleu=result["bleu"], valid_chrf=result["chrf"],
                                 finetune_valid_ppl=result["finetune_valid_ppl"]))
    return rows


def report(work, rows):
    """WORK/compute-matched.csv and each objective's mean and range."""
    with open(work / "compute-matched.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, list(rows[0]) if rows else ["point"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'point':12s} {'updates':>7s} {'seeds':>5s} {'valid BLEU mean (range)':>26s} "
          f"{'chrF mean':>9s} {'pretrain s':>10s}")
    for point in POINTS:
        mine = [r for r in rows if r["point"] == point]
        if not mine:
            continue
        bleu = [r["valid_bleu"] for r in mine]
        print(f"{point:12s} {mine[0]['pretrain_updates']:7d} {len(mine):5d} "
              f"{statistics.mean(bleu):8.2f} ({min(bleu):.2f} to {max(bleu):.2f})     "
              f"{statistics.mean(r['valid_chrf'] for r in mine):9.2f} "
              f"{statistics.mean(r['pretrain_seconds'] for r in mine):10.0f}")
    print(f"== {len(rows)} run(s) in {work / 'compute-matched.csv'} (pretrain s: the "
          "pre-training's wall-clock in stage 3, where runs train side by side)")


def main(argv=None):
    args = parse_args(argv)
    work = Path(args.work_dir)
    failures = []
    if args.report_only:
        if not (work / "budget.json").exists():
            sys.exit(f"error: no {work / 'budget.json'}: run the command without "
                     "--report-only first")
        updates = json.loads((work / "budget.json").read_text())["updates"]
    else:
        extra = POINT_ARGS + args.analysis_args
        runners = {seed: denoising_gap.seed_runner(args, seed, extra) for seed in args.seeds}
        first = runners[args.seeds[0]]
        if sorted(p.name for p in analysis.points_of(first.args)) != sorted(POINTS):
            raise SystemExit(f"error: the points must be {', '.join(POINTS)}, not "
                             f"{', '.join(p.name for p in analysis.points_of(first.args))}")
        try:
            cost = write_timing(work, timing(args, first, analysis.points_of(first.args)))
        except (RuntimeError, ValueError) as error:
            sys.exit(f"error: the timing stopped: {error}")
        updates = budget(args, cost)
        failures = run_all(args, runners, updates)
    report(work, collect(work, args.seeds, updates))
    if failures:
        sys.exit(f"error: {len(failures)} run(s) failed: {', '.join(failures)}; fix the "
                 "cause and run the same command again")


if __name__ == "__main__":
    main()
