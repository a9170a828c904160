"""projects/paper_analysis/__main__.py's results: results.csv and the four panels of
results.png."""

import csv

from projects.quiet_logs import quiet_logs

CSV_FIELDS = ["point", "kind", "mask_ratio", "ppl_own_masking", "ppl_span50",
              "finetune_valid_ppl", "bleu", "chrf", "scored_on", "pretrain_seconds",
              "total_seconds"]
PANELS = [("ppl_span50", "masked-span ppl, 50% span (pre-trained)"),
          ("ppl_own_masking", "masked-span ppl, own masking (pre-trained)"),
          ("finetune_valid_ppl", "valid ppl after fine-tuning"),
          ("bleu", "BLEU after fine-tuning")]
# the ablations are single points at their ratio, the baselines horizontal lines
MARKERS = {"discrete": ("X", "tab:red"), "feed": ("^", "tab:green"),
           "whole": ("s", "tab:brown")}
LINES = {"none": "tab:gray", "dae": "tab:purple", "bert_lm": "tab:orange"}


def write_csv(rows, path):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row.get(key, "") for key in CSV_FIELDS})


def plot(rows, path, title=""):
    import matplotlib

    matplotlib.use("Agg")
    quiet_logs()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    axes = axes.ravel()
    for ax, (key, label) in zip(axes, PANELS):
        draw_panel(ax, rows, key, label)
    handles, labels = axes[-1].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axes[-1].legend(unique.values(), unique.keys(), fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_panel(ax, rows, key, label):
    """``key`` of every row against the span length: the MASS sweep as a
    curve, the ablations as markers, the baselines as dashed lines."""
    measured = [r for r in rows if r.get(key) not in (None, "")]
    sweep = sorted((r for r in measured if r["kind"] == "mass"), key=lambda r: r["mask_ratio"])
    ax.plot([r["mask_ratio"] for r in sweep], [r[key] for r in sweep], "o-",
            color="tab:blue", label="MASS")
    for r in measured:
        if r["kind"] in MARKERS:
            marker, color = MARKERS[r["kind"]]
            ax.plot([r["mask_ratio"]], [r[key]], marker, color=color, markersize=9,
                    label=r["kind"])
        if r["kind"] in LINES:
            ax.axhline(r[key], linestyle="--", color=LINES[r["kind"]], label=r["kind"])
    ax.set_xlim(-0.05, 1.05)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_xticklabels(["k=1", "25%", "50%", "75%", "k=m"])
    ax.set_xlabel("masked span length k (share of the sentence)")
    ax.set_title(label, fontsize=10)
    ax.grid(alpha=0.3)
