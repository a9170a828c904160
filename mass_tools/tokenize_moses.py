"""Normalise and tokenise text with sacremoses (Moses), one line in, one out.

    python -m mass_tools.tokenize_moses --lang en < raw.en > tok.en

For sentencepiece, which works on raw text, use --normalize-only (or skip
this step). Empty input lines stay empty so parallel files stay aligned.
"""

import argparse

from sacremoses import MosesPunctNormalizer, MosesTokenizer

from mass_tools.textio import AtomicWriter, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, help="language code, e.g. en, fr, de")
    parser.add_argument("--input", default="-", help="input file (default: stdin)")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    parser.add_argument("--normalize-only", action="store_true",
                        help="normalise punctuation but do not tokenise")
    parser.add_argument("--lowercase", action="store_true", help="lowercase the text")
    parser.add_argument("--encoding-errors", default="strict",
                        choices=["strict", "replace", "ignore"],
                        help="what to do with bytes that are not UTF-8 (default: stop)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    normalizer = MosesPunctNormalizer(lang=args.lang)
    tokenizer = MosesTokenizer(lang=args.lang)
    with AtomicWriter(args.output) as out:
        for line in read_lines(args.input, args.encoding_errors):
            line = normalizer.normalize(line).strip()
            if not args.normalize_only and line:
                line = tokenizer.tokenize(line, escape=False, return_str=True)
            if args.lowercase:
                line = line.lower()
            out.write(line + "\n")


if __name__ == "__main__":
    run_main(main)
