"""Binarize monolingual and parallel text with ONE joint dictionary.

    python -m mass_tools.binarize --destdir data-bin --langs en,fr \\
        --mono-train mono.{lang} --mono-valid mono.valid.{lang} \\
        --pair en-fr --train train --valid valid --test test

writes one directory that both tasks read without dictionary mismatches:

    dict.txt, dict.en.txt, dict.fr.txt     the joint dictionary (three names)
    train.en.{bin,idx}, valid.en.{bin,idx} monolingual English  (masked_s2s)
    train.fr.{bin,idx}, valid.fr.{bin,idx} monolingual French
    train.en-fr.en.{bin,idx}, ...          the pairs, either direction (translation)

``{lang}`` in a monolingual path stands for each language; a pair prefix P
means the files P.en and P.fr. Input text is already split into subwords.
Everything is built in a temporary directory inside DESTDIR and moved into
place; the dictionaries come last, so a directory with dict.txt is complete.
DESTDIR/made_with.json records the dictionary (and --subword-model) of each
file; a run whose dictionary or subword model differs from those of files
already in DESTDIR (other than the ones it writes) stops before writing,
naming both (mass_tools.data_bin_record).
"""

import argparse
import logging
import os
import shutil
import tempfile

from mass_tools import data_bin_record
from mass_tools.textio import InputError, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--destdir", required=True)
    parser.add_argument("--langs", required=True, help="comma-separated, e.g. en,fr")
    parser.add_argument("--mono-train", help="monolingual training text, with {lang}")
    parser.add_argument("--mono-valid", help="monolingual validation text, with {lang}")
    parser.add_argument("--pair", help="a language pair SRC-TGT, e.g. en-fr")
    parser.add_argument("--train", help="prefix of the parallel training files")
    parser.add_argument("--valid", help="prefix of the parallel validation files")
    parser.add_argument("--test", help="prefix of the parallel test files")
    parser.add_argument("--dict", dest="dictionary",
                        help="use this dictionary (e.g. the pre-training dict.txt) "
                        "instead of building one")
    parser.add_argument("--subword-model",
                        help="the BPE codes or sentencepiece model the text was split with: "
                        "recorded, and compared with that of the files already in DESTDIR")
    parser.add_argument("--nwords", type=int, default=-1,
                        help="keep the N most frequent symbols (default: all)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    args.langs = [lang for lang in args.langs.split(",") if lang]
    if not args.mono_train and not args.pair:
        parser.error("nothing to binarize: give --mono-train and/or --pair")
    if args.pair and (args.pair.count("-") != 1
                      or not (args.train or args.valid or args.test)):
        parser.error("--pair SRC-TGT needs at least one of --train, --valid, --test PREFIX "
                     "(unsupervised translation binarizes only --valid and --test pairs)")
    return args


def preprocess(*args):
    """fairseq-preprocess with these arguments, run in this process: a
    subprocess would pay the import of fairseq again for every step. Its
    progress lines are not shown (stdout carries only the output directory);
    warnings go to stderr (see main)."""
    from fairseq import options
    from fairseq_cli import preprocess as fairseq_preprocess

    argv = [str(a) for a in args]
    logger = logging.getLogger("fairseq_cli.preprocess")
    handlers = list(logger.handlers)
    try:
        fairseq_preprocess.main(options.get_preprocessing_parser().parse_args(argv))
    except (OSError, AssertionError, ValueError) as err:
        raise InputError(f"fairseq-preprocess {' '.join(argv)} failed: "
                         f"{type(err).__name__}: {err}") from err
    finally:  # main() adds a log file in --destdir on every call
        for handler in set(logger.handlers) - set(handlers):
            logger.removeHandler(handler)
            handler.close()


def require(path):
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    return path


def training_files(args):
    files = []
    if args.mono_train:
        files += [require(args.mono_train.format(lang=lang)) for lang in args.langs]
    if args.pair and args.train:
        files += [require(f"{args.train}.{lang}") for lang in args.pair.split("-")]
    return files


def build_dictionary(args, work):
    joined = os.path.join(work, "all.txt")
    with open(joined, "wb") as out:
        for path in training_files(args):
            with open(path, "rb") as text:
                shutil.copyfileobj(text, out)
    preprocess("--only-source", "--dict-only", "--trainpref", joined, "--destdir", work,
               "--nwordssrc", args.nwords, "--workers", args.workers)
    return os.path.join(work, "dict.txt")


def binarize_mono(args, dictionary, work):
    for lang in args.langs:
        out = os.path.join(work, f"mono-{lang}")
        splits = [("train", args.mono_train), ("valid", args.mono_valid)]
        prefs = []
        for split, pattern in splits:
            if pattern:
                prefs += [f"--{split}pref", require(pattern.format(lang=lang))]
        preprocess("--only-source", "--srcdict", dictionary, "--destdir", out,
                   "--workers", args.workers, *prefs)
        for split, pattern in splits:
            for ext in ("bin", "idx") if pattern else ():
                os.replace(os.path.join(out, f"{split}.{ext}"),
                           os.path.join(args.destdir, f"{split}.{lang}.{ext}"))


def binarize_pairs(args, dictionary, work):
    src, tgt = args.pair.split("-")
    prefs = []
    for split in ("train", "valid", "test"):
        prefix = getattr(args, split)
        if prefix:
            for lang in (src, tgt):
                require(f"{prefix}.{lang}")
            prefs += [f"--{split}pref", prefix]
    out = os.path.join(work, "pairs")
    preprocess("-s", src, "-t", tgt, "--srcdict", dictionary, "--tgtdict", dictionary,
               "--destdir", out, "--workers", args.workers, *prefs)
    for name in os.listdir(out):
        if name.endswith((".bin", ".idx")):
            os.replace(os.path.join(out, name), os.path.join(args.destdir, name))


def written_files(args):
    """The prefixes of the binarized files this run writes."""
    files = []
    for split, pattern in (("train", args.mono_train), ("valid", args.mono_valid)):
        files += [f"{split}.{lang}" for lang in args.langs] if pattern else []
    if args.pair:
        for split in ("train", "valid", "test"):
            if getattr(args, split):
                files += [f"{split}.{args.pair}.{lang}" for lang in args.pair.split("-")]
    return files


def check_outputs(destdir):
    """Every .bin in ``destdir`` has the size its .idx describes."""
    from mass_plugin.data.binarized_files import BinarizedDataError, check_binarized

    for name in sorted(os.listdir(destdir)):
        if name.endswith(".idx"):
            try:
                check_binarized(os.path.join(destdir, name[:-4]),
                                rebuild="run this command again (is the disk full?)")
            except BinarizedDataError as err:
                raise InputError(str(err)) from err


def main(argv=None):
    args = parse_args(argv)
    # before fairseq_cli.preprocess is imported, whose own logging.basicConfig
    # would send its INFO lines to stdout, which carries only the output dir
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
    os.makedirs(args.destdir, exist_ok=True)
    record = data_bin_record.read_record(args.destdir)
    writing = written_files(args)
    with tempfile.TemporaryDirectory(dir=args.destdir, prefix=".work-") as work:
        if args.dictionary:
            dictionary = require(args.dictionary)
        else:
            dictionary = build_dictionary(args, work)
        made = {"dictionary": data_bin_record.file_id(dictionary, count_lines=True)}
        if args.subword_model:
            made["subwords"] = data_bin_record.file_id(require(args.subword_model))
        data_bin_record.refuse_mixing(args.destdir, record, writing, made)
        if args.mono_train:
            binarize_mono(args, dictionary, work)
        if args.pair:
            binarize_pairs(args, dictionary, work)
        check_outputs(args.destdir)
        data_bin_record.write_record(args.destdir, {**record, **dict.fromkeys(writing, made)})
        # written last, each by rename: an interrupted run leaves no dictionary,
        # so the directory is never mistaken for a finished one
        for name in ["dict.txt"] + [f"dict.{lang}.txt" for lang in args.langs]:
            staged = os.path.join(work, f"final.{name}")
            shutil.copyfile(dictionary, staged)
            os.replace(staged, os.path.join(args.destdir, name))
    print(args.destdir)


if __name__ == "__main__":
    run_main(main)
