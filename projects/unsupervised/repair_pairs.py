"""The repair recipe's training pairs of a round (projects.unsupervised.repair):
for each language, its monolingual text next to its round trip into the
other language and back, in pieces, as WORK_DIR/roundR/pairs.LANG.{noisy,clean}."""

import shutil

from projects.unsupervised import denoising_pairs, model_round_trip_pairs
from projects.unsupervised.commands import call, concatenate, progress
from projects.unsupervised.repair_model import repair
from projects.unsupervised.repair_text import PLACEHOLDER, lexicon, min_score, other, pieces, words


def round_trip(s, round_, lang, there, name, text=None):
    """Pairs roundR/NAME.nLANG / NAME.LANG (and in pieces, NAME.spm.*) of
    ``text`` (MONO_PREFIX.LANG) with ``there``, its translation into the
    other language, translated back word by word."""
    folder = s.work / f"round{round_}"
    back = f"{there}.back"
    words(s, other(s, lang), there, back)
    call(model_round_trip_pairs.main, "--input", text or f"{s.mono_prefix}.{lang}",
         "--back", back, "--lexicon", lexicon(s, lang), "--min-score", min_score(s, lang),
         "--lang", lang, "--placeholder", PLACEHOLDER, "--output", folder / name,
         "--noisy-suffix", f"n{lang}", "--clean-suffix", lang)
    for suffix in (f"n{lang}", lang):
        pieces(s, folder / f"{name}.{suffix}", folder / f"{name}.spm.{suffix}")


def first_round_parts(s, lang):
    """Round 1's pairs of ``lang``: round trips through the lexicon, shuffled
    and thinned copies of every line, round trips of EXTRA_MONO_PREFIX."""
    folder = s.work / "round1"
    call(denoising_pairs.main, "--input", f"{s.mono_prefix}.{lang}", "--output", folder / "dae",
         "--noisy-suffix", f"n{lang}", "--clean-suffix", lang, "--seed", 1)
    for suffix in (f"n{lang}", lang):
        pieces(s, folder / f"dae.{suffix}", folder / f"dae.spm.{suffix}")
    names = ["rt", "dae"]
    if s.extra_mono_prefix:  # and round trips of the extra text
        extra = f"{s.extra_mono_prefix}.{lang}"
        words(s, lang, extra, folder / f"extra.{lang}")
        round_trip(s, 1, lang, folder / f"extra.{lang}", "ert", extra)
        names.append("ert")
    return [folder / f"{name}.spm" for name in names]


def later_round_parts(s, round_, lang):
    """A later round's pairs of ``lang``: the model's round trips twice,
    sampled round trips, round 1's pairs of MONO_PREFIX (KEEP_ROUND1_PAIRS=1)."""
    folder = s.work / f"round{round_}"
    parts = [folder / "rt.spm", folder / "rt.spm"]
    if s.sample_words > 0:
        sampled = folder / f"sampled.{lang}"
        words(s, lang, f"{s.mono_prefix}.{lang}", sampled, "--seed", round_,
              "--sample", f"{s.lexicon}.{lang}-{other(s, lang)}.candidates.tsv",
              "--sample-words", s.sample_words)
        round_trip(s, round_, lang, sampled, "srt")
        parts.append(folder / "srt.spm")
    if s.keep_round1_pairs == "1":  # not those of the extra text
        parts += [s.work / "round1/rt.spm", s.work / "round1/dae.spm"]
    return parts


def pairs(s, round_, lang):
    """roundR/pairs.LANG.{noisy,clean} in pieces, unless they are there."""
    folder = s.work / f"round{round_}"
    if (folder / f"pairs.{lang}.clean").is_file():
        return
    if round_ == 1:
        progress(f"== round 1: {lang} text to {other(s, lang)} word by word and back")
    else:
        progress(f"== round {round_}: {lang} text to {other(s, lang)} word by word, repaired "
                 f"by round {round_ - 1}'s model, and back")
    model = folder / f"model.{lang}"
    if not model.is_file():  # kept when a round is resumed
        words(s, lang, f"{s.mono_prefix}.{lang}", folder / f"there.{lang}")
        if round_ == 1:
            shutil.copyfile(folder / f"there.{lang}", f"{model}.tmp")
            shutil.move(f"{model}.tmp", model)
        else:
            repair(s, s.work / f"round{round_ - 1}/ckpt/checkpoint_last.pt", other(s, lang),
                   folder / f"there.{lang}", model)
    round_trip(s, round_, lang, model, "rt")
    if round_ == 1:
        parts = first_round_parts(s, lang)
    else:
        parts = later_round_parts(s, round_, lang)
    concatenate([f"{part}.n{lang}" for part in parts], folder / f"pairs.{lang}.noisy")
    concatenate([f"{part}.{lang}" for part in parts], folder / f"pairs.{lang}.clean.tmp")
    shutil.move(folder / f"pairs.{lang}.clean.tmp", folder / f"pairs.{lang}.clean")
