"""One row per round of projects/unsupervised/offline_bt.sh (or repair.sh), in
the columns of projects/unsupervised/results.csv, with what BLEU alone does not show.

    python -m projects.unsupervised.rounds_table --work-dir work/unsup-offline --langs en,fr \\
        --reference-prefix SHARED/para/en-fr/test --system wbw_then_bt --updates-per-round 2000

reads the recipe's ``results.tsv`` and test-set outputs and writes
``rounds.csv`` next to them: for each round scored in both directions,

- ``system, round, updates, bleu_L1_L2, bleu_L2_L1, chrf_L1_L2, chrf_L2_L1,
  minutes``: updates per direction so far, minutes of both directions;
- ``p_L1_L2``, ``p_L2_L1``: the p-value of sacreBLEU's paired bootstrap
  (``--paired-bs``, 1,000 resamples) of the round's BLEU against round 0's
  (word by word with a lexicon, else the starting checkpoint), empty for
  round 0 itself;
- ``share_L2``, ``share_L1``: the share of each direction's output lines in
  its target language (mass_tools.output_stats, English and French only), so
  that a fluent but untranslated output cannot pass for progress.

The recipe runs it after each round; it can be rerun at any time.
"""

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

from mass_tools.output_stats import stats

SHARE_KEYS = {"fr": "french_share", "en": "english_share"}


def two_langs(text):
    """--langs: 'L1,L2' as given to the recipe, as a list of two."""
    langs = text.split(",")
    if len(langs) != 2:
        raise argparse.ArgumentTypeError(f"{text}: give two languages, L1,L2")
    return langs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", required=True, help="the recipe's WORK_DIR")
    parser.add_argument("--langs", default="en,fr", type=two_langs,
                        help="L1,L2 as given to the recipe")
    parser.add_argument("--reference-prefix", required=True,
                        help="the recipe's REFERENCE_PREFIX (raw test text, .L1 and .L2)")
    parser.add_argument("--subset", default="test", help="the recipe's TEST_SUBSET")
    parser.add_argument("--system", default="offline_bt", help="the csv's system column")
    parser.add_argument("--updates-per-round", type=int, required=True,
                        help="the recipe's MAX_UPDATE (projects/unsupervised/repair.sh: UPDATES)")
    parser.add_argument("--first-round-updates", type=int, default=None,
                        help="round 1's updates where they differ "
                        "(projects/unsupervised/repair.sh: FIRST_UPDATES)")
    parser.add_argument("--output", default=None, help="default: WORK_DIR/rounds.csv")
    return parser.parse_args(argv)


def directions(langs):
    """('L1-L2', 'L2-L1'): the direction column of the recipe's tables."""
    l1, l2 = langs
    return f"{l1}-{l2}", f"{l2}-{l1}"


def rounds_both_ways(results, langs):
    """The rounds of ``read_results``'s table scored in both directions, in order."""
    return sorted({r for r, _ in results
                   if all((r, d) in results for d in directions(langs))})


def read_results(path):
    """{(round, direction): (bleu, chrf, minutes)} from the recipe's results.tsv."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return {(int(r["round"]), r["direction"]): (r["BLEU"], r["chrF"], int(r["minutes"]))
            for r in rows}


def paired_p(reference, baseline, system, metrics=("bleu",)):
    """The p-values of sacreBLEU's paired bootstrap of ``system`` against
    ``baseline``: BLEU's, or one per metric where ``metrics`` names more
    (a tuple in their order: "bleu", "chrf")."""
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


def target_share(path, lang):
    if lang not in SHARE_KEYS:
        return ""
    return stats(Path(path).read_text(encoding="utf-8").splitlines())[SHARE_KEYS[lang]]


def round_row(args, results, round_):
    work = Path(args.work_dir)
    l1, l2 = args.langs
    first = args.updates_per_round if args.first_round_updates is None \
        else args.first_round_updates
    updates = 0 if round_ == 0 else first + (round_ - 1) * args.updates_per_round
    row = {"system": args.system, "round": round_, "updates": updates, "minutes": 0}
    for src, tgt in ((l1, l2), (l2, l1)):
        bleu, chrf, minutes = results[(round_, f"{src}-{tgt}")]
        output = work / f"round{round_}.{args.subset}.{src}-{tgt}.txt"
        reference = f"{args.reference_prefix}.{tgt}"
        row.update({f"bleu_{src}_{tgt}": bleu, f"chrf_{src}_{tgt}": chrf})
        row["minutes"] += minutes
        row[f"p_{src}_{tgt}"] = "" if round_ == 0 else paired_p(
            reference, work / f"round0.{args.subset}.{src}-{tgt}.txt", output)
        row[f"share_{tgt}"] = target_share(output, tgt)
    return row


def columns(l1, l2):
    pairs = (f"{l1}_{l2}", f"{l2}_{l1}")
    return (["system", "round", "updates"] + [f"bleu_{p}" for p in pairs]
            + [f"chrf_{p}" for p in pairs] + ["minutes"] + [f"p_{p}" for p in pairs]
            + [f"share_{l2}", f"share_{l1}"])


def main(argv=None):
    args = parse_args(argv)
    l1, l2 = args.langs
    path = Path(args.work_dir) / "results.tsv"
    if not path.is_file():
        raise SystemExit(f"error: --work-dir {args.work_dir}: no results.tsv there (the "
                         "WORK_DIR of projects/unsupervised/offline_bt.sh, after round 0)")
    results = read_results(path)
    rounds = rounds_both_ways(results, args.langs)
    output = args.output or Path(args.work_dir) / "rounds.csv"
    # every row first (the bootstrap is slow), so the old file stays whole until it is replaced
    rows = [round_row(args, results, round_) for round_ in rounds]
    with open(output, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns(l1, l2))
        writer.writeheader()
        writer.writerows(rows)
    print(Path(output).read_text(encoding="utf-8"), end="")


if __name__ == "__main__":
    main()
