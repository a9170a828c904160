"""Unsupervised translation by word-by-word translation repaired by a model of
the target language (Kim et al., 2018), with no parallel training text.

    MONO_PREFIX=raw/mono REFERENCE_PREFIX=raw/test VALID_PREFIX=raw/valid \\
        python -m projects.unsupervised.repair   # or: bash projects/unsupervised/repair.sh

(python -m projects.unsupervised.one_sitting --data SHARED: the same with its
defaults, on the project's corpora: 77 minutes on 2 CPU cores.)

Round 0 translates the test set word by word with LEXICON, the --one-way
PREFIX of projects/unsupervised/induce_lexicon.py (PREFIX.L1-L2.tsv, PREFIX.L2-L1.tsv;
without LEXICON the recipe first induces them from MONO_PREFIX, with the
candidates of --candidates 5, in WORK_DIR/lexicon), each run of words the
lexicon lacks as a placeholder. Round r = 1..ROUNDS:
  1. repair pairs for each language from its monolingual text
     (projects/unsupervised/model_round_trip_pairs.py): each line next to its translation into
     the other language and back, word by word both ways in round 1
     (plus denoising_pairs.py's shuffled and thinned copies), and in later rounds
     word by word there, repaired by the round r-1 model (every repair
     decoded by CTranslate2, int8 unless CT2_COMPUTE_TYPE says otherwise;
     GEN_ENGINE=fairseq: by fairseq-generate, the same valid BLEU, about 3x
     slower on a CPU),
     and word by word back, so that the way back meets the other language as
     a model writes it; later rounds also add round trips whose way there
     draws the SAMPLE_WORDS most frequent words' translations from the
     lexicon's candidates (LEXICON.L1-L2.candidates.tsv, induce_lexicon.py
     --candidates; translate_words.py --sample), so that "the" comes back
     as "a" where French "le" would (SAMPLE_WORDS=0: none);
     later rounds train on these round trips alone (KEEP_ROUND1_PAIRS=1:
     and on round 1's pairs of MONO_PREFIX again);
     (EXTRA_MONO_PREFIX.L1 and .L2, more text such as web text: round 1
     adds their round trips through the lexicon too);
  2. one model for both languages (fairseq's translation task, noisy ->
     clean) trains on them, round 1 from scratch (FIRST_UPDATES; with
     DAE_UPDATES > 0 from a model first trained that long on the shuffled,
     thinned copies alone; with MASS_UPDATES > 0 from that long MASS
     pre-training on MONO_PREFIX, masked_s2s --langs L1,L2, which needs
     MODEL_ARGS with --arch transformer_mass), later rounds from the last
     one (UPDATES);
  3. each direction's valid set (VALID_PREFIX), to choose a round by: word
     by word with placeholders, repaired (beam SCORE_BEAM, NBEST hypotheses),
     the placeholders restored (projects/unsupervised/restore_placeholders.py; a line
     that lost one falls back to word by word), scored with sacreBLEU.
The test set (REFERENCE_PREFIX) is scored the same way for two systems
only, each once: round 0 (word by word) and the round the run ends with,
the round with the best mean valid BLEU (python -m projects.unsupervised.choose_round,
linked as $WORK_DIR/best.pt and named at the end), or without VALID_PREFIX
the last round; SCORE_TEST=0 scores neither (for comparing settings on
valid). PATIENCE > 0 stops the rounds once that many have passed without a
better valid BLEU. TRANSLATOR_UPDATES > 0: then a translation model per
direction, trained by back-translation from that round's pipeline
(projects/unsupervised/translator.py), in WORK_DIR/translator, from the
recipe's MASS pre-training (MASS_UPDATES), else from one of its own
(TRANSLATOR_MASS_UPDATES), else from random initialisation.
Results: $WORK_DIR/valid.tsv (round, direction, BLEU, chrF, minutes: every
round), $WORK_DIR/results.tsv (the same on the test set: every test-set
scoring the work directory has seen) and $WORK_DIR/rounds.csv (python -m
projects.unsupervised.rounds_table: the columns of projects/unsupervised/results.csv
for the test-scored rounds, the paired bootstrap against word by word, the
output's language shares).
Interrupted? Run the same command again: finished steps are kept, and an
interrupted training resumes from its checkpoint_last.pt.
"""

import importlib.util
import os
from pathlib import Path

from projects.unsupervised import choose_round, translator
from projects.unsupervised.commands import Clock, call, fail, progress, seconds, user_dir
from projects.unsupervised.pipeline import translate
from projects.unsupervised.recipe_vars import TEST_AND_LANGUAGES, Var, read
from projects.unsupervised.repair_model import subwords
from projects.unsupervised.repair_pairs import pairs
from projects.unsupervised.repair_start import check_start, train_round
from projects.unsupervised.repair_text import induce, other
from projects.unsupervised.scores import (
    add_row,
    has_row,
    sacrebleu,
    show_tables,
    start_table,
    write_rounds,
)

MODEL_ARGS = ("--arch transformer --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 "
              "--decoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 "
              "--encoder-attention-heads 4 --decoder-attention-heads 4 --share-all-embeddings "
              "--dropout 0.1")
VARIABLES = [
    Var("MONO_PREFIX", required="set MONO_PREFIX: MONO_PREFIX.L1 and MONO_PREFIX.L2 hold raw "
        "monolingual text"),
    Var("LEXICON", help="the --one-way PREFIX of projects/unsupervised/induce_lexicon.py; "
        "empty: WORK_DIR/lexicon/one, induced from MONO_PREFIX by the recipe (4 minutes)"),
    Var("LEXICON_ARGS", "", "more options of induce_lexicon.py where the recipe induces "
        "LEXICON (e.g. --dim 20 for little text)"),
    *TEST_AND_LANGUAGES,
    Var("VALID_PREFIX", help="raw valid pairs, scored each round as well"),
    Var("EXTRA_MONO_PREFIX", help="more raw text for round 1's lexicon round trips"),
    Var("WORK_DIR", "work/unsup-repair"),
    Var("ROUNDS", "2", count=True),
    Var("MIN_SCORE_L1_L2", "0.1", "weaker word pairs L1->L2 stay untranslated"),
    Var("MIN_SCORE_L2_L1", "0.05"),
    Var("SPM_VOCAB", "8000"),
    Var("FIRST_UPDATES", "1500", "round 1 (from scratch unless DAE_UPDATES or MASS_UPDATES)",
        count=True),
    Var("DAE_UPDATES", "0", "a denoising model first, round 1 goes on from it", count=True,
        invalid="give a number of updates (0: no denoising model)"),
    Var("MASS_UPDATES", "0", "MASS pre-training first (MODEL_ARGS with --arch "
        "transformer_mass), round 1 goes on from it", count=True,
        invalid="give a number of updates (0: no MASS pre-training)"),
    Var("UPDATES", "500", "each later round", count=True),
    Var("MAX_TOKENS", "4096", count=True),
    Var("TOKENS_PER_UPDATE", lambda v: v["max_tokens"], count=True,
        shown="the value of MAX_TOKENS"),
    Var("LR", "0.0005"),
    Var("BEAM", "5", "each round trip's repairs", count=True),
    Var("SCORE_BEAM", lambda v: v["beam"], "the test and valid sets' repairs", count=True,
        shown="the value of BEAM"),
    Var("NBEST", "5", "hypotheses searched for the placeholders", count=True),
    Var("MODEL_ARGS", MODEL_ARGS, "fairseq-train's model options"),
    Var("SYSTEM", "words_then_repair", "rounds.csv's system column"),
    Var("GEN_ENGINE", "ctranslate2", "every repair decoded by CTranslate2, or fairseq: by "
        "fairseq-generate",
        choices=("fairseq", "ctranslate2"),
        invalid="choose fairseq (fairseq-generate) or ctranslate2"),
    Var("CT2_COMPUTE_TYPE", "int8", "with ctranslate2: int8, float32, ..."),
    Var("SAMPLE_WORDS", "150", "words drawn from the candidates from round 2 on", count=True),
    Var("KEEP_ROUND1_PAIRS", "0", "1: later rounds add round 1's pairs again", choices=("0", "1"),
        invalid="give 1 (later rounds add round 1's pairs) or 0 (they do not)"),
    Var("TRANSLATOR_UPDATES", "0", "a model per direction trained this long by "
        "back-translation from the final round's pipeline (0: none)", count=True,
        invalid="give a number of updates (0: no translator)"),
    Var("TRANSLATOR_MASS_UPDATES", "0", "the translator starts from MASS pre-training this "
        "long (transformer_mass with MODEL_ARGS's sizes) where MASS_UPDATES does not give one",
        count=True, invalid="give a number of updates (0: the translator starts from MASS_UPDATES' "
        "pre-training, else from random initialisation)"),
    Var("TRANSLATOR_ARCH", "", "the translator's --arch from random initialisation: "
        "transformer_mass trains MODEL_ARGS's sizes as the plugin's model (XLM's embedding "
        "style), the model a MASS start has, so that the two starts compare on one model "
        "(empty: MODEL_ARGS's --arch)", choices=("", "transformer", "transformer_mass"),
        empty=True, invalid="give transformer or transformer_mass (empty: MODEL_ARGS's)"),
    Var("SCORE_TEST", "1", "0: the valid set alone, as when comparing settings; the test "
        "set is for the final system", choices=("0", "1"),
        invalid="give 1 (score the test set) or 0 (the valid set alone)"),
    Var("PATIENCE", "0", "stop after this many rounds with no better valid BLEU", count=True,
        invalid="give a number of rounds (0: run all ROUNDS)"),
]


def check_files(s):
    """Stop unless the text, the lexicons (and their candidates) are there;
    without LEXICON the recipe induces them (repair_text.induce)."""
    l1, l2 = s.l1, s.l2
    files = [f"{s.mono_prefix}.{l1}", f"{s.mono_prefix}.{l2}", f"{s.reference_prefix}.{l1}",
             f"{s.reference_prefix}.{l2}"]
    if s.lexicon:
        files += [f"{s.lexicon}.{l1}-{l2}.tsv", f"{s.lexicon}.{l2}-{l1}.tsv"]
    for prefix in (s.valid_prefix, s.extra_mono_prefix):
        if prefix:
            files += [f"{prefix}.{l1}", f"{prefix}.{l2}"]
    for name in files:
        if not os.path.isfile(name) or os.path.getsize(name) == 0:
            fail(f"{name} is missing or empty")
    for direction in (f"{l1}-{l2}", f"{l2}-{l1}") if s.lexicon else ():
        candidates = f"{s.lexicon}.{direction}.candidates.tsv"
        if s.sample_words and s.rounds >= 2 and not (
                os.path.isfile(candidates) and os.path.getsize(candidates)):
            fail(f"{candidates} is missing: make it with projects/unsupervised/induce_lexicon.py "
                 f"--one-way {s.lexicon} --candidates 5, or set SAMPLE_WORDS=0")


def settings(argv=None):
    """The recipe's variables, checked; ``work``: WORK_DIR as a Path."""
    s = read(VARIABLES, __doc__, "python -m projects.unsupervised.repair", argv)
    user_dir()  # stops here where mass_plugin is not installed
    check_files(s)
    check_start(s)
    if s.nbest > s.score_beam:
        fail(f"NBEST={s.nbest} exceeds SCORE_BEAM={s.score_beam} (which is BEAM unless set)")
    if s.score_test == "0" and not s.valid_prefix:
        fail("SCORE_TEST=0 needs VALID_PREFIX: without the test set the rounds are scored "
             "on the valid pairs alone")
    if s.patience and not s.valid_prefix:
        fail(f"PATIENCE={s.patience} needs VALID_PREFIX, the valid pairs that choose the round")
    if s.translator_updates and s.score_test == "1" and importlib.util.find_spec(
            "ctranslate2") is None:
        fail("TRANSLATOR_UPDATES scores the translator's CTranslate2 export as well, which "
             "needs CTranslate2: pip install -e '.[serve]'")
    if s.gen_engine == "ctranslate2" and importlib.util.find_spec("ctranslate2") is None:
        fail("GEN_ENGINE=ctranslate2 needs CTranslate2: pip install -e '.[serve]'")
    s.work = Path(s.work_dir)
    s.induce_lexicon = not s.lexicon
    s.lexicon = s.lexicon or str(s.work / "lexicon/one")
    return s


def score(s, round_, src, split, prefix, clock):
    """One row of results.tsv (``split`` test) or valid.tsv (valid), unless
    it is there; whether it was scored anew."""
    w, tgt = s.work, other(s, src)
    table = w / ("valid.tsv" if split == "valid" else "results.tsv")
    if has_row(table, round_, f"{src}-{tgt}"):
        return False
    out = w / f"round{round_}.{split}.{src}-{tgt}.txt"
    log = translate(s, round_, src, f"{prefix}.{src}", out, split)
    scores = sacrebleu(f"{prefix}.{tgt}", out)
    restored = log.read_text().replace("\n", " ") if log.is_file() else ""
    progress(f"== round {round_} {src}->{tgt} {split}: {restored}")
    progress(scores)
    add_row(table, round_, f"{src}-{tgt}", scores, clock.minutes())
    return True


def score_round(s, round_, clock):
    """A round on the valid set, each direction (nothing without VALID_PREFIX);
    round 0, word by word, on the test set as well: it is a system of its own."""
    if s.valid_prefix:
        for src in (s.l1, s.l2):
            score(s, round_, src, "valid", s.valid_prefix, clock)
    if round_ == 0 and s.score_test == "1":
        score_test(s, 0, clock)


def score_test(s, round_, clock):
    """The test set, each direction, for the round the run ends with, then
    rounds.csv. Each round is scored on test at most once."""
    scored = False
    for src in (s.l1, s.l2):
        scored |= score(s, round_, src, "test", s.reference_prefix, clock)
    # resumed, nothing scored anew and the round in rounds.csv: its paired bootstraps stand
    rounds = s.work / "rounds.csv"
    if not scored and rounds.is_file() and any(
            line.startswith(f"{s.system},{round_},") for line in rounds.read_text().splitlines()):
        return
    write_rounds("--work-dir", s.work, "--langs", f"{s.l1},{s.l2}",
                 "--reference-prefix", s.reference_prefix, "--system", s.system,
                 "--updates-per-round", s.updates,
                 "--first-round-updates", s.dae_updates + s.mass_updates + s.first_updates)


def choose(s, *options):
    """choose_round's lines: the round with the best mean valid BLEU so far."""
    return call(choose_round.main, "--work-dir", s.work, "--langs", f"{s.l1},{s.l2}",
                *options).splitlines()


def link_best(s):
    """WORK_DIR/best.pt: the chosen round's model; the round."""
    best = int(choose(s, "--round-only")[0])
    link = s.work / "best.pt"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(f"round{best}/ckpt/checkpoint_last.pt")
    return best


def run_rounds(s, clock):
    """Rounds 1..ROUNDS (fewer where PATIENCE stops them), each scored on
    valid; the round the run ends with: the chosen one, else the last."""
    final = 0
    for round_ in range(1, s.rounds + 1):
        (s.work / f"round{round_}").mkdir(parents=True, exist_ok=True)
        start = seconds()
        pairs(s, round_, s.l1)
        pairs(s, round_, s.l2)
        train_round(s, round_)
        clock.spent(start)
        score_round(s, round_, clock)
        final = round_
        if not s.valid_prefix:
            continue
        final = link_best(s)
        if s.patience > 0 and round_ - final >= s.patience:
            progress(f"== stopping after round {round_}: no better mean valid BLEU in the "
                     f"{s.patience} round(s) since round {final} (PATIENCE={s.patience})")
            break
    return final


def main(argv=None):
    s = settings(argv)
    s.work.mkdir(parents=True, exist_ok=True)
    for table in ("results", "valid"):
        start_table(s.work / f"{table}.tsv")
    clock = Clock(s.work)
    start = seconds()
    if s.induce_lexicon:
        induce(s)
    subwords(s)
    clock.spent(start)
    score_round(s, 0, clock)
    final = run_rounds(s, clock)
    if final and s.score_test == "1":
        how = "chosen on valid" if s.valid_prefix else "the last one, no VALID_PREFIX to choose by"
        progress(f"== the test set: round {final} ({how})")
        score_test(s, final, clock)
    elif final:
        progress(f"== the test set is not scored (SCORE_TEST=0); round {final} is the one to "
                 "keep")
    if final and s.translator_updates:
        translator.build(s, final)
    show_tables(s.work, test=s.score_test == "1")
    if s.valid_prefix and s.rounds > 0:
        for line in choose(s):
            progress(f"== {line}")


if __name__ == "__main__":
    main()
