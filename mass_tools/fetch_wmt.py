"""Fetch the data real MASS users start from: WMT News Crawl monolingual text
and a newstest set, cleaned and ready for tokenize_moses.py / learn_subwords.py.

    python -m mass_tools.fetch_wmt --langs en,fr --year 2019 --max-lines 5000000 \\
        --test-set wmt14 --pair en-fr --outdir data/wmt

1. downloads news.YEAR.LANG.shuffled.deduped.gz from data.statmt.org into
   OUTDIR/raw/ (skipped for files already there, or with --skip-download);
2. keeps lines of --min-words..--max-words words, drops exact duplicates, and
   writes the first --max-lines of them (the files are shuffled) to
   OUTDIR/mono.LANG, and the last --valid-lines kept lines to OUTDIR/mono.valid.LANG;
3. writes the newstest source/reference of --test-set for --pair with
   sacrebleu to OUTDIR/test.SRC and OUTDIR/test.TGT.
"""

import argparse
import gzip
import os
import subprocess
import sys
import urllib.request

from mass_tools.textio import AtomicWriter, InputError, run_main

NEWS_CRAWL_URL = "https://data.statmt.org/news-crawl/{lang}/news.{year}.{lang}.shuffled.deduped.gz"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--langs", default="en,fr", help="comma-separated languages")
    parser.add_argument("--year", type=int, default=2019, help="News Crawl year")
    parser.add_argument("--outdir", required=True)
    parser.add_argument("--max-lines", type=int, default=5_000_000,
                        help="training lines kept per language")
    parser.add_argument("--valid-lines", type=int, default=3000,
                        help="held-out lines per language for validation")
    parser.add_argument("--min-words", type=int, default=3)
    parser.add_argument("--max-words", type=int, default=150)
    parser.add_argument("--test-set", help="sacrebleu test set, e.g. wmt14")
    parser.add_argument("--pair", help="language pair of the test set, e.g. en-fr")
    parser.add_argument("--skip-download", action="store_true",
                        help="only process files already in OUTDIR/raw")
    return parser.parse_args(argv)


def download(url, path):
    if os.path.exists(path):
        return
    sys.stderr.write(f"downloading {url}\n")
    with urllib.request.urlopen(url) as response, open(path + ".part", "wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)
    os.replace(path + ".part", path)


def clean_lines(gz_path, min_words, max_words):
    """Stripped lines of ``gz_path`` within the word limits, first occurrence only."""
    seen = set()
    with gzip.open(gz_path, "rt", encoding="utf-8", errors="replace") as lines:
        for line in lines:
            line = " ".join(line.split())
            if not min_words <= len(line.split()) <= max_words:
                continue
            key = hash(line)
            if key not in seen:
                seen.add(key)
                yield line


def process_news_crawl(gz_path, train_path, valid_path, args):
    """Write the training and validation slices of one News Crawl file."""
    if not os.path.exists(gz_path):
        raise InputError(f"{gz_path}: missing; run without --skip-download to fetch it")
    kept = clean_lines(gz_path, args.min_words, args.max_words)
    count = 0
    with AtomicWriter(valid_path) as valid, AtomicWriter(train_path) as train:
        for count, line in enumerate(kept, start=1):
            # validation first, so it does not depend on --max-lines
            out = valid if count <= args.valid_lines else train
            out.write(line + "\n")
            if count >= args.valid_lines + args.max_lines:
                break
    sys.stderr.write(f"{train_path}: {max(0, count - args.valid_lines)} lines\n")


def fetch_test_set(args):
    src, tgt = args.pair.split("-")
    for side, lang in (("src", src), ("ref", tgt)):
        proc = subprocess.run(
            [sys.executable, "-m", "sacrebleu", "-t", args.test_set, "-l", args.pair,
             "--echo", side], capture_output=True, text=True)
        if proc.returncode != 0:
            raise InputError(f"sacrebleu could not fetch {args.test_set} {args.pair}: "
                             f"{proc.stderr.strip()[-500:]}")
        with AtomicWriter(os.path.join(args.outdir, f"test.{lang}")) as out:
            out.write(proc.stdout)


def main(argv=None):
    args = parse_args(argv)
    raw = os.path.join(args.outdir, "raw")
    os.makedirs(raw, exist_ok=True)
    for lang in args.langs.split(","):
        gz_path = os.path.join(raw, f"news.{args.year}.{lang}.shuffled.deduped.gz")
        if not args.skip_download:
            download(NEWS_CRAWL_URL.format(lang=lang, year=args.year), gz_path)
        process_news_crawl(gz_path, os.path.join(args.outdir, f"mono.{lang}"),
                           os.path.join(args.outdir, f"mono.valid.{lang}"), args)
    if args.test_set:
        if not args.pair:
            raise InputError("--test-set needs --pair, e.g. --pair en-fr")
        fetch_test_set(args)


if __name__ == "__main__":
    run_main(main)
