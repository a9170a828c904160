"""Fetch the data real MASS users start from: WMT News Crawl monolingual text
and the newstest sets, cleaned and ready for tokenize_moses.py / learn_subwords.py.

    python -m mass_tools.fetch_wmt --langs en,fr --years 2015-2017 --max-lines 5000000 \\
        --valid-set wmt13 --test-set wmt14/full --pair en-fr --outdir data/wmt

1. downloads news.YEAR.LANG.shuffled.deduped.gz for each year from --base-url
   (data.statmt.org) into --download-dir (default OUTDIR/raw), resuming a
   broken transfer and checking each file is a whole gzip (mass_tools.download);
   files already there are kept (--skip-download: use only those);
2. keeps lines of --min-words..--max-words words, drops exact duplicates, and
   writes the first --max-lines of them (0: all), newest year first (each
   file is shuffled), to OUTDIR/mono.LANG, and the first --valid-lines kept
   lines to OUTDIR/mono.valid.LANG (it stops, writing neither, where that
   leaves no training line); a language done with the same settings is not
   redone (OUTDIR/.mono.LANG.done);
3. writes the source and reference of --valid-set and --test-set for --pair
   (sacrebleu names, e.g. wmt13, wmt14/full, wmt16/dev) to OUTDIR/valid.SRC,
   valid.TGT, test.SRC and test.TGT: untokenized text, the references that
   detokenized BLEU is scored against. sacrebleu keeps its copy in $SACREBLEU
   (default ~/.sacrebleu). Offline, sacrebleu reads its plain-text files
   there first: $SACREBLEU/NAME/NAME_WITH_UNDERSCORES.PAIR.{src,ref,docid,
   genre,origlang} (e.g. wmt14/full/wmt14_full.en-fr.src), else it converts
   its archive in $SACREBLEU/NAME/raw/.

Without --valid-set and --test-set OUTDIR has monolingual text only (no
train.* pairs): examples/prepare_data.sh binarizes that as it is.
"""

import argparse
import collections
import gzip
import json
import os
import subprocess
import sys

from mass_tools.download import download
from mass_tools.textio import AtomicWriter, InputError, run_main

NEWS_CRAWL_URL = "https://data.statmt.org/news-crawl"
NEWS_CRAWL_FILE = "news.{year}.{lang}.shuffled.deduped.gz"
PROGRESS_EVERY = 1_000_000  # lines


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--langs", default="en,fr",
                        help="comma-separated languages ('' for the test sets alone)")
    parser.add_argument("--years", "--year", dest="years", default="2019",
                        help="News Crawl years: 2019, 2007-2017 or 2015,2016")
    parser.add_argument("--outdir", required=True)
    parser.add_argument("--download-dir", help="where the .gz files go (default OUTDIR/raw)")
    parser.add_argument("--base-url", default=NEWS_CRAWL_URL,
                        help="News Crawl root, holding LANG/" + NEWS_CRAWL_FILE)
    parser.add_argument("--max-lines", type=int, default=5_000_000,
                        help="training lines kept per language (0: all)")
    parser.add_argument("--valid-lines", type=int, default=3000,
                        help="held-out lines per language for validation")
    parser.add_argument("--min-words", type=int, default=3,
                        help="lines of fewer words are dropped")
    parser.add_argument("--max-words", type=int, default=150,
                        help="lines of more words are dropped")
    parser.add_argument("--valid-set", help="sacrebleu validation set, e.g. wmt13")
    parser.add_argument("--test-set", help="sacrebleu test set, e.g. wmt14")
    parser.add_argument("--pair", help="language pair of the test sets, e.g. en-fr")
    parser.add_argument("--skip-download", action="store_true",
                        help="only process files already in the download directory")
    args = parser.parse_args(argv)
    args.years = parse_years(parser, args.years)
    args.download_dir = args.download_dir or os.path.join(args.outdir, "raw")
    return args


def parse_years(parser, text):
    """[2007, ..., 2017] from '2007-2017'; [2015, 2016] from '2015,2016'."""
    years = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            years += range(int(first), int(last or first) + 1)
    except ValueError:
        parser.error(f"--years {text}: expected e.g. 2019, 2007-2017 or 2015,2016")
    return sorted(set(years))


def clean_lines(gz_paths, min_words, max_words, dropped):
    """Stripped lines of the files within the word limits, first occurrence
    only; ``dropped`` (a Counter) counts the others by reason."""
    seen = set()
    for gz_path in gz_paths:
        with gzip.open(gz_path, "rt", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                line = " ".join(line.split())
                words = len(line.split())
                if not min_words <= words <= max_words:
                    dropped["short" if words < min_words else "long"] += 1
                    continue
                key = hash(line)
                if key in seen:
                    dropped["repeated"] += 1
                else:
                    seen.add(key)
                    yield line


def process_news_crawl(gz_paths, train_path, valid_path, args):
    """Write the training and validation slices of one language's News Crawl files."""
    for gz_path in gz_paths:
        if not os.path.exists(gz_path):
            raise InputError(f"{gz_path}: missing; run without --skip-download to fetch it")
    dropped = collections.Counter()
    kept = clean_lines(gz_paths, args.min_words, args.max_words, dropped)
    limit = args.valid_lines + args.max_lines if args.max_lines > 0 else None
    count = 0
    with AtomicWriter(valid_path) as valid, AtomicWriter(train_path) as train:
        for count, line in enumerate(kept, start=1):
            # validation first, so it does not depend on --max-lines
            out = valid if count <= args.valid_lines else train
            out.write(line + "\n")
            if count % PROGRESS_EVERY == 0:
                sys.stderr.write(f"  {train_path}: {count} lines kept\n")
            if count == limit:
                break
        if count <= args.valid_lines:  # raised inside: neither file is written
            raise InputError(
                f"{train_path}: the input has {count} lines of {args.min_words} to "
                f"{args.max_words} words (no repeats), and --valid-lines "
                f"{args.valid_lines} (VALID_LINES of data-prep/news_crawl.sh) holds them "
                f"all out for validation: none is left to train on. Set it below {count}, "
                "or fetch more text (--years; YEARS of news_crawl.sh).")
    sys.stderr.write(f"{train_path}: {count - args.valid_lines} lines, {valid_path}: "
                     f"{args.valid_lines}; left out on the way: {dropped['short']} of "
                     f"fewer than {args.min_words} words, {dropped['long']} of more than "
                     f"{args.max_words}, {dropped['repeated']} repeated\n")


def read(path):
    with open(path, encoding="utf-8") as text:
        return text.read()


def settings(args, lang):
    keys = ("years", "max_lines", "valid_lines", "min_words", "max_words")
    return json.dumps({"lang": lang, **{key: getattr(args, key) for key in keys}})


def fetch_language(args, lang):
    """Download (unless skipped) and clean one language, unless done already."""
    marker = os.path.join(args.outdir, f".mono.{lang}.done")
    train, valid = (os.path.join(args.outdir, name) for name in (f"mono.{lang}",
                                                                 f"mono.valid.{lang}"))
    if all(map(os.path.exists, (marker, train, valid))) and read(marker) == settings(args, lang):
        sys.stderr.write(f"{train}: done already, kept\n")
        return
    gz_paths = []
    for year in reversed(args.years):  # newest first: --max-lines keeps recent text
        name = NEWS_CRAWL_FILE.format(year=year, lang=lang)
        gz_paths.append(os.path.join(args.download_dir, name))
        if not args.skip_download:
            download(f"{args.base_url.rstrip('/')}/{lang}/{name}", gz_paths[-1])
    process_news_crawl(gz_paths, train, valid, args)
    with AtomicWriter(marker) as out:
        out.write(settings(args, lang))


def last_line(text):
    """The last non-empty line of ``text``: a traceback's exception."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def where(test_set, pair):
    """Where sacrebleu looks for ``test_set``, and where it downloads it from."""
    from sacrebleu.dataset import DATASETS
    from sacrebleu.utils import SACREBLEU_DIR

    if test_set not in DATASETS:
        return f"sacrebleu knows no test set {test_set} (sacrebleu --list names them)."
    folder = os.path.join(SACREBLEU_DIR, test_set)
    text = os.path.join(folder, f"{test_set.replace('/', '_')}.{pair}.src")
    urls = " ".join(DATASETS[test_set].data)
    return (f"It reads {text[:-4]}.{{src,ref,docid,genre,origlang}}, or the archive in "
            f"{folder}/raw/ that it downloads from {urls} ($SACREBLEU sets the folder; "
            "data-prep/README.md says how to run offline).")


def fetch_test_set(test_set, pair, prefix):
    """Write PREFIX.SRC and PREFIX.TGT: the source and reference of ``test_set``."""
    src, tgt = pair.split("-")
    lines = {}
    for side, lang in (("src", src), ("ref", tgt)):
        proc = subprocess.run(
            [sys.executable, "-m", "sacrebleu", "-t", test_set, "-l", pair, "--echo", side],
            capture_output=True, text=True)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise InputError(f"sacrebleu could not give {test_set} {pair} ({side}): "
                             f"{last_line(proc.stderr) or 'no text'}. {where(test_set, pair)}")
        lines[lang] = proc.stdout
    if lines[src].count("\n") != lines[tgt].count("\n"):
        raise InputError(f"sacrebleu's {test_set} {pair}: source and reference differ in length")
    for lang, text in lines.items():
        with AtomicWriter(f"{prefix}.{lang}") as out:
            out.write(text)
    sys.stderr.write(f"{prefix}.{src}, {prefix}.{tgt}: {test_set} {pair}, "
                     f"{text.count(chr(10))} lines\n")


def main(argv=None):
    args = parse_args(argv)
    if (args.test_set or args.valid_set) and (not args.pair or args.pair.count("-") != 1):
        raise InputError("--valid-set and --test-set need --pair SRC-TGT, e.g. --pair en-fr")
    os.makedirs(args.outdir, exist_ok=True)
    for lang in filter(None, args.langs.split(",")):
        fetch_language(args, lang)
    for split in ("valid", "test"):
        test_set = getattr(args, f"{split}_set")
        if test_set:
            fetch_test_set(test_set, args.pair, os.path.join(args.outdir, split))


if __name__ == "__main__":
    run_main(main)
