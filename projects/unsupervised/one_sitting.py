"""The repair recipe's default run, in one sitting: from the project's raw
corpora to test BLEU with no parallel training text.

    python -m projects.unsupervised.one_sitting --data SHARED   # 77 minutes on 2 CPU cores

SHARED is the corpora's folder (mono-doc/, mono/, para/en-fr/). The
monolingual text is the in-domain text the docs use: the software
documentation of SHARED/mono-doc plus the lines of the web-heavy SHARED/mono
that a unigram model of mono-doc prefers (mass_tools.select_in_domain), made
once in WORK_DIR/raw; the valid and test pairs are SHARED/para/en-fr's,
valid choosing the round, test scored once per system. Then
python -m projects.unsupervised.repair with its defaults: the lexicon induced
from that text, round 1 trained from scratch, round 2 on round trips through
it (CTranslate2), word by word and the chosen round scored on test. Every
variable of the recipe (ROUNDS, FIRST_UPDATES, NUM_GPUS, ...) can still be
set in the environment. Interrupted? Run the same command again.
"""

import argparse
import os
from pathlib import Path

from mass_tools import select_in_domain
from mass_tools.textio import run_main
from projects.unsupervised import repair
from projects.unsupervised.commands import call, fail, progress

LANGS = ("en", "fr")
DEFAULT_WORK_DIR = "work/unsup-one-sitting"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="The recipe's variables: python -m "
                                     "projects.unsupervised.repair --help")
    parser.add_argument("--data", required=True,
                        help="the corpora's folder, holding mono-doc/, mono/ and para/en-fr/")
    parser.add_argument("--work-dir", default=os.environ.get("WORK_DIR") or DEFAULT_WORK_DIR,
                        help="where everything goes (default: the WORK_DIR variable, else "
                        f"{DEFAULT_WORK_DIR})")
    return parser.parse_args(argv)


def check(data):
    """Stop unless the corpora are in ``data``."""
    names = [f"{folder}/{lang}.txt" for folder in ("mono-doc", "mono") for lang in LANGS]
    names += [f"para/en-fr/{split}.{lang}" for split in ("valid", "test") for lang in LANGS]
    for name in names:
        if not (data / name).is_file():
            fail(f"--data {data}: {name} is missing (give the corpora's folder, which holds "
                 "mono-doc/, mono/ and para/en-fr/)")


def in_domain_text(data, raw):
    """raw/mono.LANG: mono-doc and the lines of mono selected by it, made once."""
    raw.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        mono = raw / f"mono.{lang}"
        if mono.is_file():
            continue
        selected = raw / f"selected.{lang}"
        call(select_in_domain.main, "--in-domain", data / f"mono-doc/{lang}.txt",
             "--candidates", data / f"mono/{lang}.txt", "--output", selected)
        partial = raw / f"mono.{lang}.partial"
        partial.write_bytes((data / f"mono-doc/{lang}.txt").read_bytes() + selected.read_bytes())
        partial.rename(mono)
        progress(f"== {mono}: {sum(1 for _ in mono.open(encoding='utf-8'))} lines")


def recipe_env(data, work):
    """The recipe's variables for the corpora ``data`` in ``work``."""
    return dict(MONO_PREFIX=str(Path(work) / "raw/mono"), WORK_DIR=str(work),
                REFERENCE_PREFIX=str(Path(data) / "para/en-fr/test"),
                VALID_PREFIX=str(Path(data) / "para/en-fr/valid"), L1=LANGS[0], L2=LANGS[1])


def main(argv=None):
    args = parse_args(argv)
    data, work = Path(args.data), Path(args.work_dir)
    check(data)
    in_domain_text(data, work / "raw")
    repair.main([], {**os.environ, **recipe_env(data, work)})


if __name__ == "__main__":
    run_main(main)
