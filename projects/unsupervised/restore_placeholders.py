#!/usr/bin/env python3
"""Put back the words that translate_words.py --placeholder took out.

    python -m projects.unsupervised.restore_placeholders --input repaired.fr \\
        --masked words.masked --placeholder '~' --fallback words.fr --output out.fr

Line for line, each placeholder in --input is replaced by the next word of
the same line of --masked. Where a line has not kept exactly as many
placeholders as words were taken out, the model lost or invented one and
no order can be trusted: that line of --fallback (the unmasked word-by-word
translation) is written instead, and the count of such lines is reported
on stderr.

With ``--nbest N`` --input holds N hypotheses for each line, best first
(fairseq-generate --nbest N, its D- lines in order), and the first that
kept every placeholder is used; the count of lines that took a later one
is reported too.
"""

import argparse
import sys

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="text with placeholders")
    parser.add_argument("--masked", required=True, help="translate_words.py --masked output")
    parser.add_argument("--placeholder", required=True, help="the symbol used there")
    parser.add_argument("--fallback", required=True,
                        help="the line to write where the placeholders do not match")
    parser.add_argument("--nbest", type=int, default=1,
                        help="hypotheses per line in --input, best first (default: 1)")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    args = parser.parse_args(argv)
    if args.nbest < 1:
        parser.error(f"--nbest {args.nbest}: give 1 or more")
    return args


def restore(line, words, placeholder):
    """``line`` with its placeholders replaced by ``words``; None if the counts differ."""
    parts = line.split(placeholder)
    if len(parts) != len(words) + 1:
        return None
    out = [parts[0]]
    for word, part in zip(words, parts[1:]):
        out += [word, part]
    return "".join(out)


def first_restored(hypotheses, words, placeholder):
    """(the first of ``hypotheses`` restored, its rank); (None, None) if none keeps them all."""
    for rank, line in enumerate(hypotheses):
        restored = restore(line, words, placeholder)
        if restored is not None:
            return restored, rank
    return None, None


def main(argv=None):
    args = parse_args(argv)
    hypotheses, masked, fallback = (list(read_lines(path))
                                    for path in (args.input, args.masked, args.fallback))
    if len(hypotheses) != args.nbest * len(masked) or len(masked) != len(fallback):
        raise InputError(f"--input, --masked and --fallback have {len(hypotheses)}, "
                         f"{len(masked)}, {len(fallback)} lines: they must be the same text, "
                         f"line for line, with --nbest {args.nbest} lines of --input for each")
    fell_back = later = 0
    with AtomicWriter(args.output) as out:
        for i, (words, default) in enumerate(zip(masked, fallback)):
            n_best = hypotheses[i * args.nbest:(i + 1) * args.nbest]
            restored, rank = first_restored(n_best, words.split("\t") if words else [],
                                            args.placeholder)
            if restored is None:
                restored, fell_back = default, fell_back + 1
            later += bool(rank)
            out.write(restored + "\n")
    print(f"{fell_back} of {len(masked)} lines fell back to --fallback", file=sys.stderr)
    if args.nbest > 1:
        print(f"{later} lines took a hypothesis after the first", file=sys.stderr)


if __name__ == "__main__":
    run_main(main)
