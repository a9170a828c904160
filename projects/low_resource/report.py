"""The outputs of projects/low_resource/curve.py from its finished runs: the
CSV of every run, sacreBLEU's paired bootstrap of each MASS run against
random initialisation at the same N, seed and direction, and the plot."""

import csv
import json
import subprocess
from collections import defaultdict

COLUMNS = ("n_pairs", "init", "seed", "direction", "bleu", "chrf", "valid_nll", "minutes",
           "valid_bleu")
BOOTSTRAP_COLUMNS = ("n_pairs", "seed", "direction", "init", "bleu", "random_bleu",
                     "delta", "p_value")


def finished_results(work, runs):
    results = []
    for run in runs:
        path = work / "runs" / run.name / "result.json"
        if path.exists():
            results.append((run, json.loads(path.read_text())))
    return results


def write_reports(work, runs, tests):
    """For each test set (None: the para test set) its CSV and bootstrap CSV;
    the plot of the para test set."""
    results = finished_results(work, runs)
    for test in tests:
        suffix = "" if test is None else f".{test}"
        key = test or "test"
        rows = [dict({c: result[c] for c in COLUMNS if c in result}, **result["scores"][key])
                for _, result in results if key in result["scores"]]
        write_csv(work / f"low-resource{suffix}.csv", COLUMNS, rows)
        scored = [(run, result) for run, result in results if key in result["scores"]]
        pairs = bootstrap_rows(work, scored, key, "test" if test is None else f"test-{test}")
        write_csv(work / f"bootstrap{suffix}.csv", BOOTSTRAP_COLUMNS, pairs)
        if test is None:
            plot(work / "low-resource.png", rows)
    print(f"== {len(results)} of {len(runs)} runs in {work}/low-resource.csv, "
          f"bootstrap.csv and low-resource.png", flush=True)


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def bootstrap_rows(work, results, key, stem):
    """sacreBLEU's paired bootstrap (1,000 resamples) of every MASS run
    against the random run of the same N, seed and direction; each result is
    kept beside the MASS run's hypotheses."""
    random_runs = {(r.n_pairs, r.seed, r.direction): r for r, _ in results
                   if r.init == "random"}
    rows = []
    for run, result in results:
        baseline = random_runs.get((run.n_pairs, run.seed, run.direction))
        if run.init == "random" or baseline is None:
            continue
        cache = work / "runs" / run.name / f"{stem}.bootstrap.json"
        if not cache.exists():
            cache.write_text(json.dumps(paired_bootstrap(
                work / "runs" / baseline.name / f"{stem}.txt",
                work / "runs" / run.name / f"{stem}.txt", result["scores"][key]["reference"])))
        test = json.loads(cache.read_text())
        rows.append(dict(n_pairs=run.n_pairs, seed=run.seed, direction=run.direction,
                         init=run.init, bleu=test["bleu"], random_bleu=test["random_bleu"],
                         delta=round(test["bleu"] - test["random_bleu"], 2),
                         p_value=test["p_value"]))
    return rows


def paired_bootstrap(baseline, system, reference):
    out = subprocess.run(["sacrebleu", str(reference), "-i", str(baseline), str(system),
                          "-m", "bleu", "--paired-bs", "-f", "json"],
                         capture_output=True, text=True, check=True).stdout
    base, other = json.loads(out)
    return {"random_bleu": round(base["BLEU"]["score"], 2),
            "bleu": round(other["BLEU"]["score"], 2),
            "p_value": round(other["BLEU"]["p_value"], 4)}


def plot(path, rows):
    """BLEU against N (log scale), one panel per direction, one line per
    initialisation through the mean over seeds, each seed a dot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directions = sorted({row["direction"] for row in rows}) or ["-"]
    fig, axes = plt.subplots(1, len(directions), figsize=(5 * len(directions), 4),
                             squeeze=False)
    for ax, direction in zip(axes[0], directions):
        by_init = defaultdict(lambda: defaultdict(list))
        for row in rows:
            if row["direction"] == direction:
                by_init[row["init"]][row["n_pairs"]].append(row["bleu"])
        for init, points in sorted(by_init.items()):
            sizes = sorted(points)
            means = [sum(points[n]) / len(points[n]) for n in sizes]
            line, = ax.plot(sizes, means, marker="o", label=init)
            for n in sizes:
                ax.scatter([n] * len(points[n]), points[n], color=line.get_color(),
                           s=12, alpha=0.6)
        ax.set_xscale("log")
        sizes = sorted({row["n_pairs"] for row in rows})
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("training pairs")
        ax.set_ylabel("BLEU (test)")
        ax.set_title(direction)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
