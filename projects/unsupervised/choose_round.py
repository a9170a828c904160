"""The round of projects/unsupervised/repair.sh to keep, chosen on the valid set.

    python -m projects.unsupervised.choose_round --work-dir work/unsup-repair --langs en,fr

reads the recipe's ``valid.tsv`` (and ``results.tsv``) and prints the model
round (1 and later, scored on valid both ways) with the highest mean valid
BLEU of the two directions, ties going to the higher mean chrF, then to the
earlier round; its test scores; and whether word by word (round 0) is higher
on valid still. ``--round-only`` prints the round's number alone (the recipe
uses it to link ``best.pt`` and to stop once ``PATIENCE`` rounds have passed
without a better one). The test set plays no part in the choice.
"""

import argparse
from pathlib import Path

from projects.unsupervised.rounds_table import directions, read_results, rounds_both_ways, two_langs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", required=True, help="the recipe's WORK_DIR")
    parser.add_argument("--langs", default="en,fr", type=two_langs,
                        help="L1,L2 as given to the recipe")
    parser.add_argument("--round-only", action="store_true",
                        help="print the chosen round's number alone")
    return parser.parse_args(argv)


def means(results, langs):
    """{round: (mean BLEU, mean chrF)} of the rounds scored both ways."""
    both = directions(langs)
    rounds = rounds_both_ways(results, langs)
    # rounded, so that 11.61 / 12.60 and 11.91 / 12.30 tie as they read
    return {r: tuple(round(sum(float(results[(r, d)][i]) for d in both) / 2, 6) for i in (0, 1))
            for r in rounds}


def choose(results, langs):
    """The model round (>= 1) with the best mean valid BLEU, then chrF, then the
    earliest; None before any."""
    scores = means(results, langs)
    rounds = [r for r in scores if r >= 1]
    if not rounds:
        return None
    return max(rounds, key=lambda r: (scores[r], -r))


def scores_text(results, round_, langs):
    """'BLEU a / b (mean m)' of one round, or '' where it was not scored both ways."""
    if round_ not in rounds_both_ways(results, langs):
        return ""
    bleu = [float(results[(round_, d)][0]) for d in directions(langs)]
    return f"BLEU {bleu[0]:.2f} / {bleu[1]:.2f} (mean {sum(bleu) / 2:.2f})"


def summary(work, langs, round_, valid):
    """The chosen round's lines: valid and test scores, its model, word by word."""
    test_path = work / "results.tsv"
    test = read_results(test_path) if test_path.is_file() else {}
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


def main(argv=None):
    args = parse_args(argv)
    work = Path(args.work_dir)
    path = work / "valid.tsv"
    if not path.is_file():
        raise SystemExit(f"error: --work-dir {args.work_dir}: no valid.tsv there (the "
                         "WORK_DIR of projects/unsupervised/repair.sh run with VALID_PREFIX)")
    valid = read_results(path)
    round_ = choose(valid, args.langs)
    if round_ is None:
        raise SystemExit(f"error: {path}: no round after round 0 scored in both directions "
                         "yet")
    if args.round_only:
        print(round_)
        return
    print("\n".join(summary(work, args.langs, round_, valid)))


if __name__ == "__main__":
    main()
