#!/usr/bin/env python3
"""Word-by-word translation with a lexicon from induce_lexicon.py.

    python -m projects.unsupervised.translate_words --lexicon lexicon.en-fr.tsv \\
        --src-lang en --tgt-lang fr < text.en > text.fr

Each line is Moses-tokenised; each token found in the lexicon (case
ignored) is replaced by its translation, written with the token's
capitalisation; any other token (names, numbers, punctuation, words the
lexicon does not know) is copied; the line is then Moses-detokenised. A word
whose translation is itself (``LibreOffice``, ``PDF``) keeps its spelling.
``--reverse`` uses the lexicon from its second column to its first. This
is the first model of unsupervised translation in Lample et al. (2018): no
reordering, no context, but no parallel text either.

With ``--placeholder SYMBOL --masked FILE`` each run of words the lexicon
does not know is written as one SYMBOL instead, and FILE gets, line for
line, the runs replaced (tab-separated, in order), for a model trained to
leave them alone, as the repair recipe's (projects/unsupervised/rounds.py),
which puts them back into its output.

With ``--sample CANDIDATES`` (induce_lexicon.py ``--candidates``) each of the
``--sample-words`` most frequent words of CANDIDATES is translated, each
time it occurs, by one of its candidates drawn at random, with probability
proportional to exp(score / ``--temperature``); the other words as without
it. This is for round trips (projects/unsupervised/rounds.py) whose first leg
stands for a human translation: "the" becomes "le" some of the time, and
back word by word "a", as French "le" translated word by word at test time
does; through the nearest neighbours alone it always comes back as "the".
Whether a word is known (or a placeholder) is --lexicon's and
--min-score's to say, as without it.
"""

import argparse
import math
import os
import random
import re

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main

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
    parser.add_argument("--placeholder", default=None,
                        help="write this symbol for each run of words the lexicon does not know")
    parser.add_argument("--masked", default=None,
                        help="with --placeholder: file for the runs replaced, one line per line")
    parser.add_argument("--input", default="-", help="input file (default: stdin)")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    parser.add_argument("--sample", metavar="CANDIDATES", default=None,
                        help="draw the translations of the most frequent words at random from "
                        "this file of induce_lexicon.py --candidates (for round trips)")
    parser.add_argument("--sample-words", type=int, default=150,
                        help="with --sample: how many of its words, most frequent first")
    parser.add_argument("--temperature", type=float, default=0.3,
                        help="with --sample: a candidate's probability is proportional to "
                        "exp(score / temperature)")
    parser.add_argument("--seed", type=int, default=1, help="with --sample: the random seed")
    args = parser.parse_args(argv)
    if args.sample is not None and (args.sample_words < 1 or args.temperature <= 0):
        parser.error(f"--sample-words {args.sample_words} --temperature {args.temperature}: "
                     "give a positive number of words and a temperature above 0")
    if (args.placeholder is None) != (args.masked is None):
        parser.error("--placeholder and --masked go together: give both or neither")
    if args.placeholder is not None and (not args.placeholder or " " in args.placeholder
                                         or "\t" in args.placeholder):
        parser.error(f"--placeholder {args.placeholder!r}: give one symbol without spaces")
    return args


def tab_separated(path, option, maker):
    """(line number, line, its tab-separated fields) of the file given as
    ``option``, which ``maker`` makes if it is missing."""
    if not os.path.isfile(path):
        raise InputError(f"{option} {path}: no such file (make one with {maker})")
    for number, line in enumerate(read_lines(path), start=1):
        yield number, line, line.split("\t")


def read_lexicon(path, reverse=False, min_score=None):
    """{lower-cased word: translation}; the first pair of a word wins."""
    lexicon = {}
    maker = "python -m projects.unsupervised.induce_lexicon"
    for number, line, fields in tab_separated(path, "--lexicon", maker):
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


def read_candidates(path, words, temperature):
    """{word: (candidates, weights)} for the first ``words`` words of an
    induce_lexicon.py --candidates file, each weight exp(score / temperature)."""
    candidates = {}
    maker = "projects/unsupervised/induce_lexicon.py --one-way PREFIX --candidates K"
    for number, line, fields in tab_separated(path, "--sample", maker):
        try:
            word, target, score = fields[0].lower(), fields[1], float(fields[2])
        except (IndexError, ValueError):
            raise InputError(f"{path}, line {number}: expected word<TAB>candidate<TAB>score, "
                             f"got {line!r}") from None
        if word not in candidates and len(candidates) == words:
            break
        targets, weights = candidates.setdefault(word, ([], []))
        targets.append(target)
        weights.append(math.exp(score / temperature))
    return candidates


def with_case_of(token, word):
    """``word`` capitalised like ``token``: UPPER, Capitalised or as it is."""
    if len(token) > 1 and token.isupper():
        return word.upper()
    if token[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class WordTranslator:
    """``translator(line)``: the word-by-word translation of one line. With a
    ``placeholder``, ``translator(line, masked)`` writes it once for each run
    of words the lexicon lacks (the symbol itself, where the text has it,
    counts as such a word) and appends each run it replaced, words joined by
    spaces, to the list ``masked``."""

    def __init__(self, lexicon, src_lang, tgt_lang, placeholder=None):
        self.lexicon = lexicon
        self.placeholder = placeholder
        self.normalizer = MosesPunctNormalizer(lang=src_lang)
        self.tokenizer = MosesTokenizer(lang=src_lang)
        self.detokenizer = MosesDetokenizer(lang=tgt_lang)

    def tokens(self, line):
        line = self.normalizer.normalize(line).strip()
        return self.tokenizer.tokenize(line, escape=False) if line else []

    def __call__(self, line, masked=None):
        words = []
        for token in self.tokens(line):
            word = self.lookup(token)
            if self.placeholder is not None and (word is None or token == self.placeholder):
                if words and words[-1] == self.placeholder:  # one placeholder for a run
                    masked[-1] += " " + token
                    continue
                masked.append(token)
                word = self.placeholder
            words.append(token if word is None else word)
        return self.detokenizer.detokenize(words)

    def lookup(self, token):
        """The translation of ``token`` in its case; the token itself if it has
        no letter or translates to itself; None if the lexicon lacks it."""
        if not HAS_LETTER.search(token):
            return token
        translation = self.translation(token.lower())
        if translation is None:
            return None
        if translation.lower() == token.lower():
            return token
        return with_case_of(token, translation)

    def translation(self, word):
        return self.lexicon.get(word)


class SamplingTranslator(WordTranslator):
    """A WordTranslator whose words with ``candidates`` (read_candidates)
    translate to one of them drawn at random, if the lexicon knows them."""

    def __init__(self, lexicon, src_lang, tgt_lang, placeholder, candidates, seed):
        super().__init__(lexicon, src_lang, tgt_lang, placeholder)
        self.candidates = candidates
        self.random = random.Random(seed)

    def translation(self, word):
        if word not in self.lexicon or word not in self.candidates:
            return self.lexicon.get(word)
        targets, weights = self.candidates[word]
        return self.random.choices(targets, weights)[0]


def main(argv=None):
    args = parse_args(argv)
    lexicon = read_lexicon(args.lexicon, args.reverse, args.min_score)
    if args.sample is None:
        translate = WordTranslator(lexicon, args.src_lang, args.tgt_lang, args.placeholder)
    else:
        candidates = read_candidates(args.sample, args.sample_words, args.temperature)
        translate = SamplingTranslator(lexicon, args.src_lang, args.tgt_lang, args.placeholder,
                                       candidates, args.seed)
    if args.placeholder is not None:
        return write_masked(translate, args)
    with AtomicWriter(args.output) as out:
        for line in read_lines(args.input):
            out.write(translate(line) + "\n")


def write_masked(translate, args):
    with AtomicWriter(args.output) as out, AtomicWriter(args.masked) as masked_out:
        for line in read_lines(args.input):
            masked = []
            out.write(translate(line, masked) + "\n")
            masked_out.write("\t".join(masked) + "\n")


if __name__ == "__main__":
    run_main(main)
