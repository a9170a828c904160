"""Unsupervised NMT by offline iterative back-translation, from a cross-lingual
MASS checkpoint (masked_s2s --langs L1,L2), with no parallel training data.

    DATA_BIN=... MONO_PREFIX=... PRETRAINED=... REFERENCE_PREFIX=... \\
        python -m projects.unsupervised.offline_bt   # or: bash projects/unsupervised/offline_bt.sh

Round 0 scores the checkpoint itself. Round r = 1..ROUNDS:
  1. the round r-1 models (round 0: the checkpoint, in both directions)
     translate MONO_LINES monolingual sentences of each language with
     fairseq-generate (beam GEN_BEAM), a new slice of the text every round
     (GEN_ENGINE=ctranslate2: from round 2, the CTranslate2 export of the
     models, int8 by default, about 3.5x faster on a CPU);
     with LEXICON (projects/unsupervised/induce_lexicon.py, L1 words then L2 words,
     or the PREFIX of its --one-way files PREFIX.L1-L2.tsv and PREFIX.L2-L1.tsv)
     round 0 is word-by-word translation with it instead
     (projects/unsupervised/translate_words.py; SPM_MODEL, the sentencepiece model of
     MONO_PREFIX, joins and splits the pieces), as in Lample et al. (2018);
  2. the synthetic pairs (model output as source, real sentence as target)
     are binarized with the shared dictionary;
  3. each direction is fine-tuned on its pairs (task translation), starting
     from its round r-1 model, MAX_UPDATE updates, best checkpoint by
     validation loss on the real parallel valid set;
  4. each direction translates the real test set, scored with sacreBLEU.
Results: $WORK_DIR/results.tsv (round, direction, BLEU, chrF, minutes) and,
after each round, $WORK_DIR/rounds.csv (python -m projects.unsupervised.rounds_table): one
row per round in the columns of projects/unsupervised/results.csv, with the p-value of
sacreBLEU's paired bootstrap against round 0 and the share of each
direction's output in its target language.
Interrupted? Run the same command again: finished rounds and steps are
kept, an interrupted fine-tuning resumes from its checkpoint_last.pt.
"""

import os
import sys
from pathlib import Path

from projects.runner import RECIPES
from projects.unsupervised import scores
from projects.unsupervised.commands import (
    fail,
    output,
    progress,
    run,
    seconds,
    show_last_validation,
    user_dir,
)
from projects.unsupervised.offline_pairs import back_translate, checkpoint, split_direction, words
from projects.unsupervised.recipe_vars import TEST_AND_LANGUAGES, Var, read

VARIABLES = [
    Var("DATA_BIN", required="set DATA_BIN to binarize.py output with dict.txt and the "
        "valid/test pairs"),
    Var("MONO_PREFIX", required="set MONO_PREFIX: MONO_PREFIX.L1 and MONO_PREFIX.L2 hold "
        "monolingual text split into subwords"),
    Var("PRETRAINED", required="set PRETRAINED to a cross-lingual MASS checkpoint (masked_s2s "
        "--langs L1,L2)"),
    *TEST_AND_LANGUAGES,
    Var("WORK_DIR", "work/unsup-offline"),
    Var("ROUNDS", "3", count=True),
    Var("MONO_LINES", "100000", "sentences per language and round", count=True),
    Var("GEN_BEAM", "1", "beam for back-translation"),
    Var("GEN_BATCH", "128"),
    Var("GEN_ENGINE", "fairseq", "or ctranslate2: rounds 2.. back-translate with the "
        "CTranslate2 export of the last round's models"),
    Var("CT2_COMPUTE_TYPE", "int8", "with ctranslate2: int8, float32, ..."),
    Var("MAX_UPDATE", "2000", "per round and direction"),
    Var("MAX_TOKENS", "4096"),
    Var("TOKENS_PER_UPDATE", lambda v: v["max_tokens"], shown="the value of MAX_TOKENS"),
    Var("LR", "0.0001"),
    Var("WARMUP", "100"),
    Var("TEST_SUBSET", "test"),
    Var("MODEL_ARGS", "", "must match the pre-trained model"),
    Var("LEXICON", "", "round 0: word by word with this lexicon, or with induce_lexicon.py's "
        "--one-way PREFIX"),
    Var("SPM_MODEL", "", "with LEXICON: the model of MONO_PREFIX"),
    Var("MIN_SCORE", "0.1", "with LEXICON: weaker word pairs stay untranslated (MIN_SCORE= : "
        "every pair of the lexicon)", empty=True),
    Var("SYSTEM", lambda v: "words_then_bt" if v["lexicon"] else "mass_then_bt",
        "rounds.csv's system column", shown="words_then_bt with LEXICON, else mass_then_bt"),
]


def check_lexicon(s):
    """Stop unless LEXICON is a lexicon file or the --one-way prefix of two,
    and SPM_MODEL is there."""
    make = "make it with projects/unsupervised/induce_lexicon.py"
    if os.path.isfile(s.lexicon):
        if not os.path.getsize(s.lexicon):
            fail(f"LEXICON={s.lexicon} is empty ({make})")
    else:
        for direction in (f"{s.l1}-{s.l2}", f"{s.l2}-{s.l1}"):
            name = f"{s.lexicon}.{direction}.tsv"
            if not os.path.isfile(name) or not os.path.getsize(name):
                fail(f"LEXICON={s.lexicon} is neither a lexicon file nor the --one-way prefix "
                     f"of one: {name} is missing or empty (make them with "
                     "projects/unsupervised/induce_lexicon.py)")
    if not os.path.isfile(s.spm_model):
        fail("LEXICON needs SPM_MODEL, the sentencepiece model of MONO_PREFIX "
             f"(got '{s.spm_model}')")


def settings(argv=None):
    """The recipe's variables, checked; ``work``: WORK_DIR as a Path."""
    s = read(VARIABLES, __doc__, "python -m projects.unsupervised.offline_bt", argv)
    user_dir()  # stops here where mass_plugin is not installed
    for lang in (s.l1, s.l2):
        for name in (f"{s.mono_prefix}.{lang}", f"{s.reference_prefix}.{lang}"):
            if not os.path.isfile(name) or not os.path.getsize(name):
                fail(f"{name} is missing or empty")
    if not os.path.isfile(s.pretrained):
        fail(f"PRETRAINED={s.pretrained}: no such file")
    if not os.path.isfile(f"{s.data_bin}/dict.txt"):
        fail(f"{s.data_bin}/dict.txt: no such file")
    if s.lexicon:
        check_lexicon(s)
    s.work = Path(s.work_dir)
    return s


def score_words(s, src, tgt):
    """Round 0 with LEXICON: the test set translated word by word, scored."""
    out = s.work / f"round0.{s.test_subset}.{src}-{tgt}.txt"
    words(s, src, tgt, "--input", f"{s.reference_prefix}.{src}", "--output", out)
    text = scores.sacrebleu(f"{s.reference_prefix}.{tgt}", out)
    progress(f"== {src}->{tgt} word by word: {text}", sys.stderr)
    scores.add_row(s.work / "results.tsv", 0, f"{src}-{tgt}", text, 0)


def score(s, round_, src, tgt, data, minutes):
    """Round ``round_``'s model of SRC->TGT on the test pair in ``data``
    (examples/generate.sh), a row of results.tsv with ``minutes`` so far."""
    start = seconds()
    model = checkpoint(s, round_, f"{src}-{tgt}")
    env = dict(os.environ, DATA_BIN=str(data), CHECKPOINT=str(model), SRC=src, TGT=tgt,
               SUBSET=s.test_subset, REFERENCE=f"{s.reference_prefix}.{tgt}",
               OUTPUT=str(s.work / f"round{round_}.{s.test_subset}.{src}-{tgt}.txt"))
    text = output(["bash", RECIPES / "generate.sh"], env=env).rstrip("\n")
    progress(text, sys.stderr)
    minutes += (seconds() - start + 30) // 60
    scores.add_row(s.work / "results.tsv", round_, f"{src}-{tgt}", text, minutes)


def binarize(s, pairs, data, src, tgt):
    """``data``: the synthetic ``pairs`` binarized, next to the valid and test pairs."""
    run([sys.executable, "-m", "mass_tools.binarize", "--destdir", data,
         "--dict", f"{s.data_bin}/dict.txt", "--langs", f"{src},{tgt}", "--pair", f"{src}-{tgt}",
         "--train", pairs, "--workers", "2"])
    data_bin = Path(s.data_bin)
    for name in sorted(data_bin.glob("valid.*-*.*")) + sorted(
            data_bin.glob(f"{s.test_subset}.*-*.*")):
        link = data / name.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.realpath(name))


def train_direction(s, round_, src, tgt, gen_minutes):
    """SRC->TGT fine-tuned on round ``round_``'s pairs (examples/finetune_nmt.sh)
    from its last model, unless it was, then scored."""
    folder, start = s.work / f"round{round_}", seconds()
    # pairs: the src side was generated by the tgt->src model from real tgt text
    pairs, data = folder / f"gen-{tgt}-{src}/pairs", folder / f"bin-{src}-{tgt}"
    if not (data / "dict.txt").is_file():
        binarize(s, pairs, data, src, tgt)
    log = folder / f"train-{src}-{tgt}.log"
    if (folder / f"ckpt-{src}-{tgt}/done").is_file():  # only its score is missing
        progress(f"== round {round_}: {src}->{tgt} trained before, scoring it")
    else:  # a run stopped half-way resumes from its checkpoint_last.pt
        count = Path(f"{pairs}.{src}").read_bytes().count(b"\n")
        progress(f"== round {round_}: fine-tuning {src}->{tgt} on {count} synthetic pairs")
        env = dict(os.environ, DATA_BIN=str(data),
                   PRETRAINED=str(checkpoint(s, round_ - 1, f"{src}-{tgt}")),
                   SAVE_DIR=str(folder / f"ckpt-{src}-{tgt}"), SRC=src, TGT=tgt,
                   MAX_TOKENS=s.max_tokens, TOKENS_PER_UPDATE=s.tokens_per_update, LR=s.lr,
                   WARMUP=s.warmup, MAX_UPDATE=s.max_update, PATIENCE="1000",
                   EXTRA_ARGS=f"--language-embeddings {s.l1},{s.l2} {s.model_args}")
        run(["bash", RECIPES / "finetune_nmt.sh"], stdout=log, env=env)
        (folder / f"ckpt-{src}-{tgt}/done").touch()
    show_last_validation(log, sys.stderr)
    score(s, round_, src, tgt, data, (seconds() - start) // 60 + gen_minutes)


def main(argv=None):
    s = settings(argv)
    s.work.mkdir(parents=True, exist_ok=True)
    results = s.work / "results.tsv"
    scores.start_table(results)
    directions = (f"{s.l1}-{s.l2}", f"{s.l2}-{s.l1}")
    for direction in directions:
        if scores.has_row(results, 0, direction):
            continue
        if s.lexicon:
            score_words(s, *split_direction(direction))
        else:
            score(s, 0, *split_direction(direction), s.data_bin, 0)
    summarize = ("--work-dir", s.work, "--langs", f"{s.l1},{s.l2}",
                 "--reference-prefix", s.reference_prefix, "--subset", s.test_subset,
                 "--system", s.system, "--updates-per-round", s.max_update)
    scores.write_rounds(*summarize)
    for round_ in range(1, s.rounds + 1):
        if all(scores.has_row(results, round_, direction) for direction in directions):
            progress(f"== round {round_}: done, skipping")
            continue
        start = seconds()
        for direction in directions:
            back_translate(s, round_, direction)
        gen_minutes = (seconds() - start) // 60 // 2  # each direction's share
        for direction in directions:
            if not scores.has_row(results, round_, direction):
                train_direction(s, round_, *split_direction(direction), gen_minutes)
        scores.write_rounds(*summarize)
    scores.show_tables(s.work)


if __name__ == "__main__":
    main()
