"""Where the repair recipe's models start (projects.unsupervised.repair).

Round 1's model starts from one of three (compared at equal updates in
projects/unsupervised/results.md):

* random initialisation (DAE_UPDATES=0, MASS_UPDATES=0);
* a denoising model (DAE_UPDATES > 0): the same model first trained, noisy
  -> clean, on round 1's shuffled and thinned copies of every line alone;
* MASS (MASS_UPDATES > 0): the plugin's ``masked_s2s`` pre-training on
  MONO_PREFIX's text of both languages (``--langs L1,L2``), with the repair
  model's own architecture (``transformer_mass`` in MODEL_ARGS) and no
  language embeddings: the repair model reads and writes one language, which
  its words tell, and fairseq's translation task names no language per
  sentence.

A later round starts from the round before it.
"""

import shutil
import subprocess
import sys

from projects.unsupervised.commands import fail, progress, run
from projects.unsupervised.repair_model import fit, hold_out, model_arch, train
from projects.unsupervised.repair_text import pieces

HELD_OUT = 200  # lines of each language for MASS's validation loss


def check_start(s):
    """Stop where the start variables contradict each other or the model."""
    if s.dae_updates and s.mass_updates:
        fail(f"DAE_UPDATES={s.dae_updates} and MASS_UPDATES={s.mass_updates}: round 1 starts "
             "from one model; set the other to 0")
    arch = model_arch(s)
    if s.mass_updates and not arch.startswith("transformer_mass"):
        fail(f"MASS_UPDATES={s.mass_updates} pre-trains with the plugin's masked_s2s task, whose "
             f"model is transformer_mass: MODEL_ARGS has --arch {arch or '(none)'}; give "
             "MODEL_ARGS='--arch transformer_mass ...' (the default's sizes, with that --arch)")
    if s.translator_mass_updates and s.mass_updates:
        fail(f"TRANSLATOR_MASS_UPDATES={s.translator_mass_updates} and MASS_UPDATES="
             f"{s.mass_updates}: with MASS_UPDATES the translator starts from the recipe's MASS "
             "pre-training; set TRANSLATOR_MASS_UPDATES=0")
    if s.translator_mass_updates and not s.translator_updates:
        fail(f"TRANSLATOR_MASS_UPDATES={s.translator_mass_updates} starts the translator, which "
             "TRANSLATOR_UPDATES=0 leaves out: give TRANSLATOR_UPDATES a number of updates")
    if s.translator_arch and not s.translator_updates:
        fail(f"TRANSLATOR_ARCH={s.translator_arch} sets the translator's model, which "
             "TRANSLATOR_UPDATES=0 leaves out: give TRANSLATOR_UPDATES a number of updates")
    if s.translator_arch and (s.mass_updates or s.translator_mass_updates):
        fail(f"TRANSLATOR_ARCH={s.translator_arch} is for a translator from random "
             "initialisation; a MASS start (MASS_UPDATES or TRANSLATOR_MASS_UPDATES) has "
             "transformer_mass already: leave TRANSLATOR_ARCH empty")
    if s.mass_updates or s.translator_mass_updates:
        check_mass_text(s)


def check_mass_text(s):
    """Stop, before any work, where MONO_PREFIX is too short for MASS
    pre-training and its held-out lines."""
    for lang in (s.l1, s.l2):
        with open(f"{s.mono_prefix}.{lang}", "rb") as f:
            lines = sum(1 for _ in f)
        if lines <= 2 * HELD_OUT:
            name = "MASS_UPDATES" if s.mass_updates else "TRANSLATOR_MASS_UPDATES"
            fail(f"{s.mono_prefix}.{lang} has {lines} lines: {name} pre-trains MASS on it, "
                 f"which needs more than {2 * HELD_OUT} ({HELD_OUT} are held out for its "
                 "validation loss)")


def mass_data(s, folder):
    """FOLDER/bin: MONO_PREFIX's text of each language in pieces, binarized
    with the recipe's dictionary as masked_s2s --langs reads it, the last
    HELD_OUT lines of each for the validation loss."""
    for lang in (s.l1, s.l2):
        pieces(s, f"{s.mono_prefix}.{lang}", folder / f"all.{lang}")
        hold_out(folder / f"all.{lang}", folder / f"train.{lang}", folder / f"valid.{lang}",
                 HELD_OUT)
    shutil.rmtree(folder / "bin.tmp", ignore_errors=True)
    run([sys.executable, "-m", "mass_tools.binarize", "--destdir", folder / "bin.tmp",
         "--langs", f"{s.l1},{s.l2}", "--dict", s.work / "dict.txt", "--workers", "2",
         "--mono-train", folder / "train.{lang}", "--mono-valid", folder / "valid.{lang}"],
        stdout=folder / "binarize.log", stderr=subprocess.STDOUT, log=folder / "binarize.log")
    shutil.move(folder / "bin.tmp", folder / "bin")


def mass_model(s, folder=None, updates=None, model_args=None, purpose="round 1"):
    """FOLDER (WORK_DIR/mass by default): ``updates`` (MASS_UPDATES by
    default) updates of masked_s2s pre-training of ``model_args``
    (MODEL_ARGS by default; half of each sentence masked, the paper's
    default), unless done; its last checkpoint. Interrupted, it resumes
    from that checkpoint. ``purpose``: what it starts, for the progress line."""
    folder = folder or s.work / "mass"
    updates = updates or s.mass_updates
    last = folder / "ckpt/checkpoint_last.pt"
    if (folder / "ckpt/done").is_file():
        return last
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "bin").is_dir():
        mass_data(s, folder)
    langs = f"{s.l1},{s.l2}"
    progress(f"== MASS pre-training before {purpose}: {updates} updates on "
             f"{s.mono_prefix}.{{{langs}}}")
    fit(s, folder, ["--task", "masked_s2s", "--langs", langs, "--valid-subset",
                    f"valid.{s.l1},valid.{s.l2}", "--language-embeddings", "none"],
        updates, criterion=("masked_s2s_loss",), model_args=model_args)
    return last


def dae_model(s):
    """WORK_DIR/dae: DAE_UPDATES updates on round 1's shuffled, thinned
    copies alone, unless done; its last checkpoint."""
    dae = s.work / "dae"
    dae.mkdir(parents=True, exist_ok=True)
    if not (dae / "ckpt/done").is_file():
        for lang in (s.l1, s.l2):
            shutil.copyfile(s.work / f"round1/dae.spm.n{lang}", dae / f"pairs.{lang}.noisy")
            shutil.copyfile(s.work / f"round1/dae.spm.{lang}", dae / f"pairs.{lang}.clean")
    train(s, dae, s.dae_updates, None, "denoising, before round 1")
    return dae / "ckpt/checkpoint_last.pt"


def train_round(s, round_):
    """Round ``round_``'s model: round 1's from its start (MASS, denoising,
    or random initialisation), a later round's from the round before."""
    if round_ > 1:
        start, updates = s.work / f"round{round_ - 1}/ckpt/checkpoint_last.pt", s.updates
    elif s.mass_updates:
        start, updates = mass_model(s), s.first_updates
    elif s.dae_updates:
        start, updates = dae_model(s), s.first_updates
    else:
        start, updates = None, s.first_updates
    train(s, s.work / f"round{round_}", updates, start, f"round {round_}")
