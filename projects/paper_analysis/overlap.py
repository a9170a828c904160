"""Per-sentence gain of each pre-training against the overlap between the
source and its reference: does an objective lead where the translation can
copy words from the source? No training: the hypotheses the paper analysis
wrote (``points/POINT/SUBSET.SRC-TGT.txt``) are scored sentence by sentence.

    python -m projects.paper_analysis.overlap --raw-dir examples/data \\
        --subset valid --baseline mass_r0.50 work/denoising-gap/s1 work/denoising-gap/s2

Words are sacreBLEU's 13a tokens holding a letter or a digit (punctuation
left out). A sentence's overlap is the share of its reference's words that
appear verbatim in its source. A point's score on a sentence is sentence
chrF, averaged over the work directories given (one per seed); its gain is
that score minus ``--baseline``'s. Printed: the overlap's distribution, each
point's copy rate (the share of its output's words found in the source,
against the references'), the mean gain in bins of overlap (none, up to
10%, 20%, 30%, more), and the correlation of gain with overlap. ``--out`` gets a row per
sentence.
"""

import argparse
import csv
import statistics
from pathlib import Path

from sacrebleu import sentence_chrf
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

_TOKENIZE = Tokenizer13a()


def words(line):
    """The 13a tokens of ``line`` that hold a letter or a digit."""
    return [t for t in _TOKENIZE(line.strip()).split() if any(c.isalnum() for c in t)]


def share_in(tokens, source_words):
    """The share of ``tokens`` found in the set ``source_words`` (0 if none)."""
    return sum(t in source_words for t in tokens) / len(tokens) if tokens else 0.0


def read_lines(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


def point_scores(work_dirs, point, name, references, source_words):
    """Sentence chrF of ``point`` averaged over ``work_dirs``, and its copy
    rate (the share of its output's words found in the source) over them all."""
    runs = [read_lines(Path(d) / "points" / point / name) for d in work_dirs]
    for d, hyps in zip(work_dirs, runs):
        if len(hyps) != len(references):
            raise SystemExit(f"error: {Path(d) / 'points' / point / name}: {len(hyps)} lines "
                             f"for {len(references)} references")
    per_run = [[sentence_chrf(h, [r]).score for h, r in zip(hyps, references)] for hyps in runs]
    copied = [share_in(words(h), sw) for hyps in runs for h, sw in zip(hyps, source_words)]
    return [statistics.mean(scores) for scores in zip(*per_run)], statistics.mean(copied)


def common_points(work_dirs, name):
    """The points with hypotheses ``name`` in every work directory."""
    found = [{p.parent.name for p in (Path(d) / "points").glob(f"*/{name}")} for d in work_dirs]
    return sorted(set.intersection(*found)) if found else []


# overlap bins: none, then (low, high]
BINS = [("0", 0.0, 0.0), ("(0, 10%]", 0.0, 0.1), ("(10, 20%]", 0.1, 0.2),
        ("(20, 30%]", 0.2, 0.3), ("> 30%", 0.3, 1.0)]


def in_bin(value, low, high):
    return value == 0 if high == 0 else low < value <= high


def summarise(overlap, scores, copy_rates, reference_copy, baseline):
    """The printed analysis."""
    n = len(overlap)
    print(f"== {n} sentences; reference words found in the source: mean "
          f"{statistics.mean(overlap):.1%}, median {statistics.median(overlap):.1%}, "
          f"none in {sum(o == 0 for o in overlap) / n:.1%} of the sentences")
    print(f"copy rate (output words found in the source): references {reference_copy:.1%}; "
          + ", ".join(f"{p} {rate:.1%}" for p, rate in copy_rates.items()))
    sizes = [sum(in_bin(o, low, high) for o in overlap) for _, low, high in BINS]
    print(f"mean sentence chrF gain over {baseline}, by overlap (sentences per bin: "
          + ", ".join(f"{label} {n}" for (label, _, _), n in zip(BINS, sizes)) + "):")
    print(" | ".join(["point", "chrF", *(label for label, _, _ in BINS), "r(gain, overlap)"]))
    for point, score in scores.items():
        gain = [a - b for a, b in zip(score, scores[baseline])]
        cells = [point, f"{statistics.mean(score):.2f}"]
        for _, low, high in BINS:
            inside = [g for g, o in zip(gain, overlap) if in_bin(o, low, high)]
            cells.append(f"{statistics.mean(inside):+.2f}" if inside else "-")
        varies = point != baseline and len(set(gain)) > 1
        cells.append(f"{statistics.correlation(gain, overlap):+.3f}" if varies else "-")
        print(" | ".join(cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work_dirs", nargs="+", help="paper-analysis work directories")
    parser.add_argument("--raw-dir", default="examples/data")
    parser.add_argument("--pair", default="en-fr")
    parser.add_argument("--subset", default="valid", choices=("valid", "test"))
    parser.add_argument("--baseline", default="mass_r0.50",
                        help="the point gains are measured against")
    parser.add_argument("--out", help="CSV, a row per sentence")
    args = parser.parse_args(argv)
    src, tgt = args.pair.split("-")
    sources = read_lines(Path(args.raw_dir) / f"{args.subset}.{src}")
    references = read_lines(Path(args.raw_dir) / f"{args.subset}.{tgt}")
    name = f"{args.subset}.{src}-{tgt}.txt"
    points = common_points(args.work_dirs, name)
    if args.baseline not in points:
        print(f"== overlap: no {name} of {args.baseline} in every work directory yet")
        return
    source_words = [set(words(s)) for s in sources]
    overlap = [share_in(words(r), sw) for r, sw in zip(references, source_words)]
    scores, copy_rates = {}, {}
    for point in points:
        scores[point], copy_rates[point] = point_scores(args.work_dirs, point, name,
                                                         references, source_words)
    summarise(overlap, scores, copy_rates, statistics.mean(overlap), args.baseline)
    if args.out:
        with open(args.out, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["sentence", "overlap", *points])
            for i, o in enumerate(overlap):
                writer.writerow([i, f"{o:.4f}", *(f"{scores[p][i]:.2f}" for p in points)])


if __name__ == "__main__":
    main()
