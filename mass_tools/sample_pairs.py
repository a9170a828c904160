"""Seeded, nested samples of a parallel corpus: the pairs of low-resource training.

    python -m mass_tools.sample_pairs --pair en-fr --sizes 10000,100000,1000000 \\
        --corpus fr-en.tgz europarl-v7.fr-en.en europarl-v7.fr-en.fr \\
        --exclude test.en test.fr --outdir para

reads each --corpus (an archive .tgz/.tar.gz/.tar/.zip, or a folder, and the
names of its source and target files in it), drops pairs with an empty side,
a side of more than --max-words words, a side found in an --exclude file
(the valid and test sets), and repeated pairs, shuffles the rest with --seed
and writes the first N pairs of that one order to OUTDIR/N/train.SRC and
OUTDIR/N/train.TGT for each N of --sizes: the 10k sample is part of the 100k
one. ``all`` as a size keeps every pair (OUTDIR/all/). Asking for more pairs
than the corpus has stops before anything is written.
"""

import argparse
import os
import random
import sys

from mass_tools.archives import member_lines
from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--pair", required=True, help="SRC-TGT, e.g. en-fr")
    parser.add_argument("--corpus", nargs=3, action="append", required=True,
                        metavar=("ARCHIVE", "SRC_FILE", "TGT_FILE"),
                        help="an archive or folder and its source and target files; repeatable")
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated sample sizes, or 'all'")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-words", type=int, default=175)
    parser.add_argument("--exclude", nargs="*", default=[],
                        help="files whose lines may not appear on either side")
    parser.add_argument("--outdir", required=True)
    args = parser.parse_args(argv)
    if args.pair.count("-") != 1:
        parser.error(f"--pair {args.pair}: expected SRC-TGT, e.g. en-fr")
    try:
        args.sizes = [size if size == "all" else int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes {args.sizes}: expected numbers or 'all', e.g. 10000,100000")
    return args


def corpus_pairs(archive, src_name, tgt_name):
    """The (source, target) lines of one corpus; its two files must align.
    Each file is read whole in turn: reading two members of a compressed
    tar side by side would decompress it again at every switch."""
    src = list(member_lines(archive, src_name))
    tgt = list(member_lines(archive, tgt_name))
    if len(src) != len(tgt):
        raise InputError(f"{archive}: {src_name} has {len(src)} lines, {tgt_name} "
                         f"{len(tgt)}; they must be line-aligned")
    return zip(src, tgt)


def clean_pairs(corpora, max_words, excluded):
    """Pairs that pass the filters, in corpus order, each once."""
    seen, kept, total = set(), [], 0
    for archive, src_name, tgt_name in corpora:
        for src, tgt in corpus_pairs(archive, src_name, tgt_name):
            total += 1
            src, tgt = " ".join(src.split()), " ".join(tgt.split())
            if not src or not tgt or src in excluded or tgt in excluded:
                continue
            if len(src.split()) > max_words or len(tgt.split()) > max_words:
                continue
            key = hash((src, tgt))
            if key not in seen:
                seen.add(key)
                kept.append((src, tgt))
    sys.stderr.write(f"{len(kept)} of {total} pairs kept after cleaning\n")
    return kept


def main(argv=None):
    args = parse_args(argv)
    excluded = {" ".join(line.split()) for path in args.exclude for line in read_lines(path)}
    pairs = clean_pairs(args.corpus, args.max_words, excluded)
    too_many = [size for size in args.sizes if size != "all" and size > len(pairs)]
    if too_many or not pairs:
        raise InputError(f"--sizes asks for {max(too_many, default=1)} pairs but the corpora "
                         f"have {len(pairs)} after cleaning: ask for fewer, or 'all'")
    order = list(range(len(pairs)))
    random.Random(args.seed).shuffle(order)
    src, tgt = args.pair.split("-")
    for size in args.sizes:
        chosen = sorted(order[:len(pairs) if size == "all" else size])  # corpus order
        prefix = os.path.join(args.outdir, str(size), "train")
        with AtomicWriter(f"{prefix}.{src}") as src_out, \
                AtomicWriter(f"{prefix}.{tgt}") as tgt_out:
            for index in chosen:
                src_out.write(pairs[index][0] + "\n")
                tgt_out.write(pairs[index][1] + "\n")
        sys.stderr.write(f"{prefix}.{src}, {prefix}.{tgt}: {len(chosen)} pairs\n")


if __name__ == "__main__":
    run_main(main)
