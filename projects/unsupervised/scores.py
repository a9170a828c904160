"""The scores of the recipes written in Python (repair.py, offline_bt.py): a
direction's output scored with sacreBLEU, a row of their ``results.tsv``
(round, direction, BLEU, chrF, minutes), ``rounds.csv`` after a round
(projects.unsupervised.rounds_table), and the tables shown at the end."""

import re
from pathlib import Path

from projects.unsupervised import rounds_table
from projects.unsupervised.commands import call, fail, output, progress

HEADER = "round\tdirection\tBLEU\tchrF\tminutes\n"


def start_table(path, header=HEADER):
    """``path`` with ``header`` (results.tsv's), unless it is there already."""
    path = Path(path)
    if not path.is_file():
        path.write_text(header, encoding="utf-8")


def has_row(path, round_, direction):
    """Whether the table at ``path`` has a row of ``round_`` and ``direction``."""
    start = f"{round_}\t{direction}\t"
    return any(line.startswith(start)
               for line in Path(path).read_text(encoding="utf-8").splitlines())


def add_row(path, round_, direction, scores, minutes):
    """Append the row of ``round_`` and ``direction``: the BLEU and chrF of
    ``scores`` (sacreBLEU's text output) and ``minutes``."""
    bleu, chrf = bleu_chrf(scores)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{round_}\t{direction}\t{bleu}\t{chrf}\t{minutes}\n")


def sacrebleu(reference, hypotheses):
    """sacreBLEU's BLEU and chrF of ``hypotheses`` against ``reference``, as text."""
    return output(["sacrebleu", reference, "-i", hypotheses, "-m", "bleu", "chrf", "-w", "2",
                   "-f", "text"]).rstrip("\n")


def bleu_chrf(scores):
    """(BLEU, chrF) read from sacreBLEU's text output, as common.sh's bleu_chrf reads them."""
    bleu = re.search(r"^[ \t]*BLEU\|\S+ = ([\d.]+)", scores, re.M)
    chrf = re.search(r"^chrF2\|\S+ = ([\d.]+)", scores, re.M)
    if not bleu or not chrf:
        fail(f"no BLEU and chrF score in: {scores}")
    return bleu.group(1), chrf.group(1)


def write_rounds(*argv):
    """rounds.csv (projects.unsupervised.rounds_table with ``argv``), its last
    row shown as ``== rounds.csv: ROW``."""
    lines = call(rounds_table.main, *argv).splitlines()
    if lines:
        progress(f"== rounds.csv: {lines[-1]}")


def show_tables(work, test=True):
    """results.tsv and rounds.csv of ``work``, in columns; valid.tsv
    where the test set was not scored (``test`` False)."""
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
