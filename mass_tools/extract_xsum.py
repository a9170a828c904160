"""Turn the XSum download into line-aligned document / summary files.

    python -m mass_tools.extract_xsum --archive XSUM-EMNLP18-Summary-Data-Original.tar.gz \\
        --split XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json --outdir data/xsum

The archive holds bbc-summary-data/ID.summary files, each made of sections
that open with a [SN]NAME[SN] line (URL, TITLE, FIRST-SENTENCE, RESTBODY);
the first sentence is the summary and the rest of the body the document
(less the lines of the pages' share buttons).
The split file lists the IDs of "train", "validation" and "test". Writes
OUTDIR/{train,valid,test}.{document,summary}, one article per line, in the
split file's order; IDs without a file or with an empty side are counted
and left out.
"""

import argparse
import json
import os
import re
import sys
import tarfile

from mass_tools.textio import AtomicWriter, InputError, run_main

SECTION = re.compile(r"\[SN\]([A-Z-]+)\[SN\]")
# lines of the BBC pages' share buttons, left in some bodies
WIDGET_LINES = frozenset(["Share this with", "Email", "Facebook", "Messenger", "Twitter",
                          "Pinterest", "WhatsApp", "LinkedIn", "Linkedin", "Copy this link",
                          "These are external links and will open in a new window"])
SPLITS = {"train": "train", "validation": "valid", "test": "test"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--archive", required=True,
                        help="XSUM-EMNLP18-Summary-Data-Original.tar.gz")
    parser.add_argument("--split", required=True,
                        help="XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json")
    parser.add_argument("--outdir", required=True)
    return parser.parse_args(argv)


def sections(text):
    """{'URL': ..., 'FIRST-SENTENCE': ..., 'RESTBODY': ...} of one .summary file."""
    parts = SECTION.split(text)
    return {name: " ".join(line.strip() for line in body.splitlines()
                           if line.strip() not in WIDGET_LINES)
            for name, body in zip(parts[1::2], parts[2::2])}


def read_articles(archive):
    """{id: (document, summary)} of every .summary file in the archive."""
    articles = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            name = os.path.basename(member.name)
            if not member.isfile() or not name.endswith(".summary"):
                continue
            text = tar.extractfile(member).read().decode("utf-8", errors="replace")
            parts = sections(text)
            articles[name[:-len(".summary")]] = (
                " ".join(parts.get("RESTBODY", "").split()),
                " ".join(parts.get("FIRST-SENTENCE", "").split()))
            if len(articles) % 50000 == 0:
                sys.stderr.write(f"  {len(articles)} articles read\n")
    if not articles:
        raise InputError(f"{archive}: no .summary files in it; is it the XSum archive?")
    return articles


def read_split(path):
    try:
        with open(path, encoding="utf-8") as text:
            split = json.load(text)
        return {SPLITS[key]: [str(i) for i in split[key]] for key in SPLITS}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{path}: not XSum's split file with the lists "
                         f"{', '.join(SPLITS)} ({type(err).__name__}: {err}); if it is a "
                         "damaged download, delete it and run again") from None


def main(argv=None):
    args = parse_args(argv)
    split = read_split(args.split)
    articles = read_articles(args.archive)
    for name, ids in split.items():
        prefix = os.path.join(args.outdir, name)
        kept = 0
        with AtomicWriter(f"{prefix}.document") as documents, \
                AtomicWriter(f"{prefix}.summary") as summaries:
            for article in ids:
                document, summary = articles.get(article, ("", ""))
                if document and summary:
                    documents.write(document + "\n")
                    summaries.write(summary + "\n")
                    kept += 1
        sys.stderr.write(f"{prefix}: {kept} articles ({len(ids) - kept} missing or empty)\n")


if __name__ == "__main__":
    run_main(main)
