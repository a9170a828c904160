"""Which dictionary each binarized file of a directory was made with.

    python -m mass_tools.data_bin_record DATA_BIN [NAME ...]

mass-binarize records, in DATA_BIN/made_with.json, the dictionary (and,
given --subword-model, the subword model) of every file it writes, by
size and MD5, and refuses to add files made with another dictionary to a
directory whose earlier files were made with one. This command checks a
directory before training reads it: it stops (exit status 1) when a file
named NAME or NAME.* (train.en, valid: every valid file; all without a NAME)
was binarized with
another dictionary than the one fairseq loads with it: DATA_BIN/dict.txt for
a monolingual file (masked_s2s), DATA_BIN/dict.LANG.txt for the LANG side
of a pair (translation; dict.txt where there is none). Token numbers of one
dictionary read with another are other words, and nothing else would say
so. Files that mass-binarize did not record are not checked.
"""

import argparse
import hashlib
import json
import os
import re

from mass_tools.textio import InputError, run_main

RECORD = "made_with.json"
PAIR_FILE = re.compile(r"^[^.]+\.[^.-]+-[^.-]+\.(?P<lang>[^.]+)$")  # SPLIT.SRC-TGT.LANG


def file_id(path, count_lines=False):
    """{"md5": ..., "symbols": lines} of a dictionary, {"md5": ..., "name": ...}
    of a subword model: how the record names them."""
    with open(path, "rb") as data:
        content = data.read()
    found = {"md5": hashlib.md5(content).hexdigest()}
    if count_lines:
        found["symbols"] = content.count(b"\n")
    else:
        found["name"] = os.path.basename(path)
    return found


def describe(made):
    """'3116 symbols, md5 1a2b3c4d' (and ', subwords bpe.codes md5 ...')."""
    text = f"{made['dictionary']['symbols']} symbols, md5 {made['dictionary']['md5'][:8]}"
    if made.get("subwords"):
        text += f", subwords {made['subwords']['name']} md5 {made['subwords']['md5'][:8]}"
    return text


def read_record(destdir):
    path = os.path.join(destdir, RECORD)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as record:
        return json.load(record)


def write_record(destdir, record):
    path = os.path.join(destdir, RECORD)
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        json.dump(record, out, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def binarized_files(destdir):
    """The prefixes of the binarized files in ``destdir`` (train.en for train.en.idx)."""
    return sorted(name[:-4] for name in os.listdir(destdir) if name.endswith(".idx"))


def earlier_files(destdir, record):
    """{prefix: what it was made with} for every binarized file of ``destdir``;
    a file mass-binarize did not record counts as made with DESTDIR/dict.txt."""
    current = os.path.join(destdir, "dict.txt")
    unrecorded = {"dictionary": file_id(current, True)} if os.path.isfile(current) else None
    files = {}
    for prefix in binarized_files(destdir):
        made = record.get(prefix, unrecorded)
        if made:
            files[prefix] = made
    return files


def refuse_mixing(destdir, record, writing, made):
    """Stop before files made as ``made`` are added to ``destdir``, whose files
    not among ``writing`` were made with another dictionary or subword model."""
    others = {}
    for prefix, earlier in earlier_files(destdir, record).items():
        if prefix in writing:
            continue
        subwords = [(side.get("subwords") or {}).get("md5") for side in (earlier, made)]
        if (earlier["dictionary"]["md5"] != made["dictionary"]["md5"]
                or (None not in subwords and subwords[0] != subwords[1])):
            others.setdefault(describe(earlier), []).append(prefix)
    if others:
        listed = "; ".join(f"{', '.join(prefixes)} ({made_as})"
                           for made_as, prefixes in others.items())
        raise InputError(
            f"{destdir} holds files binarized with another dictionary or subword model "
            f"than this run's ({describe(made)}): {listed}. One directory mixing them would "
            "read one set's symbol numbers as other words. Delete those files (and redo "
            "what wrote them with this dictionary), or binarize into another --destdir.")


def loaded_with(data_bin, prefix):
    """The dictionary fairseq loads a binarized file with."""
    pair = PAIR_FILE.match(prefix)
    if pair and os.path.isfile(os.path.join(data_bin, f"dict.{pair['lang']}.txt")):
        return os.path.join(data_bin, f"dict.{pair['lang']}.txt")
    return os.path.join(data_bin, "dict.txt")


def check(data_bin, names=()):
    """Stop unless each recorded file NAME or NAME.* of ``names`` (all: none
    given) was made with the dictionary fairseq loads it with."""
    wrong = []
    for prefix, made in sorted(read_record(data_bin).items()):
        if names and not any(prefix == name or prefix.startswith(name + ".") for name in names):
            continue
        if not os.path.isfile(os.path.join(data_bin, prefix + ".idx")):
            continue
        dictionary = loaded_with(data_bin, prefix)
        if not os.path.isfile(dictionary):
            raise InputError(f"{dictionary}: no such file (DATA_BIN={data_bin} has {prefix})")
        now = file_id(dictionary, True)
        if now["md5"] != made["dictionary"]["md5"]:
            wrong.append(f"{prefix} ({describe(made)}; {os.path.basename(dictionary)}: "
                         f"{now['symbols']} symbols, md5 {now['md5'][:8]})")
    if wrong:
        raise InputError(
            f"{data_bin}: files binarized with another dictionary than the one training "
            f"reads them with: {'; '.join(wrong)}. Their symbol numbers would be read as "
            "other words. Binarize them again with this directory's dictionary (data-prep: "
            "redo the script that wrote them), or use the directory they were made for.")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("data_bin", help="a mass-binarize output directory")
    parser.add_argument("names", nargs="*",
                        help="check only the files NAME or NAME.* (e.g. train.en valid)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.data_bin):
        raise InputError(f"{args.data_bin}: no such directory")
    check(args.data_bin, args.names)


if __name__ == "__main__":
    run_main(main)
