"""Unsupervised translation by word-by-word translation repaired by a model of
the target language (Kim et al., 2018), with no parallel training text.

    MONO_PREFIX=raw/mono REFERENCE_PREFIX=raw/test VALID_PREFIX=raw/valid \\
        python -m projects.unsupervised.repair   # or: bash projects/unsupervised/repair.sh

(python -m projects.unsupervised.one_sitting --data SHARED: the same with its
defaults, on the project's corpora: 77 minutes on 2 CPU cores.)

The stages, in order (main):
  1. the lexicon: LEXICON, the --one-way PREFIX of
     projects/unsupervised/induce_lexicon.py (PREFIX.L1-L2.tsv, PREFIX.L2-L1.tsv
     and their .candidates.tsv), or induced from MONO_PREFIX in WORK_DIR/lexicon;
  2. the subwords: one sentencepiece model and dictionary of both languages;
  3. word by word (round 0): the valid (VALID_PREFIX) and test
     (REFERENCE_PREFIX) text of each direction, scored with sacreBLEU;
  4. the repair rounds r = 1..ROUNDS (projects/unsupervised/rounds.py): one
     model of both languages trained on round trips of the monolingual text
     (round 1 word by word both ways, FIRST_UPDATES from random
     initialisation; later rounds through round r-1's model, UPDATES more),
     each round's system (word by word, repaired, placeholders restored)
     scored on valid. The round with the best mean valid BLEU so far is
     WORK_DIR/best.pt; PATIENCE > 0 stops once that many rounds have passed
     without a better one;
  5. the test set, scored once for two systems only: round 0 and the round
     the run ends with (the chosen one; without VALID_PREFIX the last);
     SCORE_TEST=0 scores neither (for comparing settings on valid);
  6. the translator (TRANSLATOR_UPDATES > 0,
     projects/unsupervised/translator.py): one model per direction trained on
     the chosen round's translations of the monolingual text (offline
     back-translation), from random initialisation or from MASS;
  7. the tables, and the chosen round named with its scores.
Results: $WORK_DIR/valid.tsv (round, direction, BLEU, chrF, minutes: every
round), $WORK_DIR/results.tsv (the same on the test set: every test-set
scoring the work directory has seen) and $WORK_DIR/rounds.csv (the columns
of projects/unsupervised/results.csv for the test-scored rounds, the paired
bootstrap against word by word, the output's language shares).
Interrupted? Run the same command again: finished steps are kept, and an
interrupted training resumes from its checkpoint_last.pt.
"""

import argparse
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from mass_tools.textio import run_main
from projects.unsupervised import induce_lexicon, rounds, scores, translator
from projects.unsupervised.commands import (
    Clock,
    call,
    fail,
    progress,
    seconds,
    user_dir,
)

MODEL_ARGS = ("--arch transformer --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 "
              "--decoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 "
              "--encoder-attention-heads 4 --decoder-attention-heads 4 --share-all-embeddings "
              "--dropout 0.1")
# variables of earlier versions whose results did not pay (log.md says what each
# gave), refused rather than ignored where they ask for something other than the default
REMOVED = {"DAE_UPDATES": "0", "MASS_UPDATES": "0", "KEEP_ROUND1_PAIRS": "0",
           "EXTRA_MONO_PREFIX": "", "TRANSLATOR_ARCH": "transformer_mass",
           "GEN_ENGINE": "ctranslate2"}
LAST_HAD_THEM = "caad472"


def var(default="", help="", *, required="", kind=str, choices=(), invalid="", shown=""):
    """A recipe variable: a field of Settings read from VAR=value or
    --var-name value. ``default``: a string, or a function of the values
    read before it (a dict by field name), ``shown`` saying what it is in
    --help; ``kind``: str, int (a whole number) or bool (0 or 1);
    ``invalid``: the advice where a value is not one of those."""
    return field(default=None, metadata=dict(default=default, help=help, required=required,
                                             kind=kind, choices=choices, invalid=invalid,
                                             shown=shown))


@dataclass(frozen=True)
class Settings:
    """The recipe's variables, read once (``settings``) and passed to each stage."""
    mono_prefix: str = var(required="set MONO_PREFIX: MONO_PREFIX.L1 and MONO_PREFIX.L2 hold "
                           "raw monolingual text")
    lexicon: str = var(help="the --one-way PREFIX of projects/unsupervised/induce_lexicon.py; "
                       "empty: WORK_DIR/lexicon/one, induced from MONO_PREFIX by the recipe "
                       "(4 minutes)")
    lexicon_args: str = var("", "more options of induce_lexicon.py where the recipe induces "
                            "LEXICON (e.g. --dim 20 for little text)")
    reference_prefix: str = var(required="set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 "
                                "are the raw test text")
    l1: str = var("en")
    l2: str = var("fr")
    valid_prefix: str = var(help="raw valid pairs, scored each round as well")
    work_dir: str = var("work/unsup-repair")
    rounds: int = var("2", kind=int)
    min_score_l1_l2: str = var("0.1", "weaker word pairs L1->L2 stay untranslated")
    min_score_l2_l1: str = var("0.05")
    spm_vocab: int = var("8000", kind=int)
    first_updates: int = var("1500", "round 1, from random initialisation", kind=int)
    updates: int = var("500", "each later round", kind=int)
    max_tokens: int = var("4096", kind=int)
    tokens_per_update: int = var(lambda v: v["max_tokens"], kind=int,
                                 shown="the value of MAX_TOKENS")
    lr: str = var("0.0005")
    beam: int = var("5", "each round trip's repairs", kind=int)
    score_beam: int = var(lambda v: v["beam"], "the test and valid sets' repairs", kind=int,
                          shown="the value of BEAM")
    nbest: int = var("5", "hypotheses searched for the placeholders", kind=int)
    model_args: str = var(MODEL_ARGS, "fairseq-train's model options")
    system: str = var("words_then_repair", "rounds.csv's system column")
    ct2_compute_type: str = var("int8", "with ctranslate2: int8, float32, ...")
    sample_words: int = var("150", "words drawn from the candidates from round 2 on", kind=int)
    translator_updates: int = var("0", "a model per direction trained this long by "
                                  "back-translation from the final round's pipeline (0: none)",
                                  kind=int, invalid="give a number of updates (0: no translator)")
    translator_mass_updates: int = var(
        "0", "the translator (transformer_mass with MODEL_ARGS's sizes) starts from MASS "
        "pre-training this long", kind=int, invalid="give a number of updates (0: the "
        "translator starts from random initialisation)")
    score_test: bool = var("1", "0: the valid set alone, as when comparing settings; the test "
                           "set is for the final system", kind=bool,
                           invalid="give 1 (score the test set) or 0 (the valid set alone)")
    patience: int = var("0", "stop after this many rounds with no better valid BLEU", kind=int,
                        invalid="give a number of rounds (0: run all ROUNDS)")
    work: Path = None  # WORK_DIR as a Path
    induce_lexicon: bool = False  # LEXICON was empty: the recipe induces it


def variables():
    return [f for f in fields(Settings) if f.metadata]


def describe(f):
    m = f.metadata
    if m["required"]:
        return f"required: {m['required']}".replace("%", "%%")
    default = m["shown"] or repr(m["default"])
    return f"{m['help']} (default: {default})".lstrip().replace("%", "%%")


def parser():
    """An option per variable; --help: this description and every variable with its default."""
    result = argparse.ArgumentParser(
        prog="python -m projects.unsupervised.repair",
        usage="[VAR=value ...] %(prog)s [--var-name value ...]", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each variable is read from the environment (VAR=value), or given as its "
        "option, which wins (a value that starts with -, as MODEL_ARGS's, after =: "
        "--model-args='--arch ...'); NUM_GPUS and USER_DIR (as mass_tools/shell/common.sh "
        "reads them) from the environment alone.")
    group = result.add_argument_group("variables (VAR=value, or --var-name value)")
    for f in variables():
        group.add_argument("--" + f.name.replace("_", "-"), dest=f.name, metavar=f.name.upper(),
                           default=None, help=describe(f))
    return result


def convert(f, value):
    """``value`` of the variable ``f`` as its kind; stop where it is not one."""
    m, name = f.metadata, f.name.upper()
    if m["kind"] is int and not re.fullmatch(r"[0-9]+", value):
        fail(f"{name}={value}: {m['invalid'] or 'give a whole number'}")
    if (m["choices"] and value not in m["choices"]) or (
            m["kind"] is bool and value not in ("0", "1")):
        fail(f"{name}={value}: {m['invalid']}")
    return value == "1" if m["kind"] is bool else m["kind"](value)


def read(argv=None, environ=None):
    """The variables' values by field name: the options in ``argv``, else
    ``environ`` (the environment), else their defaults (an empty value counts
    as none); one line of error where one is missing or invalid."""
    args = parser().parse_args(argv)
    environ = os.environ if environ is None else environ
    for name, default in REMOVED.items():
        if environ.get(name, default) not in ("", default):
            fail(f"{name}={environ[name]}: the recipe no longer has {name} (its results did "
                 f"not pay; projects/unsupervised/log.md says what it gave; commit "
                 f"{LAST_HAD_THEM} was the last to have it): unset it")
    values = {}
    for f in variables():
        value = getattr(args, f.name)
        if value is None:
            value = environ.get(f.name.upper())
        if value is None or value == "":
            if f.metadata["required"]:
                fail(f"{f.name.upper()}: {f.metadata['required']}")
            default = f.metadata["default"]
            value = default(values) if callable(default) else default
        values[f.name] = convert(f, str(value))
    return values


def settings(argv=None, environ=None):
    """The recipe's Settings, checked before any work."""
    s = Settings(**read(argv, environ))
    user_dir()  # stops here where mass_plugin is not installed
    check_files(s)
    if s.nbest > s.score_beam:
        fail(f"NBEST={s.nbest} exceeds SCORE_BEAM={s.score_beam} (which is BEAM unless set)")
    if not s.score_test and not s.valid_prefix:
        fail("SCORE_TEST=0 needs VALID_PREFIX: without the test set the rounds are scored "
             "on the valid pairs alone")
    if s.patience and not s.valid_prefix:
        fail(f"PATIENCE={s.patience} needs VALID_PREFIX, the valid pairs that choose the round")
    if importlib.util.find_spec("ctranslate2") is None:
        fail("the repairs are decoded by CTranslate2, which is not installed: pip install -e "
             "'.[serve]'")
    if s.translator_mass_updates:
        check_mass_text(s)
    return replace(s, work=Path(s.work_dir), induce_lexicon=not s.lexicon,
                   lexicon=s.lexicon or str(Path(s.work_dir) / "lexicon/one"))


def check_files(s):
    """Stop unless the text and the lexicons (and their candidates) are there."""
    l1, l2 = s.l1, s.l2
    files = [f"{prefix}.{lang}" for prefix in (s.mono_prefix, s.reference_prefix,
                                               s.valid_prefix) if prefix for lang in (l1, l2)]
    if s.lexicon:
        files += [f"{s.lexicon}.{l1}-{l2}.tsv", f"{s.lexicon}.{l2}-{l1}.tsv"]
    for name in files:
        if not os.path.isfile(name) or os.path.getsize(name) == 0:
            fail(f"{name} is missing or empty")
    for direction in (f"{l1}-{l2}", f"{l2}-{l1}") if s.lexicon else ():
        candidates = f"{s.lexicon}.{direction}.candidates.tsv"
        if s.sample_words and s.rounds >= 2 and not (
                os.path.isfile(candidates) and os.path.getsize(candidates)):
            fail(f"{candidates} is missing: make it with projects/unsupervised/induce_lexicon.py "
                 f"--one-way {s.lexicon} --candidates 5, or set SAMPLE_WORDS=0")


def check_mass_text(s):
    """Stop where TRANSLATOR_MASS_UPDATES would start without the translator,
    or MONO_PREFIX is too short for MASS pre-training and its held-out lines."""
    if not s.translator_updates:
        fail(f"TRANSLATOR_MASS_UPDATES={s.translator_mass_updates} starts the translator, "
             "which TRANSLATOR_UPDATES=0 leaves out: give TRANSLATOR_UPDATES a number of updates")
    held_out = translator.HELD_OUT
    for lang in (s.l1, s.l2):
        with open(f"{s.mono_prefix}.{lang}", "rb") as f:
            lines = sum(1 for _ in f)
        if lines <= 2 * held_out:
            fail(f"{s.mono_prefix}.{lang} has {lines} lines: TRANSLATOR_MASS_UPDATES pre-trains "
                 f"MASS on it, which needs more than {2 * held_out} ({held_out} are held out "
                 "for its validation loss)")


def lexicon(s):
    """Stage 1: LEXICON's files (WORK_DIR/lexicon/one.*: each direction's
    one-way lexicon and candidates), learnt from MONO_PREFIX, unless given or there."""
    folder = Path(s.lexicon).parent
    if not s.induce_lexicon or folder.is_dir():
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


def score(s, round_, src, split, clock):
    """A row of valid.tsv or results.tsv (``split`` test): round ``round_``'s
    system on the split's SRC text, unless it is there; whether it was scored anew."""
    prefix = s.valid_prefix if split == "valid" else s.reference_prefix
    tgt = rounds.other(s, src)
    table = s.work / ("valid.tsv" if split == "valid" else "results.tsv")
    if scores.has_row(table, round_, f"{src}-{tgt}"):
        return False
    out = s.work / f"round{round_}.{split}.{src}-{tgt}.txt"
    restored = rounds.translate(s, round_, src, f"{prefix}.{src}", out, split)
    text = scores.sacrebleu(f"{prefix}.{tgt}", out)
    progress(f"== round {round_} {src}->{tgt} {split}: {restored}")
    progress(text)
    scores.add_row(table, round_, f"{src}-{tgt}", text, clock.minutes())
    return True


def score_valid(s, round_, clock):
    """A round on the valid set, each direction (nothing without VALID_PREFIX)."""
    for src in (s.l1, s.l2) if s.valid_prefix else ():
        score(s, round_, src, "valid", clock)


def score_test(s, round_, clock):
    """Stage 5, and round 0's: the test set, each direction, for ``round_``,
    then rounds.csv. Each round is scored on test at most once."""
    scored = [score(s, round_, src, "test", clock) for src in (s.l1, s.l2)]
    done = s.work / "rounds.csv"
    # resumed, nothing scored anew and the round in rounds.csv: its paired bootstraps stand
    if not any(scored) and done.is_file() and any(
            line.startswith(f"{s.system},{round_},") for line in done.read_text().splitlines()):
        return
    scores.write_rounds(s.work, (s.l1, s.l2), s.reference_prefix, s.system, s.updates,
                        s.first_updates)


def chosen(s):
    """The round with the best mean valid BLEU so far, linked as WORK_DIR/best.pt."""
    best = scores.choose(scores.read_results(s.work / "valid.tsv"), (s.l1, s.l2))
    link = s.work / "best.pt"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(f"round{best}/ckpt/checkpoint_last.pt")
    return best


def repair_rounds(s, clock):
    """Stage 4: rounds 1..ROUNDS (fewer where PATIENCE stops them), each
    scored on valid; the round the run ends with: the chosen one, else the last."""
    final = 0
    for round_ in range(1, s.rounds + 1):
        (s.work / f"round{round_}").mkdir(parents=True, exist_ok=True)
        start = seconds()
        rounds.pairs(s, round_, s.l1)
        rounds.pairs(s, round_, s.l2)
        rounds.train(s, round_)
        clock.spent(start)
        score_valid(s, round_, clock)
        final = chosen(s) if s.valid_prefix else round_
        if s.patience > 0 and round_ - final >= s.patience:
            progress(f"== stopping after round {round_}: no better mean valid BLEU in the "
                     f"{s.patience} round(s) since round {final} (PATIENCE={s.patience})")
            break
    return final


def back_translations(s, final):
    """Stage 6's input: round ``final``'s system's translation of each
    language's monolingual text, made once for every start of the
    translator; {(SRC, TGT): the SRC file made from TGT's text}."""
    synthetic = {}
    for src, tgt in ((s.l1, s.l2), (s.l2, s.l1)):
        path = s.work / f"translator/round{final}/mono.{tgt}-{src}.{src}"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            progress(f"== translator: {s.mono_prefix}.{tgt} into {src} by round {final}'s "
                     "pipeline")
            rounds.translate(s, final, tgt, f"{s.mono_prefix}.{tgt}", f"{path}.tmp", "mono")
            Path(f"{path}.tmp").rename(path)
        synthetic[(src, tgt)] = path
    return synthetic


def main(argv=None, environ=None):
    s = settings(argv, environ)
    s.work.mkdir(parents=True, exist_ok=True)
    for table in ("results", "valid"):
        scores.start_table(s.work / f"{table}.tsv")
    clock = Clock(s.work)
    start = seconds()
    lexicon(s)                                 # 1
    rounds.subwords(s)                         # 2
    clock.spent(start)
    score_valid(s, 0, clock)                   # 3: word by word
    if s.score_test:
        score_test(s, 0, clock)
    final = repair_rounds(s, clock)            # 4
    if final and s.score_test:                 # 5
        how = "chosen on valid" if s.valid_prefix else "the last one, no VALID_PREFIX to choose by"
        progress(f"== the test set: round {final} ({how})")
        score_test(s, final, clock)
    elif final:
        progress(f"== the test set is not scored (SCORE_TEST=0); round {final} is the one to "
                 "keep")
    if final and s.translator_updates:         # 6
        models = translator.folder(s, final)
        models.mkdir(parents=True, exist_ok=True)
        began, translator_clock = seconds(), Clock(models)
        synthetic = back_translations(s, final)
        translator_clock.spent(began)
        translator.build(s, final, synthetic, translator_clock)
    scores.show_tables(s.work, test=s.score_test)  # 7
    if s.valid_prefix and final:
        for line in scores.summary(s.work, (s.l1, s.l2), final):
            progress(f"== {line}")


if __name__ == "__main__":
    run_main(main)
