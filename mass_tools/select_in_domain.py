"""Pick the lines of a general corpus that look like an in-domain sample
(Moore and Lewis, 2010: cross-entropy difference).

    python -m mass_tools.select_in_domain --in-domain mono-doc/en.txt \\
        --candidates mono/en.txt --output mono.in-domain.en

Two add-one-smoothed word unigram language models are estimated, one on the
in-domain sample and one on the candidates themselves; a candidate line is
kept when its mean per-word cross-entropy under the in-domain model minus
that under the general model is below ``--threshold`` (0: the in-domain
model finds the line more likely). Lines are written in their input order.
Monolingual data selection only: no parallel text is involved.
"""

import argparse
import collections
import math
import re
import sys

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main

WORD = re.compile(r"\w+|[^\w\s]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-domain", required=True, help="in-domain text, one line each")
    parser.add_argument("--candidates", required=True, help="the corpus to select from")
    parser.add_argument("--output", default="-", help="selected lines (default: stdout)")
    parser.add_argument("--threshold", type=float, default=0.0,
                        help="keep lines whose cross-entropy difference (nats per word) "
                             "is below this (default: 0)")
    return parser.parse_args(argv)


def words(line):
    return WORD.findall(line.lower())


class UnigramLM:
    """Add-one-smoothed word unigram model: cost(word) in nats."""

    def __init__(self, lines):
        self.counts = collections.Counter(w for line in lines for w in words(line))
        if not self.counts:
            raise InputError("a language model needs text: the file has no words")
        self.log_total = math.log(sum(self.counts.values()) + len(self.counts) + 1)

    def cost(self, word):
        return self.log_total - math.log(self.counts[word] + 1)


def difference(line, in_domain, general):
    """Mean per-word cross-entropy under ``in_domain`` minus ``general``;
    None for a line without words."""
    tokens = words(line)
    if not tokens:
        return None
    return sum(in_domain.cost(w) - general.cost(w) for w in tokens) / len(tokens)


def main(argv=None):
    args = parse_args(argv)
    candidates = list(read_lines(args.candidates))
    try:
        in_domain = UnigramLM(read_lines(args.in_domain))
        general = UnigramLM(candidates)
    except InputError as err:
        raise InputError(f"{args.in_domain} or {args.candidates}: {err}") from None
    kept = 0
    with AtomicWriter(args.output) as out:
        for line in candidates:
            score = difference(line, in_domain, general)
            if score is not None and score < args.threshold:
                out.write(line + "\n")
                kept += 1
    sys.stderr.write(f"kept {kept} of {len(candidates)} lines of {args.candidates}\n")


if __name__ == "__main__":
    run_main(main)
