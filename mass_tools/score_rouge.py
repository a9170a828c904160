"""ROUGE-1/2/L F-measures (rouge-score, with stemming) of hypotheses against
references, one text per line:

    python -m mass_tools.score_rouge --reference test.summary --hypothesis hyp.txt
"""

import argparse
import sys

from rouge_score import rouge_scorer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True)
    parser.add_argument("--hypothesis", required=True)
    args = parser.parse_args(argv)
    with open(args.reference, encoding="utf-8") as f:
        references = f.read().splitlines()
    with open(args.hypothesis, encoding="utf-8") as f:
        hypotheses = f.read().splitlines()
    if len(references) != len(hypotheses):
        sys.exit(f"error: {len(hypotheses)} hypotheses for {len(references)} references")
    names = ("rouge1", "rouge2", "rougeL")
    scorer = rouge_scorer.RougeScorer(list(names), use_stemmer=True)
    totals = dict.fromkeys(names, 0.0)
    for reference, hypothesis in zip(references, hypotheses):
        scores = scorer.score(reference, hypothesis)
        for name in names:
            totals[name] += scores[name].fmeasure
    # the mean over the test set, as a percentage
    print(" ".join(f"ROUGE-{name[5:]} = {100 * totals[name] / len(references):.2f}"
                   for name in names))


if __name__ == "__main__":
    main()
