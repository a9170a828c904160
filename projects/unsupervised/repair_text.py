"""The repair recipe's text steps (projects.unsupervised.repair): word by word
with the lexicon, in each direction with its own --one-way file and
--min-score, and sentencepiece pieces of the joint model in WORK_DIR."""

import shutil
from pathlib import Path

from mass_tools import apply_subwords
from projects.unsupervised import induce_lexicon, translate_words
from projects.unsupervised.commands import call, progress

PLACEHOLDER = "~"  # each run of words the lexicon lacks


def other(s, lang):
    """The other language of the pair."""
    return s.l2 if lang == s.l1 else s.l1


def min_score(s, lang):
    """The --min-score of word pairs from ``lang``."""
    return s.min_score_l1_l2 if lang == s.l1 else s.min_score_l2_l1


def lexicon(s, src):
    """The --one-way file of the direction from ``src``."""
    return f"{s.lexicon}.{src}-{other(s, src)}.tsv"


def plain_words(s, src, source, target, *options):
    """``source`` (in ``src``) word by word into the other language, in ``target``."""
    call(translate_words.main, "--lexicon", lexicon(s, src), "--min-score", min_score(s, src),
         "--src-lang", src, "--tgt-lang", other(s, src), "--input", source, "--output", target,
         *options)


def words(s, src, source, target, *options):
    """plain_words with each run of words the lexicon lacks as the
    placeholder, the runs in ``target``.masked; ``options``: more of
    translate_words's."""
    plain_words(s, src, source, target, "--placeholder", PLACEHOLDER,
                "--masked", f"{target}.masked", *options)


def pieces(s, source, target):
    """``source`` in pieces of WORK_DIR/spm.model, in ``target``."""
    call(apply_subwords.main, "--model", s.work / "spm.model", "--input", source,
         "--output", target)


def induce(s):
    """LEXICON's files (WORK_DIR/lexicon/one.*: each direction's one-way
    lexicon and candidates), learnt from MONO_PREFIX, unless they are there."""
    folder = Path(s.lexicon).parent
    if folder.is_dir():
        return
    progress(f"== the lexicon: word vectors of {s.mono_prefix}.{{{s.l1},{s.l2}}}, mapped")
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    call(induce_lexicon.main, "--src", f"{s.mono_prefix}.{s.l1}", "--src-lang", s.l1,
         "--tgt", f"{s.mono_prefix}.{s.l2}", "--tgt-lang", s.l2,
         "--output", tmp / f"mutual.{s.l1}-{s.l2}.tsv", "--one-way", tmp / Path(s.lexicon).name,
         "--candidates", 5, *s.lexicon_args.split(), stderr=tmp / "induce.log")
    shutil.move(tmp, folder)
