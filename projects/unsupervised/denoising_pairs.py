#!/usr/bin/env python3
"""Denoising pairs from monolingual text: noised copies of each line, next to the line.

    python -m projects.unsupervised.denoising_pairs --input mono.fr --output dae/train \\
        --noisy-suffix nfr --clean-suffix fr --copies 4

writes ``dae/train.nfr`` (the noised copies) and ``dae/train.fr`` (the
original line once per copy), ready for ``fairseq-preprocess -s nfr -t fr``.
The noise is Lample et al.'s (2018), on whitespace-separated words: every
word moves by less than ``--shuffle`` positions (each gets the key
position + U(0, shuffle), then the words are sorted by key), then each word
is dropped with probability ``--dropout`` (one is always kept). A model
trained on these pairs restores a language's sentences from a scrambled,
gappy version of them, such as the output of word-by-word translation
(projects/unsupervised/translate_words.py). Empty lines are skipped; the same
``--seed`` gives the same files.
"""

import argparse
import random

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_noise_arguments(parser)
    args = parser.parse_args(argv)
    check_noise_arguments(parser, args)
    return args


def add_noise_arguments(parser):
    """The input, output and noise options (also those of lexicon_round_trip_pairs.py)."""
    parser.add_argument("--input", required=True, help="monolingual text, one sentence a line")
    parser.add_argument("--output", required=True, help="output prefix")
    parser.add_argument("--noisy-suffix", required=True, help="suffix of the noised side")
    parser.add_argument("--clean-suffix", required=True, help="suffix of the original side")
    parser.add_argument("--copies", type=int, default=1, help="noised copies of each line")
    parser.add_argument("--shuffle", type=float, default=3.0,
                        help="words move by less than this many positions (0: no shuffle)")
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="probability of dropping each word")
    parser.add_argument("--seed", type=int, default=1)


def check_noise_arguments(parser, args):
    if args.copies < 1:
        parser.error(f"--copies {args.copies}: give at least 1")
    if args.shuffle < 0:
        parser.error(f"--shuffle {args.shuffle}: give 0 (off) or a positive distance")
    if not 0 <= args.dropout < 1:
        parser.error(f"--dropout {args.dropout}: give a probability in [0, 1)")
    if args.noisy_suffix == args.clean_suffix:
        parser.error("--noisy-suffix and --clean-suffix must differ")


def noised(words, shuffle, dropout, rng, keep=()):
    """``words`` shuffled locally, then thinned out (never the words in
    ``keep``); never empty."""
    keys = [i + rng.uniform(0, shuffle) for i in range(len(words))]
    moved = [word for _, word in sorted(zip(keys, words))]
    return [word for word in moved if word in keep or rng.random() >= dropout] or moved[:1]


def main(argv=None):
    args = parse_args(argv)
    rng = random.Random(args.seed)
    pairs = 0
    with AtomicWriter(f"{args.output}.{args.noisy_suffix}") as noisy, \
            AtomicWriter(f"{args.output}.{args.clean_suffix}") as clean:
        for line in read_lines(args.input):
            words = line.split()
            if not words:
                continue
            for _ in range(args.copies):
                noisy.write(" ".join(noised(words, args.shuffle, args.dropout, rng)) + "\n")
                clean.write(" ".join(words) + "\n")
                pairs += 1
    if not pairs:
        raise InputError(f"{args.input}: no non-empty line to noise")


if __name__ == "__main__":
    run_main(main)
