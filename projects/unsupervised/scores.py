"""The unsupervised recipe's scores: a direction's output scored with
sacreBLEU, a row of the work directory's ``valid.tsv`` or ``results.tsv``
(round, direction, BLEU, chrF, minutes); the round chosen on valid (the best
mean BLEU of the two directions, ties to chrF, then to the earlier round;
the test set plays no part); ``rounds.csv``, one row per test-scored round
in the columns of projects/unsupervised/results.csv, with what BLEU alone
does not show:

- ``p_L1_L2``, ``p_L2_L1``: the p-value of sacreBLEU's paired bootstrap
  (``--paired-bs``, 1,000 resamples) against round 0 (word by word), empty
  for round 0 itself;
- ``share_L2``, ``share_L1``: the share of each direction's output lines in
  its target language (mass_tools.output_stats, English and French only), so
  that fluent output in the wrong language cannot pass for progress.
"""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from mass_tools.output_stats import stats
from projects.unsupervised.commands import fail, output, progress

HEADER = "round\tdirection\tBLEU\tchrF\tminutes\n"
SHARE_KEYS = {"fr": "french_share", "en": "english_share"}


def sacrebleu(reference, hypotheses):
    """sacreBLEU's BLEU and chrF of ``hypotheses`` against ``reference``, as text."""
    return output(["sacrebleu", reference, "-i", hypotheses, "-m", "bleu", "chrf", "-w", "2",
                   "-f", "text"]).rstrip("\n")


def bleu_chrf(scores):
    """(BLEU, chrF) read from sacreBLEU's text output."""
    bleu = re.search(r"^[ \t]*BLEU\|\S+ = ([\d.]+)", scores, re.M)
    chrf = re.search(r"^chrF2\|\S+ = ([\d.]+)", scores, re.M)
    if not bleu or not chrf:
        fail(f"no BLEU and chrF score in: {scores}")
    return bleu.group(1), chrf.group(1)


def paired_p(reference, baseline, system, metrics=("bleu",)):
    """The p-values of sacreBLEU's paired bootstrap of ``system`` against
    ``baseline``: BLEU's, or a tuple, one per metric, where ``metrics``
    names more ("bleu", "chrf")."""
    proc = subprocess.run(["sacrebleu", str(reference), "-i", str(baseline), str(system),
                           "--paired-bs", "-m", *metrics, "-f", "json"],
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"error: sacrebleu's paired bootstrap of {system} against {baseline} failed "
                 f"(exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    scores = json.loads(proc.stdout)[1]
    names = {"bleu": "BLEU", "chrf": "chrF2"}
    ps = tuple(scores[names[m]]["p_value"] for m in metrics)
    return ps[0] if len(ps) == 1 else ps


def start_table(path, header=HEADER):
    """``path`` with ``header``, unless it is there already."""
    path = Path(path)
    if not path.is_file():
        path.write_text(header, encoding="utf-8")


def has_row(path, key, direction):
    """Whether the table at ``path`` has a row of ``key`` (a round, a system) and ``direction``."""
    start = f"{key}\t{direction}\t"
    return any(line.startswith(start)
               for line in Path(path).read_text(encoding="utf-8").splitlines())


def add_row(path, key, direction, scores, minutes):
    """Append the row of ``key`` and ``direction``: the BLEU and chrF of
    ``scores`` (sacreBLEU's text output) and ``minutes``."""
    bleu, chrf = bleu_chrf(scores)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{key}\t{direction}\t{bleu}\t{chrf}\t{minutes}\n")


def read_results(path):
    """{(round, direction): (bleu, chrf, minutes)} from a valid.tsv or results.tsv."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return {(int(r["round"]), r["direction"]): (r["BLEU"], r["chrF"], int(r["minutes"]))
            for r in rows}


def directions(langs):
    """('L1-L2', 'L2-L1'): the direction column of the tables."""
    l1, l2 = langs
    return f"{l1}-{l2}", f"{l2}-{l1}"


def rounds_both_ways(results, langs):
    """The rounds of ``read_results``'s table scored in both directions, in order."""
    return sorted({r for r, _ in results if all((r, d) in results for d in directions(langs))})


def means(results, langs):
    """{round: (mean BLEU, mean chrF)} of the rounds scored both ways."""
    both = directions(langs)
    # rounded, so that 11.61 / 12.60 and 11.91 / 12.30 tie as they read
    return {r: tuple(round(sum(float(results[(r, d)][i]) for d in both) / 2, 6) for i in (0, 1))
            for r in rounds_both_ways(results, langs)}


def choose(valid, langs):
    """The model round (>= 1) with the best mean valid BLEU, then chrF, then
    the earliest; None before any."""
    scores = means(valid, langs)
    rounds = [r for r in scores if r >= 1]
    return max(rounds, key=lambda r: (scores[r], -r)) if rounds else None


def scores_text(results, round_, langs):
    """'BLEU a / b (mean m)' of one round, or '' where it was not scored both ways."""
    if round_ not in rounds_both_ways(results, langs):
        return ""
    bleu = [float(results[(round_, d)][0]) for d in directions(langs)]
    return f"BLEU {bleu[0]:.2f} / {bleu[1]:.2f} (mean {sum(bleu) / 2:.2f})"


def summary(work, langs, round_):
    """The chosen round's lines: its valid and test scores, its model, and
    word by word where that is higher on valid."""
    valid = read_results(work / "valid.tsv")
    test = read_results(work / "results.tsv") if (work / "results.tsv").is_file() else {}
    names = " / ".join(d.replace("-", "->") for d in directions(langs))
    lines = [f"chosen on valid: round {round_} ({names}): valid "
             f"{scores_text(valid, round_, langs)}"]
    if scores_text(test, round_, langs):
        lines.append(f"its test {scores_text(test, round_, langs)}")
    lines.append(f"its model: {work / f'round{round_}/ckpt/checkpoint_last.pt'}")
    scores = means(valid, langs)
    if 0 in scores and scores[0] > scores[round_]:
        lines.append(f"word by word (round 0) is higher on valid: "
                     f"{scores_text(valid, 0, langs)}")
    return lines


def target_share(path, lang):
    if lang not in SHARE_KEYS:
        return ""
    return stats(Path(path).read_text(encoding="utf-8").splitlines())[SHARE_KEYS[lang]]


def round_row(work, langs, reference_prefix, system, updates, round_, results):
    """rounds.csv's row of ``round_`` (``updates``: per direction so far)."""
    row = {"system": system, "round": round_, "updates": updates, "minutes": 0}
    for src, tgt in (langs, langs[::-1]):
        bleu, chrf, minutes = results[(round_, f"{src}-{tgt}")]
        out = work / f"round{round_}.test.{src}-{tgt}.txt"
        row.update({f"bleu_{src}_{tgt}": bleu, f"chrf_{src}_{tgt}": chrf})
        row["minutes"] += minutes
        row[f"p_{src}_{tgt}"] = "" if round_ == 0 else paired_p(
            f"{reference_prefix}.{tgt}", work / f"round0.test.{src}-{tgt}.txt", out)
        row[f"share_{tgt}"] = target_share(out, tgt)
    return row


def write_rounds(work, langs, reference_prefix, system, updates, first_updates):
    """WORK/rounds.csv from results.tsv: a row per round scored both ways,
    round 1 trained ``first_updates``, each later round ``updates`` more;
    its last row shown as ``== rounds.csv: ROW``."""
    results = read_results(work / "results.tsv")
    pairs = ["_".join(langs), "_".join(langs[::-1])]
    columns = (["system", "round", "updates"] + [f"bleu_{p}" for p in pairs]
               + [f"chrf_{p}" for p in pairs] + ["minutes"] + [f"p_{p}" for p in pairs]
               + [f"share_{langs[1]}", f"share_{langs[0]}"])
    # every row first (the bootstrap is slow), so the old file stays whole until it is replaced
    rows = [round_row(work, langs, reference_prefix, system,
                      0 if r == 0 else first_updates + (r - 1) * updates, r, results)
            for r in rounds_both_ways(results, langs)]
    with open(work / "rounds.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    if rows:
        progress("== rounds.csv: " + ",".join(str(rows[-1][c]) for c in columns))


def show_tables(work, test=True):
    """results.tsv and rounds.csv of ``work`` in columns; valid.tsv where
    the test set was not scored (``test`` False)."""
    if not test:
        print_columns(Path(work) / "valid.tsv", "\t")
        return
    print_columns(Path(work) / "results.tsv", "\t")
    print_columns(Path(work) / "rounds.csv", ",")


def print_columns(path, separator):
    """PATH's rows with each column padded to its widest cell, two spaces
    apart, as ``column -t`` prints them (util-linux is not everywhere)."""
    rows = [line.split(separator) for line in
            Path(path).read_text(encoding="utf-8").splitlines() if line]
    widths = [max(len(row[i]) for row in rows if i < len(row))
              for i in range(max(map(len, rows), default=0))]
    for row in rows:
        progress("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
