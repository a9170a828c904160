"""What BLEU does not show about a file of system outputs: which language its
lines are in, and how often a line repeats itself.

    python -m mass_tools.output_stats FILE [FILE ...] [--json]

FILE holds one detokenized segment per line (a hypothesis file of
examples/generate.sh, or a reference file to compare with). Lines are split
into words with sacreBLEU's default tokenizer (13a) and lowercased. For each
file it prints:

- ``lines``: the number of lines;
- ``french_share``: the share of lines with more French than English
  function words (the two 20-word lists below; a crude language check);
- ``english_share``: the share with more English than French function words;
- ``no_function_words``: the share with none of the 40 words (a line with as
  many of both counts in neither share);
- ``repeating``: the share of lines in which some word bigram occurs three or
  more times (degenerate repetition);
- ``words``: the mean number of words per line.
"""

import argparse
import json
from collections import Counter

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

# frequent closed-class words of each language; English words that are also
# frequent French words ("a", "on", "an", "as") are left out
FRENCH = frozenset(
    "le la les de des du un une et est dans pour sur avec que qui vous ce cette au".split())
ENGLISH = frozenset(
    "the and is are of to in for with that this you it be by from or can which your".split())
assert len(FRENCH) == len(ENGLISH) == 20 and not FRENCH & ENGLISH

_tokenize = Tokenizer13a()


def words(line):
    return _tokenize(line.strip()).lower().split()


def line_language(tokens):
    """'fr', 'en', 'none' (no function word) or 'tie'."""
    fr = sum(t in FRENCH for t in tokens)
    en = sum(t in ENGLISH for t in tokens)
    if fr == en:
        return "none" if fr == 0 else "tie"
    return "fr" if fr > en else "en"


def repeats(tokens, times=3):
    """True if some bigram of ``tokens`` occurs ``times`` times or more."""
    counts = Counter(zip(tokens, tokens[1:]))
    return bool(counts) and max(counts.values()) >= times


def stats(lines):
    tokenized = [words(line) for line in lines]
    n = len(tokenized)
    if n == 0:
        raise ValueError("no lines")
    languages = Counter(line_language(t) for t in tokenized)
    return dict(lines=n,
                french_share=round(languages["fr"] / n, 4),
                english_share=round(languages["en"] / n, 4),
                no_function_words=round(languages["none"] / n, 4),
                repeating=round(sum(map(repeats, tokenized)) / n, 4),
                words=round(sum(map(len, tokenized)) / n, 2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="one segment per line")
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    args = parser.parse_args(argv)
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            result = stats(f.read().splitlines())
        if args.json:
            print(json.dumps(dict(file=path, **result)))
        else:
            print(path + "\t" + "  ".join(f"{k} {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
