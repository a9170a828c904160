"""The repair rounds of the unsupervised recipe (python -m
projects.unsupervised.repair), and the system they make.

A round's model repairs word-by-word output: one Transformer for both
languages (fairseq's translation task, noisy -> clean), trained on each
language's monolingual text beside its round trip into the other language
and back (Kim et al., 2018). Round 1's round trips go word by word both ways,
and shuffled, thinned copies of every line join them; a later round's go
there word by word, repaired into the other language by the round before's
model (the way a model writes it, which a round trip through the lexicon
never meets), and back word by word, twice, beside round trips whose way
there draws the most frequent words' translations from the lexicon's
candidates (SAMPLE_WORDS). Each run of words the lexicon lacks is a
placeholder on both sides, so that the model keeps it in place and the
words are put back after the repair.

The system of round R (``translate``): word by word with placeholders,
repaired by round R's model (NBEST hypotheses, beam SCORE_BEAM,
CTranslate2), the placeholders restored from the first hypothesis
that kept them all, a line whose every hypothesis lost one falling back to
word by word. Round 0 is word by word alone.
"""

import random
import shutil
import subprocess
import sys
from pathlib import Path

from mass_tools.textio import AtomicWriter, InputError, read_lines
from projects.unsupervised import translate_words
from projects.unsupervised.commands import (
    call,
    concatenate,
    convert_ct2,
    ct2_device,
    fairseq_train,
    hold_out,
    pieces,
    progress,
    run,
)
from projects.unsupervised.translate_words import WordTranslator, read_lexicon

PLACEHOLDER = "~"  # each run of words the lexicon lacks
SHUFFLE, DROPOUT = 3.0, 0.1  # round 1's copies: words move < 3 positions, 10% dropped


def other(s, lang):
    """The other language of the pair."""
    return s.l2 if lang == s.l1 else s.l1


def min_score(s, lang):
    """The --min-score of word pairs from ``lang``."""
    return s.min_score_l1_l2 if lang == s.l1 else s.min_score_l2_l1


def lexicon(s, src):
    """The one-way lexicon of the direction from ``src``."""
    return f"{s.lexicon}.{src}-{other(s, src)}.tsv"


def word_by_word(s, src, source, target, *options):
    """``source`` (in ``src``) word by word into the other language, in ``target``."""
    call(translate_words.main, "--lexicon", lexicon(s, src), "--min-score", min_score(s, src),
         "--src-lang", src, "--tgt-lang", other(s, src), "--input", source, "--output", target,
         *options)


def masked_words(s, src, source, target, *options):
    """word_by_word with each run of words the lexicon lacks as the
    placeholder, the runs in ``target``.masked."""
    word_by_word(s, src, source, target, "--placeholder", PLACEHOLDER,
                 "--masked", f"{target}.masked", *options)


def subwords(s):
    """WORK_DIR/spm.model, the joint sentencepiece model of
    MONO_PREFIX (the placeholder a piece of its own), and dict.txt, its
    fairseq dictionary, unless they are there."""
    w = s.work
    if (w / "dict.txt").is_file():
        return
    progress(f"== subwords: {s.spm_vocab} pieces over {s.mono_prefix}.{{{s.l1},{s.l2}}}")
    run([sys.executable, "-m", "mass_tools.learn_subwords", f"{s.mono_prefix}.{s.l1}",
         f"{s.mono_prefix}.{s.l2}", "--output", w / "spm", "--vocab-size", s.spm_vocab,
         "--symbols", PLACEHOLDER, "--threads", "2"], stdout=w / "spm.log",
        stderr=subprocess.STDOUT)
    (w / "placeholder.txt").write_text(PLACEHOLDER + "\n", encoding="utf-8")
    together = w / "mono.spm.all.tmp"
    together.unlink(missing_ok=True)
    for name in (f"{s.mono_prefix}.{s.l1}", f"{s.mono_prefix}.{s.l2}", w / "placeholder.txt"):
        pieces(s, name, w / "pieces.tmp")
        with open(together, "ab") as out:
            out.write((w / "pieces.tmp").read_bytes())
    shutil.move(together, w / "mono.spm.all")
    run(["fairseq-preprocess", "--only-source", "--trainpref", w / "mono.spm.all",
         "--destdir", w / "dict", "--workers", "2"], stdout=w / "dict.log")
    shutil.move(w / "dict/dict.txt", w / "dict.txt")


def noised(words, shuffle, dropout, rng, keep=()):
    """``words`` shuffled locally (each moves by less than ``shuffle``
    positions), then thinned out (never the words in ``keep``); never empty."""
    keys = [i + rng.uniform(0, shuffle) for i in range(len(words))]
    moved = [word for _, word in sorted(zip(keys, words))]
    return [word for word in moved if word in keep or rng.random() >= dropout] or moved[:1]


def noised_copies(source, prefix, lang, seed=1):
    """PREFIX.nLANG / PREFIX.LANG: a shuffled, thinned copy of each non-empty
    line of ``source`` beside the line (Lample et al., 2018's noise)."""
    rng = random.Random(seed)
    with AtomicWriter(f"{prefix}.n{lang}") as noisy, AtomicWriter(f"{prefix}.{lang}") as clean:
        for line in read_lines(source):
            words = line.split()
            if words:
                noisy.write(" ".join(noised(words, SHUFFLE, DROPOUT, rng)) + "\n")
                clean.write(" ".join(words) + "\n")


def round_trip_pairs(s, lang, text, back, prefix):
    """PREFIX.nLANG / PREFIX.LANG: each line of ``back`` (``text`` there and
    back, its placeholders kept) beside the ``text`` line with each run of
    words the lexicon lacks masked as on the way out; only pairs with as
    many placeholders on both sides (restoring needs them)."""
    known = read_lexicon(lexicon(s, lang), min_score=float(min_score(s, lang)))
    mask = WordTranslator({word: word for word in known}, lang, lang, PLACEHOLDER)
    lines = [list(read_lines(path)) for path in (text, back)]
    if len(lines[0]) != len(lines[1]):
        raise InputError(f"{text} has {len(lines[0])} lines, {back} {len(lines[1])}")
    kept = 0
    with AtomicWriter(f"{prefix}.n{lang}") as noisy, AtomicWriter(f"{prefix}.{lang}") as clean:
        for line, way_back in zip(*lines):
            masked = mask(line, [])
            if masked and way_back.strip() and \
                    masked.count(PLACEHOLDER) == way_back.count(PLACEHOLDER):
                noisy.write(way_back.strip() + "\n")
                clean.write(masked + "\n")
                kept += 1
    if not kept:
        raise InputError(f"{back}: no line has as many placeholders as its line of {text}")
    print(f"{kept} of {len(lines[0])} lines kept (as many placeholders on both sides)",
          file=sys.stderr)


def round_trip(s, round_, lang, there, name, text=None):
    """roundR/NAME.nLANG / NAME.LANG, and in pieces NAME.spm.*: ``text``
    (MONO_PREFIX.LANG) beside ``there``, its translation into the other
    language, translated back word by word."""
    folder = s.work / f"round{round_}"
    back = f"{there}.back"
    masked_words(s, other(s, lang), there, back)
    round_trip_pairs(s, lang, text or f"{s.mono_prefix}.{lang}", back, folder / name)
    for suffix in (f"n{lang}", lang):
        pieces(s, folder / f"{name}.{suffix}", folder / f"{name}.spm.{suffix}")


def pairs(s, round_, lang):
    """roundR/pairs.LANG.{noisy,clean} in pieces, unless they are there."""
    folder = s.work / f"round{round_}"
    if (folder / f"pairs.{lang}.clean").is_file():
        return
    mono = f"{s.mono_prefix}.{lang}"
    if round_ == 1:
        progress(f"== round 1: {lang} text to {other(s, lang)} word by word and back")
    else:
        progress(f"== round {round_}: {lang} text to {other(s, lang)} word by word, repaired "
                 f"by round {round_ - 1}'s model, and back")
    model = folder / f"model.{lang}"
    if not model.is_file():  # kept when a round is resumed
        masked_words(s, lang, mono, folder / f"there.{lang}")
        if round_ == 1:
            shutil.copyfile(folder / f"there.{lang}", f"{model}.tmp")
            shutil.move(f"{model}.tmp", model)
        else:
            repair(s, s.work / f"round{round_ - 1}/ckpt/checkpoint_last.pt", other(s, lang),
                   folder / f"there.{lang}", model)
    round_trip(s, round_, lang, model, "rt")
    if round_ == 1:  # and the shuffled, thinned copies
        noised_copies(mono, folder / "dae", lang)
        for suffix in (f"n{lang}", lang):
            pieces(s, folder / f"dae.{suffix}", folder / f"dae.spm.{suffix}")
        parts = [folder / "rt.spm", folder / "dae.spm"]
    else:  # the model's round trips twice, and the sampled ones
        parts = [folder / "rt.spm", folder / "rt.spm"]
        if s.sample_words > 0:
            sampled = folder / f"sampled.{lang}"
            masked_words(s, lang, mono, sampled, "--seed", round_, "--sample",
                         f"{s.lexicon}.{lang}-{other(s, lang)}.candidates.tsv",
                         "--sample-words", s.sample_words)
            round_trip(s, round_, lang, sampled, "srt")
            parts.append(folder / "srt.spm")
    concatenate([f"{part}.n{lang}" for part in parts], folder / f"pairs.{lang}.noisy")
    concatenate([f"{part}.{lang}" for part in parts], folder / f"pairs.{lang}.clean.tmp")
    shutil.move(folder / f"pairs.{lang}.clean.tmp", folder / f"pairs.{lang}.clean")


def train(s, round_):
    """Round ``round_``'s model, unless roundR/ckpt/done says it was trained:
    round 1 FIRST_UPDATES from random initialisation, a later round UPDATES
    from the round before's. The pairs of both languages binarized, their
    last 200 held out for fairseq's validation loss."""
    folder = s.work / f"round{round_}"
    if (folder / "ckpt/done").is_file():
        return
    if not (folder / "bin").is_dir():
        for side in ("noisy", "clean"):
            concatenate([folder / f"pairs.{lang}.{side}" for lang in (s.l1, s.l2)],
                        folder / f"all.{side}")
            hold_out(folder / f"all.{side}", folder / f"train.{side}",
                     folder / f"heldout.{side}")
        dictionary = s.work / "dict.txt"
        run(["fairseq-preprocess", "-s", "noisy", "-t", "clean", "--trainpref",
             folder / "train", "--validpref", folder / "heldout", "--srcdict", dictionary,
             "--tgtdict", dictionary, "--destdir", folder / "bin.tmp", "--workers", "2"],
            stdout=folder / "preprocess.log")
        shutil.move(folder / "bin.tmp", folder / "bin")
    updates, restore = s.first_updates, None
    if round_ > 1:
        updates = s.updates
        restore = s.work / f"round{round_ - 1}/ckpt/checkpoint_last.pt"
    count = (folder / "train.noisy").read_bytes().count(b"\n")
    progress(f"== round {round_}: training on {count} pairs, {updates} updates")
    fairseq_train(s, folder, ["--task", "translation", "-s", "noisy", "-t", "clean"], updates,
                  s.model_args, restore)


def repair(s, model, lang, source, target, nbest=1, beam=None):
    """``target``: the ``model``'s ``nbest`` repairs into ``lang`` (beam
    ``beam``, else BEAM) of each line of ``source`` (text with
    placeholders), best first, by CTranslate2 (the model converted once;
    fairseq-generate gave the same valid BLEU three times slower)."""
    ct2 = Path(model).parent / "ct2"
    if not newer(ct2 / "model.bin", model):
        shutil.rmtree(ct2, ignore_errors=True)
        shutil.rmtree(f"{ct2}.tmp", ignore_errors=True)
        convert_ct2(model, ct2, f"{Path(model).parent}/../bin", ("noisy", "clean"), s.model_args)
    run([sys.executable, "-m", "mass_tools.translate_ct2", "--model", ct2, "--spm",
         s.work / "spm.model", "--input", source, "--output", f"{target}.tmp",
         "--beam", beam or s.beam, "--nbest", nbest, "--batch-size", "64",
         "--max-len-a", "1.2", "--max-len-b", "10", "--compute-type", s.ct2_compute_type,
         "--device", ct2_device()], stderr=f"{target}.log", log=f"{target}.log")
    shutil.move(f"{target}.tmp", target)


def newer(path, than):
    """bash's ``[ PATH -nt THAN ]``."""
    path, than = Path(path), Path(than)
    return path.exists() and (not than.exists()
                              or path.stat().st_mtime_ns > than.stat().st_mtime_ns)


def restore(line, words):
    """``line`` with its placeholders replaced by ``words``; None if the counts differ."""
    parts = line.split(PLACEHOLDER)
    if len(parts) != len(words) + 1:
        return None
    out = [parts[0]]
    for word, part in zip(words, parts[1:]):
        out += [word, part]
    return "".join(out)


def restore_all(repaired, masked, fallback, nbest, out):
    """``out``: for each line, the first of its ``nbest`` hypotheses in
    ``repaired`` with the words of ``masked`` put back, else the line of
    ``fallback``; a line each of what it did, for the log."""
    hypotheses, masked, fallback = (list(read_lines(path))
                                    for path in (repaired, masked, fallback))
    if len(hypotheses) != nbest * len(masked) or len(masked) != len(fallback):
        raise InputError(f"{repaired}, {masked} and {fallback} do not hold the same text")
    fell_back = later = 0
    with AtomicWriter(out) as f:
        for i, (words, default) in enumerate(zip(masked, fallback)):
            words = words.split("\t") if words else []
            for rank, hypothesis in enumerate(hypotheses[i * nbest:(i + 1) * nbest]):
                if (restored := restore(hypothesis, words)) is not None:
                    later += rank > 0
                    break
            else:
                restored, fell_back = default, fell_back + 1
            f.write(restored + "\n")
    said = [f"{fell_back} of {len(masked)} lines fell back to --fallback"]
    return said + [f"{later} lines took a hypothesis after the first"] * (nbest > 1)


def translate(s, round_, src, text, out, name):
    """``out``: the file ``text`` (in ``src``) translated by round
    ``round_``'s system; the word-by-word files kept as
    WORK_DIR/{words,plain}.NAME.SRC. Returns what restoring said."""
    w = s.work
    masked, plain = w / f"words.{name}.{src}", w / f"plain.{name}.{src}"
    if not masked.is_file():
        masked_words(s, src, text, masked)
    if not plain.is_file():
        word_by_word(s, src, text, plain)
    if round_ == 0:
        Path(out).write_bytes(plain.read_bytes())
        return ""
    repair(s, w / f"round{round_}/ckpt/checkpoint_last.pt", other(s, src), masked,
           f"{out}.nbest", s.nbest, s.score_beam)
    said = restore_all(f"{out}.nbest", f"{masked}.masked", plain, s.nbest, out)
    Path(f"{out}.restore.log").write_text("".join(line + "\n" for line in said))
    return " ".join(said)
