#!/usr/bin/env python3
"""Put back the words that translate_words.py --placeholder took out.

    python data-prep/restore_placeholders.py --input repaired.fr \\
        --masked words.masked --placeholder '~' --fallback words.fr --output out.fr

Line for line, each placeholder in --input is replaced by the next word of
the same line of --masked. Where a line has not kept exactly as many
placeholders as words were taken out, the model lost or invented one and
no order can be trusted: that line of --fallback (the unmasked word-by-word
translation) is written instead, and the count of such lines is reported
on stderr.
"""

import argparse
import sys

from textio import AtomicWriter, InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="text with placeholders")
    parser.add_argument("--masked", required=True, help="translate_words.py --masked output")
    parser.add_argument("--placeholder", required=True, help="the symbol used there")
    parser.add_argument("--fallback", required=True,
                        help="the line to write where the placeholders do not match")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    return parser.parse_args(argv)


def restore(line, words, placeholder):
    """``line`` with its placeholders replaced by ``words``; None if the counts differ."""
    parts = line.split(placeholder)
    if len(parts) != len(words) + 1:
        return None
    out = [parts[0]]
    for word, part in zip(words, parts[1:]):
        out += [word, part]
    return "".join(out)


def main(argv=None):
    args = parse_args(argv)
    files = [list(read_lines(path)) for path in (args.input, args.masked, args.fallback)]
    if len({len(lines) for lines in files}) != 1:
        counts = ", ".join(str(len(lines)) for lines in files)
        raise InputError(f"--input, --masked and --fallback have {counts} lines: they must "
                         "be the same text, line for line")
    fell_back = 0
    with AtomicWriter(args.output) as out:
        for line, masked, fallback in zip(*files):
            restored = restore(line, masked.split("\t") if masked else [], args.placeholder)
            if restored is None:
                restored, fell_back = fallback, fell_back + 1
            out.write(restored + "\n")
    print(f"{fell_back} of {len(files[0])} lines fell back to --fallback", file=sys.stderr)


if __name__ == "__main__":
    run_main(main)
