#!/usr/bin/env python3
"""Repair pairs from monolingual text: each line beside its round trip through the lexicon.

    python -m projects.unsupervised.lexicon_round_trip_pairs \\
        --lexicon lexicon.en-fr.tsv --lang-column 2 --lang fr --other-lang en \\
        --input mono.fr --output repair/train \\
        --noisy-suffix nfr --clean-suffix fr --copies 2 --placeholder '~'

Each line is translated word by word into the other language and back
(projects/unsupervised/translate_words.py's rules, same lexicon and --min-score), then
shuffled and thinned as projects/unsupervised/denoising_pairs.py does. The round trip makes
the mistakes word-by-word translation makes in this language: articles of
the wrong gender, the wrong sense of a word, the source's word order, for
a model that repairs word-by-word translations into this language (Kim et
al. 2018 trained theirs on shuffled and thinned text only; on the in-domain
corpus of projects/unsupervised/results.md it has not beaten word by word).
Each run of words that either direction of the lexicon lacks becomes one
``--placeholder`` on both sides, as translate_words.py --placeholder
replaces each run of source words the lexicon lacks, so the model learns
to keep them in place and projects/unsupervised/restore_placeholders.py can restore
them unchanged. Both sides are Moses-detokenised text; empty
lines are skipped; the same ``--seed`` gives the same files.
"""

import argparse
import random

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main
from projects.unsupervised.denoising_pairs import add_noise_arguments, check_noise_arguments, noised
from projects.unsupervised.translate_words import WordTranslator, read_lexicon


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", required=True, help="induce_lexicon.py's output")
    parser.add_argument("--lang-column", type=int, choices=(1, 2), required=True,
                        help="the lexicon's column in the input's language")
    parser.add_argument("--lang", required=True, help="language of the input (Moses)")
    parser.add_argument("--other-lang", required=True, help="the lexicon's other language")
    parser.add_argument("--min-score", type=float, default=None,
                        help="use only pairs scored at least this (as translate_words.py)")
    parser.add_argument("--placeholder", required=True,
                        help="symbol for the words the lexicon lacks (as translate_words.py); "
                        "never dropped")
    add_noise_arguments(parser)
    args = parser.parse_args(argv)
    check_noise_arguments(parser, args)
    return args


class RoundTrip:
    """(round-trip tokens, original tokens) of a line, placeholders on both."""

    def __init__(self, args):
        there = args.lang_column == 2
        self.there = WordTranslator(read_lexicon(args.lexicon, there, args.min_score),
                                    args.lang, args.other_lang)
        self.back = WordTranslator(read_lexicon(args.lexicon, not there, args.min_score),
                                   args.other_lang, args.lang)
        self.placeholder = args.placeholder

    def __call__(self, line):
        noisy, clean = [], []
        for token in self.there.tokens(line):
            other = self.there.lookup(token)
            back = None if other is None else self.back.lookup(other)
            if back is None or token == self.placeholder:
                if clean and clean[-1] == self.placeholder:  # one placeholder for a run
                    continue
                token = back = self.placeholder
            noisy.append(back)
            clean.append(token)
        return noisy, clean


def main(argv=None):
    args = parse_args(argv)
    round_trip = RoundTrip(args)
    detokenize = round_trip.back.detokenizer.detokenize
    rng = random.Random(args.seed)
    keep = {args.placeholder}
    pairs = 0
    with AtomicWriter(f"{args.output}.{args.noisy_suffix}") as noisy_out, \
            AtomicWriter(f"{args.output}.{args.clean_suffix}") as clean_out:
        for line in read_lines(args.input):
            noisy, clean = round_trip(line)
            if not clean:
                continue
            clean_line = detokenize(clean)
            for _ in range(args.copies):
                words = noised(noisy, args.shuffle, args.dropout, rng, keep)
                noisy_out.write(detokenize(words) + "\n")
                clean_out.write(clean_line + "\n")
                pairs += 1
    if not pairs:
        raise InputError(f"{args.input}: no non-empty line to noise")


if __name__ == "__main__":
    run_main(main)
