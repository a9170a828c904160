#!/usr/bin/env python3
"""Word-by-word translation with a lexicon from induce_lexicon.py.

    python data-prep/translate_words.py --lexicon lexicon.en-fr.tsv \\
        --src-lang en --tgt-lang fr < text.en > text.fr

Each line is Moses-tokenised; each token found in the lexicon (case
ignored) is replaced by its translation, written with the token's
capitalisation; any other token (names, numbers, punctuation, words the
lexicon does not know) is copied; the line is then Moses-detokenised. ``--reverse`` uses the
lexicon from its second column to its first. This is the first model of
unsupervised translation in Lample et al. (2018): no reordering, no
context, but no parallel text either.

With ``--spm-model`` the input and output are sentencepiece pieces (the
form examples/unsup_nmt_offline.sh works in): pieces are joined into text
before translation and the translation is split again.
"""

import argparse
import os
import re

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
from textio import AtomicWriter, InputError, read_lines, run_main

HAS_LETTER = re.compile(r"[^\W\d_]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", required=True,
                        help="source<TAB>target[<TAB>score] per line (induce_lexicon.py)")
    parser.add_argument("--reverse", action="store_true",
                        help="translate from the lexicon's second column to its first")
    parser.add_argument("--src-lang", required=True, help="language of the input (Moses)")
    parser.add_argument("--tgt-lang", required=True, help="language of the output (Moses)")
    parser.add_argument("--min-score", type=float, default=None,
                        help="use only pairs whose score (third column) is at least this")
    parser.add_argument("--spm-model", default=None,
                        help="input and output are pieces of this sentencepiece model")
    parser.add_argument("--input", default="-", help="input file (default: stdin)")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    return parser.parse_args(argv)


def read_lexicon(path, reverse=False, min_score=None):
    """{lower-cased word: translation}; the first pair of a word wins."""
    if not os.path.isfile(path):
        raise InputError(f"--lexicon {path}: no such file (make one with "
                         "data-prep/induce_lexicon.py)")
    lexicon = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0] or not fields[1]:
            raise InputError(f"{path}, line {number}: expected source<TAB>target[<TAB>score], "
                             f"got {line!r}")
        if min_score is not None:
            try:
                if len(fields) < 3 or float(fields[2]) < min_score:
                    continue
            except ValueError:
                raise InputError(f"{path}, line {number}: the score {fields[2]!r} is not a "
                                 "number (--min-score needs one)") from None
        source, target = (fields[1], fields[0]) if reverse else (fields[0], fields[1])
        lexicon.setdefault(source.lower(), target)
    return lexicon


def with_case_of(token, word):
    """``word`` capitalised like ``token``: UPPER, Capitalised or as it is."""
    if len(token) > 1 and token.isupper():
        return word.upper()
    if token[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class WordTranslator:
    def __init__(self, lexicon, src_lang, tgt_lang):
        self.lexicon = lexicon
        self.normalizer = MosesPunctNormalizer(lang=src_lang)
        self.tokenizer = MosesTokenizer(lang=src_lang)
        self.detokenizer = MosesDetokenizer(lang=tgt_lang)

    def __call__(self, line):
        line = self.normalizer.normalize(line).strip()
        if not line:
            return ""
        tokens = self.tokenizer.tokenize(line, escape=False)
        return self.detokenizer.detokenize([self.word(t) for t in tokens])

    def word(self, token):
        """The translation of ``token``; itself if it has no letter (numbers,
        punctuation) or is not in the lexicon."""
        translation = self.lexicon.get(token.lower())
        if translation is None or not HAS_LETTER.search(token):
            return token
        return with_case_of(token, translation)


def main(argv=None):
    args = parse_args(argv)
    translate = WordTranslator(read_lexicon(args.lexicon, args.reverse, args.min_score),
                               args.src_lang, args.tgt_lang)
    spm = None
    if args.spm_model:
        import sentencepiece

        spm = sentencepiece.SentencePieceProcessor(model_file=args.spm_model)
    with AtomicWriter(args.output) as out:
        for line in read_lines(args.input):
            if spm is None:
                out.write(translate(line) + "\n")
            else:
                text = translate(spm.decode_pieces(line.split()))
                out.write(" ".join(spm.encode(text, out_type=str)) + "\n")


if __name__ == "__main__":
    run_main(main)
