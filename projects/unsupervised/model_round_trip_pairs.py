#!/usr/bin/env python3
"""Repair pairs from monolingual text and its translation there and back.

    python -m projects.unsupervised.model_round_trip_pairs --input mono.en --back back.en \\
        --lexicon one.en-fr.tsv --min-score 0.1 --lang en --placeholder '~' \\
        --output repair/train --noisy-suffix nen --clean-suffix en

--back holds each line of --input translated into the other language and
back again, its own placeholders kept: for example word by word with
translate_words.py --placeholder (the same --lexicon and --min-score as
here), repaired by a model that writes the other language, and translated
back word by word with --placeholder. Word by word from text a model wrote
makes the mistakes it makes at test time on real text in the other
language (French articles and elisions, more words than English needs),
which a round trip through the lexicon alone does not (data-prep/
lexicon_round_trip_pairs.py: "the" -> "la" -> "the").

The clean side is the --input line with each run of words --lexicon lacks
as one --placeholder, as translate_words.py masked it on the way out.
A pair is written only where both sides have as many placeholders, since
projects/unsupervised/restore_placeholders.py can use only such output; the count kept
is reported on stderr.
"""

import argparse
import sys

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main
from projects.unsupervised.translate_words import WordTranslator, read_lexicon


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="monolingual text, one sentence a line")
    parser.add_argument("--back", required=True,
                        help="--input translated into the other language and back, line for line")
    parser.add_argument("--lexicon", required=True,
                        help="the lexicon that translated --input on the way out "
                        "(source<TAB>target[<TAB>score], as translate_words.py)")
    parser.add_argument("--reverse", action="store_true",
                        help="--input is in the lexicon's second column (as translate_words.py)")
    parser.add_argument("--min-score", type=float, default=None,
                        help="the --min-score used with it (as translate_words.py)")
    parser.add_argument("--lang", required=True, help="language of --input (Moses)")
    parser.add_argument("--placeholder", required=True,
                        help="the symbol translate_words.py --placeholder used")
    parser.add_argument("--output", required=True, help="output prefix")
    parser.add_argument("--noisy-suffix", required=True, help="suffix of the --back side")
    parser.add_argument("--clean-suffix", required=True, help="suffix of the --input side")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    lexicon = read_lexicon(args.lexicon, args.reverse, args.min_score)
    # every word the lexicon knows translated to itself: the text, masked
    mask = WordTranslator({word: word for word in lexicon}, args.lang, args.lang,
                          args.placeholder)
    lines = [list(read_lines(path)) for path in (args.input, args.back)]
    if len(lines[0]) != len(lines[1]):
        raise InputError(f"--input has {len(lines[0])} lines, --back {len(lines[1])}: "
                         "--back must translate --input line for line")
    kept = 0
    with AtomicWriter(f"{args.output}.{args.noisy_suffix}") as noisy_out, \
            AtomicWriter(f"{args.output}.{args.clean_suffix}") as clean_out:
        for line, back in zip(*lines):
            clean = mask(line, [])
            if not clean or not back.strip() or \
                    clean.count(args.placeholder) != back.count(args.placeholder):
                continue
            noisy_out.write(back.strip() + "\n")
            clean_out.write(clean + "\n")
            kept += 1
    if not kept:
        raise InputError(f"{args.back}: no line has as many placeholders as its --input line")
    print(f"{kept} of {len(lines[0])} lines kept (as many placeholders on both sides)",
          file=sys.stderr)


if __name__ == "__main__":
    run_main(main)
