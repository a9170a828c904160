"""The unsupervised recipe (python -m projects.unsupervised.repair), run as
its one-sitting default (python -m projects.unsupervised.one_sitting) at a
tiny size: from raw text, the lexicon induced, two rounds, the test set,
then a translator per direction from MASS in the same work directory.

What each stage wrote is checked against what its inputs make, not against
an earlier run's bytes (sentencepiece, gensim and CTranslate2 are not pinned,
and their output may change with a release while nothing is broken): every
valid, test and monolingual line gets a translation; a round's pairs are the
round trips of the lexicon's output, made again here from their inputs by
the recipe's own functions, in pieces of its sentencepiece model; the chosen
round has the best mean valid BLEU; every score of the tables is sacreBLEU's
of the output file it names, every p-value its paired bootstrap. Then, in
copies of that work directory: a second run redoes nothing, PATIENCE stops
the rounds, the translator's random start on the same model, and bad
settings stop before any work."""

import csv
import hashlib
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.scores import bleu_chrf, paired_p

from conftest import REPO, cli_env, write

BOTH = ("en-fr", "fr-en")
MODEL = ("--arch transformer --encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 "
         "--decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
         "--encoder-attention-heads 2 --decoder-attention-heads 2 --share-all-embeddings")
# the recipe's defaults but for the sizes; one thread, for the same numbers every run
TINY = dict(SPM_VOCAB=300, FIRST_UPDATES=4, UPDATES=2, BEAM=2, NBEST=2, MAX_TOKENS=1000,
            NUM_GPUS=0, MODEL_ARGS=MODEL, LEXICON_ARGS="--dim 8", SAMPLE_WORDS=20,
            OMP_NUM_THREADS=1, MKL_NUM_THREADS=1)
TRANSLATOR = dict(TRANSLATOR_UPDATES=2, TRANSLATOR_MASS_UPDATES=3)


def tiny_corpora(data):
    """DATA as one_sitting's --data reads it, from examples/data: 450 lines
    of each language as mono-doc, the next 450 as the web text to select
    from, 10 valid and 10 test pairs."""
    for lang in ("en", "fr"):
        lines = (REPO / f"examples/data/mono.{lang}").read_text().splitlines()
        (data / "mono-doc").mkdir(parents=True, exist_ok=True)
        (data / "mono").mkdir(exist_ok=True)
        write(data / f"mono-doc/{lang}.txt", lines[:450])
        write(data / f"mono/{lang}.txt", lines[450:900])
        (data / "para/en-fr").mkdir(parents=True, exist_ok=True)
        for split in ("valid", "test"):
            lines = (REPO / f"examples/data/{split}.{lang}").read_text().splitlines()
            write(data / f"para/en-fr/{split}.{lang}", lines[:10])
    return data


def one_sitting(data, work, **variables):
    """python -m projects.unsupervised.one_sitting on DATA in WORK, the tiny
    settings and ``variables`` in the environment: (exit status, output)."""
    env = {**cli_env(),
           **{k: str(v) for k, v in {**TINY, **variables}.items()}}
    proc = subprocess.run(["python", "-m", "projects.unsupervised.one_sitting", "--data",
                           str(data), "--work-dir", str(work)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1500)
    return proc.returncode, proc.stdout + proc.stderr


def without_minutes(rows):
    return [{k: v for k, v in row.items() if "minutes" not in k} for row in rows]


def manifest(work):
    """What a run wrote that a second run must leave as it is: the sha256 of
    each lexicon, word-by-word file, round pair file, output scored and
    translation, and the rows of its tables without their minutes."""
    found = {}
    for path in sorted(p for p in work.rglob("*") if p.is_file() and not p.is_symlink()):
        rel, name = str(path.relative_to(work)), path.name
        if name.endswith((".log", ".nbest", ".gen", ".tmp")):
            continue
        if (rel.startswith("lexicon/one.") or name.startswith(("words.", "plain."))
                or "/pairs." in rel or name == "dict.txt"
                or (rel.startswith("round") and name.endswith(".txt"))
                or (rel.startswith("translator/") and name.startswith(("mono.", "translator."))
                    and name.endswith((".txt", ".en", ".fr")))):
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif name in ("valid.tsv", "results.tsv"):
            with open(path, newline="", encoding="utf-8") as f:
                found[rel] = without_minutes(csv.DictReader(f, delimiter="\t"))
        elif name.endswith(".csv"):
            with open(path, newline="", encoding="utf-8") as f:
                found[rel] = without_minutes(csv.DictReader(f))
    return found


@pytest.fixture(scope="module")
def sitting(tmp_path_factory):
    """The tiny one-sitting run, then its translators from MASS."""
    root = tmp_path_factory.mktemp("one-sitting")
    data, work = tiny_corpora(root / "data"), root / "work"
    code, log = one_sitting(data, work)
    assert code == 0, log[-4000:]
    code, translator_log = one_sitting(data, work, **TRANSLATOR)
    assert code == 0, translator_log[-4000:]
    best = int((work / "best.pt").resolve().parent.parent.name.removeprefix("round"))
    return SimpleNamespace(root=root, data=data, work=work, log=log,
                           translator_log=translator_log, best=best)


def copy_of(sitting, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(sitting.work, work, symlinks=True)
    return work


def table_rows(path):
    """(round, direction) of each row of a results.tsv or valid.tsv, sorted."""
    return sorted((int(r.split("\t")[0]), r.split("\t")[1])
                  for r in path.read_text().splitlines()[1:])


def count(path):
    return len(Path(path).read_text(encoding="utf-8").splitlines())


def recipe_settings(sitting):
    """The recipe's Settings for the tiny run, read by repair.py itself."""
    from projects.unsupervised import one_sitting as module
    from projects.unsupervised import repair

    environ = {**{k: str(v) for k, v in TINY.items()},
               **module.recipe_env(sitting.data, sitting.work)}
    return repair.settings([], environ)


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def rounds_of(work):
    """The folders of a work directory's repair rounds, in order."""
    return sorted((p for p in work.glob("round*") if p.is_dir()), key=lambda p: int(p.name[5:]))


def assert_every_line_is_translated(work, data, best):
    """Each output has a line per line of its source: the valid and test
    sets for each round scored; the monolingual text (the recipe's
    raw/mono.LANG) for each round's way there and for the translator's
    synthetic side, made by round ``best``."""
    for table, split in (("valid.tsv", "valid"), ("results.tsv", "test")):
        for row in read_rows(work / table, "\t"):
            src = row["direction"].split("-")[0]
            source = count(data / f"para/en-fr/{split}.{src}")
            assert count(work / f"round{row['round']}.{split}.{row['direction']}.txt") == source
    mono = {lang: count(work / f"raw/mono.{lang}") for lang in ("en", "fr")}
    for src, tgt in (("en", "fr"), ("fr", "en")):
        for folder in rounds_of(work):
            assert count(folder / f"there.{src}") == count(folder / f"model.{src}") == mono[src]
        assert count(work / f"translator/round{best}/mono.{tgt}-{src}.{src}") == mono[tgt]


def is_subsequence(lines, of):
    rest = iter(of)
    return all(line in rest for line in lines)


def assert_round_pairs_are_round_trips(s, tmp):
    """Each round's pairs of each language: its parts in pieces of the run's
    sentencepiece model, joined in the recipe's order (round 1: round trips,
    noised copies; later: round trips twice, sampled round trips); the way
    there of every round word by word with placeholders; the latest round's
    round trips through the round before's model made again in ``tmp`` from
    their inputs by the recipe's own functions, every other round trip's
    lines taken from its way back; the noised copies made again."""
    from mass_tools.apply_subwords import load_segmenter
    from projects.unsupervised import rounds

    segment = load_segmenter(str(s.work / "spm.model"))
    tmp.mkdir(parents=True, exist_ok=True)
    *earlier, latest = rounds_of(s.work)
    for lang in (s.l1, s.l2):
        mono = f"{s.mono_prefix}.{lang}"
        rounds.masked_words(s, lang, mono, tmp / f"there.{lang}")
        for folder in earlier + [latest]:
            assert (folder / f"there.{lang}").read_text() == (tmp / f"there.{lang}").read_text()
            names = ["rt", "dae"] if folder.name == "round1" else ["rt", "rt", "srt"]
            way_there = {"rt": folder / f"model.{lang}", "srt": folder / f"sampled.{lang}"}
            for name in sorted(set(names) & set(way_there)):
                made, back = tmp / f"{folder.name}.{name}", Path(f"{way_there[name]}.back")
                if folder == latest and name == "rt":
                    rounds.masked_words(s, rounds.other(s, lang), way_there[name], f"{made}.back")
                    assert back.read_text() == Path(f"{made}.back").read_text()
                    rounds.round_trip_pairs(s, lang, mono, back, made)
                    for suffix in (f"n{lang}", lang):
                        assert (folder / f"{name}.{suffix}").read_text() == Path(
                            f"{made}.{suffix}").read_text()
                noisy, clean = ((folder / f"{name}.{suffix}").read_text().splitlines()
                                for suffix in (f"n{lang}", lang))
                # pairs of lines of the way back, each side with as many placeholders
                assert noisy and is_subsequence(noisy, (line.strip() for line in
                                                        back.read_text().splitlines()))
                assert [line.count(rounds.PLACEHOLDER) for line in noisy] == [
                    line.count(rounds.PLACEHOLDER) for line in clean]
            if "dae" in names:
                rounds.noised_copies(mono, tmp / "dae", lang)
                for suffix in (f"n{lang}", lang):
                    assert (folder / f"dae.{suffix}").read_text() == (
                        tmp / f"dae.{suffix}").read_text()
            for side, suffix in (("noisy", f"n{lang}"), ("clean", lang)):
                pieces = [segment(line).strip() for name in names
                          for line in (folder / f"{name}.{suffix}").read_text().splitlines()]
                assert (folder / f"pairs.{lang}.{side}").read_text().splitlines() == pieces


def assert_the_best_round_on_valid_is_chosen(work):
    """best.pt is the checkpoint of the model round (>= 1) with the highest
    mean valid BLEU of the two directions (ties: chrF, then the earlier)."""
    totals = {}  # exact sums of the 2-decimal scores: a tie stays a tie
    for row in read_rows(work / "valid.tsv", "\t"):
        bleu, chrf = totals.get(int(row["round"]), (Decimal(0), Decimal(0)))
        totals[int(row["round"])] = (bleu + Decimal(row["BLEU"]), chrf + Decimal(row["chrF"]))
    best = max((r for r in totals if r >= 1), key=lambda r: (totals[r], -r))
    assert (work / "best.pt").resolve() == (work / f"round{best}/ckpt/checkpoint_last.pt"
                                            ).resolve()


def assert_tables_hold_the_outputs_scores(work, data):
    """valid.tsv and results.tsv: sacreBLEU's BLEU and chrF of each round's
    output file; rounds.csv: results.tsv's and the paired bootstrap of each
    round against round 0, both ways; translator.csv: its results.tsv's and
    the bootstrap against word by word (round 0) and the pipeline."""
    reference = data / "para/en-fr"
    test = {}
    for table, split in (("valid.tsv", "valid"), ("results.tsv", "test")):
        rows = read_rows(work / table, "\t")
        assert rows
        for row in rows:
            direction, tgt = row["direction"], row["direction"].split("-")[1]
            out = work / f"round{row['round']}.{split}.{direction}.txt"
            assert (row["BLEU"], row["chrF"]) == bleu_chrf(out, reference / f"{split}.{tgt}")
            if split == "test":
                test[(row["round"], direction.replace("-", "_"))] = (row["BLEU"], row["chrF"])
    rows = read_rows(work / "rounds.csv")
    assert {(r["round"], d) for r in rows for d in ("en_fr", "fr_en")} == set(test)
    for row in rows:
        for direction in ("en_fr", "fr_en"):
            tgt = direction.split("_")[1]
            assert (row[f"bleu_{direction}"], row[f"chrf_{direction}"]) == test[(row["round"],
                                                                                 direction)]
            outputs = [work / f"round{r}.test.{direction.replace('_', '-')}.txt"
                       for r in (0, row["round"])]
            if row["round"] == "0":
                assert row[f"p_{direction}"] == ""  # no bootstrap of round 0 against itself
            else:
                assert float(row[f"p_{direction}"]) == paired_p(reference / f"test.{tgt}",
                                                                *outputs)
    translators = [p for p in work.glob("translator/round*-*") if p.is_dir()]
    assert translators
    for models in translators:
        final = models.name.split("-")[0].removeprefix("round")
        scored = {(r["system"], r["direction"].replace("-", "_")): (r["BLEU"], r["chrF"])
                  for r in read_rows(models / "results.tsv", "\t")}
        for row in read_rows(models / "translator.csv"):
            for direction in ("en_fr", "fr_en"):
                name = direction.replace("_", "-")
                out = models / f"{row['system']}.test.{name}.txt"
                ref = reference / f"test.{direction.split('_')[1]}"
                assert (row[f"bleu_{direction}"], row[f"chrf_{direction}"]) == scored[(
                    row["system"], direction)] == bleu_chrf(out, ref)
                for column, baseline in (("p_words", "0"), ("p_pipeline", final)):
                    assert float(row[f"{column}_{direction}"]) == paired_p(
                        ref, work / f"round{baseline}.test.{name}.txt", out)


@pytest.mark.slow
def test_every_valid_test_and_monolingual_line_gets_a_translation(sitting):
    assert_every_line_is_translated(sitting.work, sitting.data, sitting.best)


@pytest.mark.slow
def test_the_round_pairs_are_round_trips_of_the_lexicon_s_output(sitting, tmp_path):
    assert_round_pairs_are_round_trips(recipe_settings(sitting), tmp_path / "made")


@pytest.mark.slow
def test_the_chosen_round_is_the_best_on_valid(sitting):
    assert_the_best_round_on_valid_is_chosen(sitting.work)


@pytest.mark.slow
def test_the_tables_hold_sacrebleu_s_scores_of_the_outputs_they_name(sitting):
    assert_tables_hold_the_outputs_scores(sitting.work, sitting.data)


@pytest.mark.slow
def test_the_test_set_is_scored_once_per_system_and_the_chosen_round_is_named(sitting,
                                                                              tmp_path):
    from projects.unsupervised import translate_words

    work, log, best = sitting.work, sitting.log, sitting.best
    assert "== the lexicon: word vectors of" in log
    assert table_rows(work / "valid.tsv") == [(r, d) for r in range(3) for d in BOTH]
    assert table_rows(work / "results.tsv") == [(r, d) for r in sorted({0, best}) for d in BOTH]
    assert f"== the test set: round {best} (chosen on valid)" in log
    assert f"== chosen on valid: round {best} (en->fr / fr->en): valid BLEU" in log
    with open(work / "rounds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["round"], r["updates"]) for r in rows] == [("0", "0"), (str(best), str(
        4 + 2 * (best - 1)))]
    # (their scores and p-values: test_the_tables_hold_sacrebleu_s_scores_of_the_outputs...)
    # round 0 is translate_words with each direction's one-way lexicon and --min-score
    for src, tgt, score in (("en", "fr", "0.1"), ("fr", "en", "0.05")):
        expected = tmp_path / f"{src}-{tgt}.txt"
        translate_words.main(["--lexicon", str(work / f"lexicon/one.{src}-{tgt}.tsv"),
                              "--min-score", score, "--src-lang", src, "--tgt-lang", tgt,
                              "--input", str(sitting.data / f"para/en-fr/test.{src}"),
                              "--output", str(expected)])
        assert (work / f"round0.test.{src}-{tgt}.txt").read_text() == expected.read_text()
    # the placeholder, which the text never has, is a piece and a word of the dictionary
    assert "~" in [line.split()[0] for line in (work / "dict.txt").read_text().splitlines()]


@pytest.mark.slow
def test_round_1_goes_word_by_word_and_round_2_through_round_1_s_model(sitting):
    round1, round2 = sitting.work / "round1", sitting.work / "round2"
    assert "round 1: en text to fr word by word and back" in sitting.log
    assert "round 2: en text to fr word by word, repaired by round 1's model" in sitting.log
    assert (round1 / "model.en").read_text() == (round1 / "there.en").read_text()
    there, model = ((round2 / name).read_text().splitlines() for name in ("there.en", "model.en"))
    assert len(model) == len(there) == count(sitting.work / "raw/mono.en") and model != there
    assert "round1/ckpt/checkpoint_last.pt" in (round2 / "train.log").read_text()
    assert (round1 / "ckpt/ct2/model.bin").is_file()  # converted once, for round 2's repairs
    # round 1: round trips and shuffled copies; round 2: its round trips twice, and sampled ones
    assert count(round1 / "pairs.en.noisy") == count(round1 / "rt.spm.nen") + count(
        round1 / "dae.spm.nen")
    assert count(round2 / "pairs.en.noisy") == 2 * count(round2 / "rt.spm.nen") + count(
        round2 / "srt.spm.nen") and count(round2 / "srt.spm.nen") > 0
    assert (round2 / "sampled.en").read_text() != (round2 / "there.en").read_text()


@pytest.mark.slow
def test_the_translator_learns_from_mass_on_the_pipeline_s_translations(sitting):
    work, log, best = sitting.work, sitting.translator_log, sitting.best
    assert "training on" not in log.replace("translator", "")  # the rounds were kept
    assert "== MASS pre-training before the translator: 3 updates" in log
    mass = (work / "translator/mass3/train.log").read_text()
    assert "'_name': 'masked_s2s'" in mass and "arch='transformer_mass'" in mass
    assert len((work / "translator/mass3/valid.en").read_text().splitlines()) == 200
    folder = work / f"translator/round{best}-mass3-2updates"
    for src, tgt in (("en", "fr"), ("fr", "en")):
        synthetic = (work / f"translator/round{best}/mono.{tgt}-{src}.{src}").read_text()
        assert len(synthetic.splitlines()) == count(work / f"raw/mono.{tgt}")
        assert "~" not in synthetic
        train_log = (folder / f"{src}-{tgt}/train.log").read_text()
        assert f"Loaded checkpoint {work}/translator/mass3/ckpt/checkpoint_last.pt" in train_log
        assert "arch='transformer_mass'" in train_log
        assert f"== translator {src}->{tgt}: 2 updates from MASS" in log
        for system in ("translator", "translator_ct2"):  # raw text in, raw text out
            lines = (folder / f"{system}.test.{src}-{tgt}.txt").read_text().splitlines()
            assert len(lines) == 10 and "▁" not in "".join(lines)
    assert "exported en->fr" in (folder / "en-fr/ct2.log").read_text()
    with open(folder / "translator.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # (its scores and p-values: test_the_tables_hold_sacrebleu_s_scores_of_the_outputs...)
    assert [r["system"] for r in rows] == ["translator", "translator_ct2"]


@pytest.mark.slow
def test_a_second_run_redoes_nothing(sitting, tmp_path):
    work = copy_of(sitting, tmp_path)
    before = manifest(work)
    code, again = one_sitting(sitting.data, work, **TRANSLATOR)
    assert code == 0, again[-3000:]
    assert "training on" not in again and "word by word and back" not in again
    assert "== rounds.csv" not in again and "updates from" not in again
    assert manifest(work) == before


@pytest.mark.slow
def test_patience_stops_the_rounds_once_valid_stops_improving(sitting, tmp_path):
    work = copy_of(sitting, tmp_path)
    # round 1 leads on valid now: ROUNDS=4 PATIENCE=1 stops after round 2, training nothing
    rows = [r if not r.startswith("1\t") else "\t".join(r.split("\t")[:2] + ["99", "99", "0"])
            for r in (work / "valid.tsv").read_text().splitlines()]
    write(work / "valid.tsv", rows)
    code, log = one_sitting(sitting.data, work, ROUNDS=4, PATIENCE=1)
    assert code == 0, log[-3000:]
    assert ("== stopping after round 2: no better mean valid BLEU in the 1 round(s) since "
            "round 1") in log
    assert not (work / "round3").exists() and "training on" not in log
    assert (work / "best.pt").resolve() == (work / "round1/ckpt/checkpoint_last.pt").resolve()
    assert "== chosen on valid: round 1 (en->fr / fr->en): valid BLEU 99.00 / 99.00" in log


@pytest.mark.slow
def test_the_translator_s_random_start_is_the_same_model(sitting, tmp_path):
    """The control of the comparison of record: random initialisation, as
    transformer_mass with the recipe's sizes, on the same translations."""
    work = copy_of(sitting, tmp_path)
    code, log = one_sitting(sitting.data, work, TRANSLATOR_UPDATES=2, SCORE_TEST=0)
    assert code == 0, log[-3000:]
    assert "into en by round" not in log  # the pipeline's translations made once, for both
    folder = work / f"translator/round{sitting.best}-transformer_mass-2updates"
    for src, tgt in (("en", "fr"), ("fr", "en")):
        assert f"== translator {src}->{tgt}: 2 updates from random initialisation" in log
        train_log = (folder / f"{src}-{tgt}/train.log").read_text()
        assert "arch='transformer_mass'" in train_log and "Loaded checkpoint" not in train_log
    assert table_rows(work / "results.tsv") == table_rows(sitting.work / "results.tsv")
    valid = [line.split("\t")[:2] for line in (folder / "valid.tsv").read_text().splitlines()]
    assert sorted(map(tuple, valid[1:])) == [("translator", d) for d in BOTH]
    assert not (folder / "results.tsv").exists()


@pytest.mark.parametrize("change,error", [
    (dict(PATIENCE="-1"), "PATIENCE=-1: give a number of rounds"),
    (dict(SCORE_TEST="no"), "SCORE_TEST=no: give 1"),
    (dict(NBEST="3"), "NBEST=3 exceeds SCORE_BEAM=2"),
    (dict(VALID_PREFIX="", SCORE_TEST="0"), "SCORE_TEST=0 needs VALID_PREFIX"),
    (dict(VALID_PREFIX="", PATIENCE="2"), "PATIENCE=2 needs VALID_PREFIX"),
    (dict(TRANSLATOR_MASS_UPDATES="3"), "TRANSLATOR_UPDATES=0 leaves out"),
    (dict(TRANSLATOR_UPDATES="2", TRANSLATOR_MASS_UPDATES="3", MONO_PREFIX="short"),
     "short.en has 10 lines: TRANSLATOR_MASS_UPDATES pre-trains MASS on it"),
    (dict(LEXICON="none"), "none.en-fr.tsv is missing or empty"),
    (dict(LEXICON="nocandidates"), "nocandidates.en-fr.candidates.tsv is missing"),
    (dict(DAE_UPDATES="1500"), "DAE_UPDATES=1500: the recipe no longer has DAE_UPDATES"),
    (dict(GEN_ENGINE="fairseq"), "GEN_ENGINE=fairseq: the recipe no longer has GEN_ENGINE")])
def test_bad_settings_stop_before_any_work_with_one_line(change, error, tmp_path, capsys):
    from projects.unsupervised import repair

    for lang in ("en", "fr"):
        write(tmp_path / f"short.{lang}", ["a line"] * 10)
        write(tmp_path / f"nocandidates.{lang}-{'fr' if lang == 'en' else 'en'}.tsv", ["a\tb"])
    environ = dict(MONO_PREFIX=tmp_path / "short", REFERENCE_PREFIX=tmp_path / "short",
                   VALID_PREFIX=tmp_path / "short", BEAM=2, NBEST=2, WORK_DIR=tmp_path / "w")
    environ.update(change)
    for name in ("LEXICON", "MONO_PREFIX"):
        if environ.get(name) in ("none", "nocandidates", "short"):
            environ[name] = tmp_path / environ[name]
    with pytest.raises(SystemExit) as stop:
        repair.settings([], {k: str(v) for k, v in environ.items()})
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and error in err and err.count("\n") == 1
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
def test_one_sitting_names_a_missing_corpus(tmp_path, capsys):
    from projects.unsupervised import one_sitting as module

    data = tiny_corpora(tmp_path / "data")
    (data / "mono/fr.txt").unlink()
    with pytest.raises(SystemExit) as stop:
        module.main(["--data", str(data), "--work-dir", str(tmp_path / "w")])
    assert stop.value.code == 1
    assert f"error: --data {data}: mono/fr.txt is missing" in capsys.readouterr().err
