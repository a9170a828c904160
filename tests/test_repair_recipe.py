"""projects/unsupervised/repair.sh (python -m projects.unsupervised.repair),
shrunken: from raw text, two rounds, resumed, then more rounds."""

import collections
import csv
import os
import re
import subprocess
import sys

from conftest import BIN_DIR, REPO, bash, bash_error, cli_env, write

BOTH = ("en-fr", "fr-en")


def table_rows(path):
    """(round, direction) of each row of a results.tsv or valid.tsv, sorted."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return sorted((int(r[0]), r[1]) for r in rows)


def chosen(out):
    """The model round with the best mean valid BLEU, then chrF, then the earliest."""
    valid = {}
    for row in (out / "valid.tsv").read_text().splitlines()[1:]:
        round_, _, bleu, chrf, _ = row.split("\t")
        valid.setdefault(int(round_), []).append((float(bleu), float(chrf)))
    return max((r for r in valid if r), key=lambda r: ([sum(s) for s in zip(*valid[r])], -r))


def test_repair_recipe_runs_two_rounds_from_raw_text_and_resumes(tmp_path):
    """projects/unsupervised/repair.sh, shrunken: round 0 is word by word; round 1
    trains on round trips through the lexicon (of the extra text too), from a
    denoising model, round 2 (resumed, decoding with CTranslate2) on round
    trips through round 1's model, from its checkpoint, and on round trips
    whose way there draws from the lexicon's candidates; a row per round in
    rounds.csv; a second run redoes nothing; a third round without round 1's
    pairs (round 2 with them); best.pt, the round chosen on valid, and
    PATIENCE's stop. Every round is scored on valid; the test set only for
    round 0 and for the round each run ends with, each once."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "fr"):
        lines = (REPO / f"examples/data/mono.{lang}").read_text().splitlines()
        write(raw / f"mono.{lang}", lines[:200])
        write(raw / f"extra.{lang}", lines[200:260])
        for split in ("test", "valid"):
            lines = (REPO / f"examples/data/{split}.{lang}").read_text().splitlines()
            write(raw / f"{split}.{lang}", lines[:12])
    write(tmp_path / "one.en-fr.tsv", ["the\tla\t0.4", "select\tsélectionnez\t0.4",
                                       "file\tfichier\t0.3", "click\tcliquez\t0.05"])
    write(tmp_path / "one.fr-en.tsv", ["le\tthe\t0.3", "la\tthe\t0.3", "les\tthe\t0.3",
                                       "fichier\tfile\t0.3", "de\tof\t0.01"])
    write(tmp_path / "one.en-fr.candidates.tsv", ["the\tla\t0.4", "the\tle\t0.38",
                                                  "the\tles\t0.36", "file\tfichier\t0.3"])
    write(tmp_path / "one.fr-en.candidates.tsv", ["le\tthe\t0.3", "le\tfile\t0.29"])
    out = tmp_path / "repair"
    model = ("--arch transformer --encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 "
             "--decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
             "--encoder-attention-heads 2 --decoder-attention-heads 2 --share-all-embeddings")
    variables = dict(MONO_PREFIX=raw / "mono", LEXICON=tmp_path / "one", WORK_DIR=out,
                     REFERENCE_PREFIX=raw / "test", VALID_PREFIX=raw / "valid", SPM_VOCAB=300,
                     FIRST_UPDATES=4, UPDATES=2, BEAM=2, NBEST=2, MAX_TOKENS=1000, NUM_GPUS=0,
                     MODEL_ARGS=model, EXTRA_MONO_PREFIX=raw / "extra", DAE_UPDATES=2,
                     GEN_ENGINE="fairseq")
    # round 1 decoded by fairseq-generate; round 2 resumes it with CTranslate2
    log = bash("projects/unsupervised/repair.sh", **{**variables, "ROUNDS": 1})
    assert not (out / "round1/ckpt/ct2").exists()
    assert "== the test set: round 1 (chosen on valid)" in log
    assert "== rounds.csv: words_then_repair,1,6," in log
    # (and scores with a wider beam than its round trips': NBEST=3 > BEAM=2 alone is an error)
    # round 2 trains on round 1's pairs again (KEEP_ROUND1_PAIRS=1), round 3 below does not
    variables.update(ROUNDS=2, GEN_ENGINE="ctranslate2", SCORE_BEAM=3, NBEST=3,
                     KEEP_ROUND1_PAIRS=1)
    log += bash("projects/unsupervised/repair.sh", **variables)
    for r, nbest in ((1, 2), (2, 3)):
        hyps = (out / f"round{r}.valid.en-fr.txt.nbest").read_text().splitlines()
        assert len(hyps) == 12 * nbest
    assert (out / "round1/ckpt/ct2/model.bin").is_file()  # round 2's round trips
    assert (out / "round2/ckpt/ct2/model.bin").is_file()  # round 2's scores
    best = chosen(out)
    assert f"== the test set: round {best} (chosen on valid)" in log
    assert table_rows(out / "valid.tsv") == [(i, d) for i in range(3) for d in BOTH]
    # the test set: word by word, round 1 (chosen by the first run), and round
    # 2 where the second run chose it; never a round that no run ended with
    tested = sorted({0, 1, best})
    assert table_rows(out / "results.tsv") == [(i, d) for i in tested for d in BOTH]
    assert (out / "round2.test.en-fr.txt").exists() == (best == 2)
    # round 0: word by word, each direction with its own file and --min-score
    for src, tgt, score in (("en", "fr", "0.1"), ("fr", "en", "0.05")):
        expected = subprocess.run(
            ["python", "-m", "projects.unsupervised.translate_words",
             "--lexicon", tmp_path / f"one.{src}-{tgt}.tsv", "--min-score", score,
             "--src-lang", src, "--tgt-lang", tgt, "--input", raw / f"test.{src}"],
            cwd=REPO, env=cli_env(), capture_output=True, text=True, check=True).stdout
        assert (out / f"round0.test.{src}-{tgt}.txt").read_text() == expected
    # the placeholder, which the text never has, is a piece and a word of the dictionary
    assert "~" not in (raw / "mono.en").read_text() + (raw / "mono.fr").read_text()
    assert "~" in [line.split()[0] for line in (out / "dict.txt").read_text().splitlines()]
    # round 1 went there and back word by word; round 2 through round 1's model
    assert "round 1: en text to fr word by word and back" in log
    assert "round 2: en text to fr word by word, repaired by round 1's model" in log
    round1, round2 = out / "round1", out / "round2"
    assert (round1 / "model.en").read_text() == (round1 / "there.en").read_text()
    # round 1: the extra text's round trips beside the mono text's, and a denoising model first
    size = {name: len((round1 / name).read_text().splitlines())
            for name in ("rt.spm.nen", "dae.spm.nen", "ert.spm.nen", "ert.en", "pairs.en.noisy")}
    assert size["pairs.en.noisy"] == size["rt.spm.nen"] + size["dae.spm.nen"] + size["ert.spm.nen"]
    assert 0 < size["ert.en"] <= 60
    # each clean side is an extra line with runs masked: its words, in order, are that line's
    extra = [re.findall(r"[A-Za-z]+", e) for e in (raw / "extra.en").read_text().splitlines()]
    for line in (round1 / "ert.en").read_text().splitlines():
        words = re.findall(r"[A-Za-z]+", line)
        assert any(all(w in rest for w in words) for rest in map(iter, extra))
    assert "== denoising, before round 1: training on" in log
    assert "dae/ckpt/checkpoint_last.pt" in (round1 / "train.log").read_text()
    there, model = ((round2 / name).read_text().splitlines() for name in ("there.en", "model.en"))
    assert len(model) == len(there) == 200 and model != there
    assert "round1/ckpt/checkpoint_last.pt" in (round2 / "train.log").read_text()
    # and round 2's sampled way there: "the" went to "le" and "les" as well as "la"
    sampled = collections.Counter((round2 / "sampled.en").read_text().lower().split())
    assert sampled["la"] and sampled["le"] and sampled["les"]
    assert not collections.Counter((round2 / "there.en").read_text().lower().split())["le"]
    lines = {name: len((round2 / name).read_text().splitlines())
             for name in ("rt.spm.nen", "srt.spm.nen", "srt.spm.en", "pairs.en.noisy")}
    assert lines["srt.spm.nen"] == lines["srt.spm.en"] > 100
    # and round 1's pairs of the mono text, not those of the extra text
    assert lines["pairs.en.noisy"] == (2 * lines["rt.spm.nen"] + lines["srt.spm.nen"]
                                       + size["rt.spm.nen"] + size["dae.spm.nen"])
    # each round's output is scored as written, one line per reference line
    for r in (1, 2):
        hyp = out / f"round{r}.valid.en-fr.txt"
        assert len(hyp.read_text().splitlines()) == 12
    assert len((out / "round1.test.en-fr.txt").read_text().splitlines()) == 12
    with open(out / "rounds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["round"], r["updates"]) for r in rows] == [
        ("0", "0"), ("1", "6"), ("2", "8")][:len(tested)]
    assert rows[1]["p_en_fr"] and 0 <= float(rows[1]["share_fr"]) <= 1
    again = bash("projects/unsupervised/repair.sh", **variables)
    assert "training on" not in again and "word by word and back" not in again
    assert "== rounds.csv" not in again  # nothing scored anew: no bootstrap again
    assert table_rows(out / "results.tsv") == [(i, d) for i in tested for d in BOTH]
    # a third round on its own round trips alone (the default)
    del variables["KEEP_ROUND1_PAIRS"]
    log = bash("projects/unsupervised/repair.sh", **{**variables, "ROUNDS": 3})
    assert "round 3: training on" in log and "round 2: training on" not in log
    lines = {name: len((out / "round3" / name).read_text().splitlines())
             for name in ("rt.spm.nen", "srt.spm.nen", "pairs.en.noisy")}
    assert lines["pairs.en.noisy"] == 2 * lines["rt.spm.nen"] + lines["srt.spm.nen"] > 0
    assert "round2/ckpt/checkpoint_last.pt" in (out / "round3/train.log").read_text()
    # best.pt: the round with the best mean valid BLEU (then chrF), named at
    # the end, and the round whose test set this run scored
    best = chosen(out)
    assert (out / "best.pt").resolve() == (out / f"round{best}/ckpt/checkpoint_last.pt").resolve()
    assert f"== chosen on valid: round {best} (en->fr / fr->en): valid BLEU" in log
    assert f"== the test set: round {best} (chosen on valid)" in log
    tested = sorted(set(tested) | {best})
    assert table_rows(out / "results.tsv") == [(i, d) for i in tested for d in BOTH]
    # PATIENCE: where round 1 leads on valid, ROUNDS=4 PATIENCE=1 stops after round 2
    rows = [r if not r.startswith("1\t") else "\t".join(r.split("\t")[:2] + ["99", "99", "0"])
            for r in (out / "valid.tsv").read_text().splitlines()]
    write(out / "valid.tsv", rows)
    log = bash("projects/unsupervised/repair.sh", **{**variables, "ROUNDS": 4, "PATIENCE": 1})
    assert ("== stopping after round 2: no better mean valid BLEU in the 1 round(s) since "
            "round 1") in log
    assert not (out / "round4").exists() and "training on" not in log
    assert (out / "best.pt").resolve() == (out / "round1/ckpt/checkpoint_last.pt").resolve()
    assert "== chosen on valid: round 1 (en->fr / fr->en): valid BLEU 99.00 / 99.00" in log
    assert "== the test set: round 1 (chosen on valid)" in log  # scored before: kept
    assert table_rows(out / "results.tsv") == [(i, d) for i in tested for d in BOTH]
    for name, value, error in (("KEEP_ROUND1_PAIRS", "no", "KEEP_ROUND1_PAIRS=no: give 1"),
                               ("TRANSLATOR_MASS_UPDATES", "3",
                                "TRANSLATOR_UPDATES=0 leaves out"),
                               ("PATIENCE", "-1", "PATIENCE=-1: give a number of rounds"),
                               ("LEXICON", tmp_path / "none", "none.en-fr.tsv is missing or empty"),
                               ("GEN_ENGINE", "marian", "GEN_ENGINE=marian: choose fairseq"),
                               ("DAE_UPDATES", "1k", "DAE_UPDATES=1k: give a number of updates"),
                               ("SCORE_BEAM", "2", "NBEST=3 exceeds SCORE_BEAM=2")):
        assert error in bash_error("projects/unsupervised/repair.sh", **{**variables, name: value})
    stderr = bash_error("projects/unsupervised/repair.sh", **{
        **variables, "TRANSLATOR_UPDATES": 2, "TRANSLATOR_MASS_UPDATES": 3})
    assert "mono.en has 200 lines: TRANSLATOR_MASS_UPDATES pre-trains MASS on it" in stderr
    assert "== translator" not in stderr
    assert "PATIENCE=2 needs VALID_PREFIX" in bash_error(
        "projects/unsupervised/repair.sh", **{**variables, "PATIENCE": 2, "VALID_PREFIX": ""})
    (tmp_path / "one.fr-en.candidates.tsv").unlink()
    stderr = bash_error("projects/unsupervised/repair.sh", **variables)
    assert "one.fr-en.candidates.tsv is missing" in stderr
    assert "--candidates 5, or set SAMPLE_WORDS=0" in stderr


def test_repair_recipe_starts_round_1_from_mass_and_can_leave_the_test_set_alone(tmp_path):
    """From raw text alone: without LEXICON the recipe induces it from the
    monolingual text; MASS_UPDATES: round 1 starts from the plugin's
    masked_s2s pre-training on the monolingual text of both languages (the
    repair model's own architecture, no language embeddings); SCORE_TEST=0
    scores valid alone, as a comparison of settings must; the translator
    starts from that MASS, or (TRANSLATOR_MASS_UPDATES, where the rounds are
    fairseq's transformer) from MASS pre-training of its own."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "fr"):
        write(raw / f"mono.{lang}", (REPO / f"examples/data/mono.{lang}").read_text()
              .splitlines()[:500])
        for split in ("test", "valid"):
            write(raw / f"{split}.{lang}", (REPO / f"examples/data/{split}.{lang}").read_text()
                  .splitlines()[:8])
    out = tmp_path / "repair"
    model = ("--arch transformer_mass --encoder-layers 1 --decoder-layers 1 "
             "--encoder-embed-dim 32 --decoder-embed-dim 32 --encoder-ffn-embed-dim 64 "
             "--decoder-ffn-embed-dim 64 --encoder-attention-heads 2 "
             "--decoder-attention-heads 2 --share-all-embeddings")
    variables = dict(MONO_PREFIX=raw / "mono", WORK_DIR=out, LEXICON_ARGS="--dim 8",
                     REFERENCE_PREFIX=raw / "test", VALID_PREFIX=raw / "valid", SPM_VOCAB=300,
                     FIRST_UPDATES=2, MASS_UPDATES=3, BEAM=2, NBEST=2, MAX_TOKENS=1000,
                     NUM_GPUS=0, MODEL_ARGS=model, ROUNDS=2, UPDATES=2, SCORE_TEST=0,
                     GEN_ENGINE="ctranslate2")
    log = bash("projects/unsupervised/repair.sh", **variables)
    assert "== the lexicon: word vectors of" in log
    for direction in BOTH:  # the one-way lexicons and the candidates later rounds draw from
        for name in (f"one.{direction}.tsv", f"one.{direction}.candidates.tsv"):
            assert (out / "lexicon" / name).read_text().strip()
    assert "== MASS pre-training before round 1: 3 updates" in log
    mass = (out / "mass/train.log").read_text()
    assert "'task': {'_name': 'masked_s2s'" in mass and "num_updates 3" in mass
    assert "valid on 'valid.en' subset" in mass and "valid on 'valid.fr' subset" in mass
    # 200 lines of each language held out for MASS's validation, the rest trained on
    held_out = (out / "mass/valid.en").read_text().splitlines()
    assert len(held_out) == 200 and len((out / "mass/train.en").read_text().splitlines()) == 300
    assert f"Loaded checkpoint {out}/mass/ckpt/checkpoint_last.pt (epoch" in (
        out / "round1/train.log").read_text()
    # the plugin's model goes to CTranslate2 through its export, for round 2's round trips
    assert "exported noisy->clean" in (out / "round1/ckpt/ct2.log").read_text()
    assert (out / "round1/ckpt/ct2/model.bin").is_file()
    assert (out / "round2/model.en").read_text() != (out / "round2/there.en").read_text()
    best = chosen(out)
    assert f"== the test set is not scored (SCORE_TEST=0); round {best} is the one to keep" in log
    assert table_rows(out / "valid.tsv") == [(i, d) for i in range(3) for d in BOTH]
    assert table_rows(out / "results.tsv") == []
    assert not (out / "rounds.csv").exists()
    for change, error in (
            (dict(DAE_UPDATES=2), "DAE_UPDATES=2 and MASS_UPDATES=3: round 1 starts from one"),
            (dict(TRANSLATOR_UPDATES=2, TRANSLATOR_MASS_UPDATES=2),
             "with MASS_UPDATES the translator starts from the recipe's MASS pre-training"),
            (dict(MODEL_ARGS=model.replace("transformer_mass", "transformer")),
             "MODEL_ARGS has --arch transformer; give MODEL_ARGS='--arch transformer_mass"),
            (dict(VALID_PREFIX=""), "SCORE_TEST=0 needs VALID_PREFIX"),
            (dict(SCORE_TEST="no"), "SCORE_TEST=no: give 1")):
        assert error in bash_error("projects/unsupervised/repair.sh", **{**variables, **change})
    # the same run with the test set and a translator per direction: the rounds are kept
    log = bash("projects/unsupervised/repair.sh",
               **{**variables, "SCORE_TEST": 1, "TRANSLATOR_UPDATES": 2})
    assert "training on" not in log.replace("translator", "")
    assert f"== the test set: round {best} (chosen on valid)" in log
    assert table_rows(out / "results.tsv") == [(i, d) for i in sorted({0, best}) for d in BOTH]
    folder = out / f"translator/round{best}-2updates"
    for src, tgt in (("en", "fr"), ("fr", "en")):
        # trained on the pipeline's translation of the other language's text, from MASS
        synthetic = (out / f"translator/round{best}/mono.{tgt}-{src}.{src}").read_text()
        synthetic = synthetic.splitlines()
        assert len(synthetic) == 500 and "~" not in "".join(synthetic)
        train_log = (folder / f"{src}-{tgt}/train.log").read_text()
        assert f"Loaded checkpoint {out}/mass/ckpt/checkpoint_last.pt (epoch" in train_log
        assert f"== translator {src}->{tgt}: 2 updates from MASS" in log
        for system in ("translator", "translator_ct2"):  # raw text in, raw text out
            lines = (folder / f"{system}.test.{src}-{tgt}.txt").read_text().splitlines()
            assert len(lines) == 8 and "▁" not in "".join(lines)
    assert (folder / "en-fr/ct2/model.bin").is_file()
    systems = [line.split("\t")[:2] for line in (folder / "results.tsv").read_text().splitlines()]
    assert sorted(map(tuple, systems[1:])) == [(system, d) for system in (
        "translator", "translator_ct2") for d in BOTH]
    with open(folder / "translator.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["system"] for r in rows] == ["translator", "translator_ct2"]
    assert all(0 <= float(r[f"p_{k}_{d}"]) <= 1 for r in rows for k in ("words", "pipeline")
               for d in ("en_fr", "fr_en"))
    # a translator from MASS pre-training of its own, where the rounds are fairseq's
    # transformer (as a random-start recipe's MODEL_ARGS says; the rounds here are kept):
    # MODEL_ARGS's sizes as transformer_mass, served through the plugin's export
    log = bash("projects/unsupervised/repair.sh", **{
        **variables, "SCORE_TEST": 1, "MASS_UPDATES": 0, "TRANSLATOR_UPDATES": 2,
        "TRANSLATOR_MASS_UPDATES": 3, "MODEL_ARGS": model.replace("transformer_mass",
                                                                   "transformer")})
    assert "training on" not in log.replace("translator", "")
    assert "into en by round" not in log  # the pipeline's translations made once, for every start
    assert "== MASS pre-training before the translator: 3 updates" in log
    mass = (out / "translator/mass3/train.log").read_text()
    assert "'_name': 'masked_s2s'" in mass and "arch='transformer_mass'" in mass
    folder = out / f"translator/round{best}-mass3-2updates"
    for src, tgt in (("en", "fr"), ("fr", "en")):
        assert f"== translator {src}->{tgt}: 2 updates from MASS" in log
        train_log = (folder / f"{src}-{tgt}/train.log").read_text()
        assert f"Loaded checkpoint {out}/translator/mass3/ckpt/checkpoint_last.pt" in train_log
        assert "arch='transformer_mass'" in train_log
        lines = (folder / f"translator_ct2.test.{src}-{tgt}.txt").read_text().splitlines()
        assert len(lines) == 8 and "▁" not in "".join(lines)
    assert "exported en->fr" in (folder / "en-fr/ct2.log").read_text()
    assert (folder / "translator.csv").is_file()
    # the control on the same model: random initialisation as transformer_mass
    # (TRANSLATOR_ARCH), the valid set alone, in a folder of its own
    plain = dict(variables, MASS_UPDATES=0, TRANSLATOR_UPDATES=2,
                 MODEL_ARGS=model.replace("transformer_mass", "transformer"))
    for updates in (2, 3):  # another length trains its own models, not reusing those of 2
        log = bash("projects/unsupervised/repair.sh", **{**plain, "TRANSLATOR_UPDATES": updates},
                   TRANSLATOR_ARCH="transformer_mass")
        folder = out / f"translator/round{best}-transformer_mass-{updates}updates"
        for src, tgt in (("en", "fr"), ("fr", "en")):
            assert (f"== translator {src}->{tgt}: {updates} updates from random "
                    "initialisation") in log
            train_log = (folder / f"{src}-{tgt}/train.log").read_text()
            assert "arch='transformer_mass'" in train_log and "Loaded checkpoint" not in train_log
            assert f"num_updates {updates}" in train_log
        valid = [line.split("\t")[:2] for line in (folder / "valid.tsv").read_text().splitlines()]
        assert sorted(map(tuple, valid[1:])) == [("translator", d) for d in BOTH]
    for change, error in ((dict(TRANSLATOR_ARCH="lstm"), "TRANSLATOR_ARCH=lstm: give"),
                          (dict(TRANSLATOR_ARCH="transformer_mass", TRANSLATOR_MASS_UPDATES=3),
                           "a MASS start (MASS_UPDATES or TRANSLATOR_MASS_UPDATES) has")):
        assert error in bash_error("projects/unsupervised/repair.sh", **{**plain, **change})
    check_translator_starts(out, plain, best, tmp_path / "starts")


def translator_starts(out, variables, *options):
    """python -m projects.unsupervised.translator_starts on OUT, the recipe's
    variables in the environment: (exit status, stdout + stderr)."""
    env = {**cli_env(), "PATH": f"{BIN_DIR}{os.pathsep}{os.environ['PATH']}",
           **{k: str(v) for k, v in variables.items()}}
    proc = subprocess.run([sys.executable, "-m", "projects.unsupervised.translator_starts",
                           "--work-dir", str(out), *options], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1500)
    return proc.returncode, proc.stdout + proc.stderr


def check_translator_starts(out, variables, best, starts):
    """The three starts of the translator, each the recipe in a copy of the
    rounds: random and MASS at equal translator updates, random at equal
    total updates, all transformer_mass; the table of their valid scores."""
    options = ("--out", str(starts), "--updates", "2", "--mass-updates", "3", "--jobs", "3")
    code, log = translator_starts(out, variables, *options)
    assert code == 0, log[-3000:]
    folders = {}
    for start, updates, mass in (("random", 2, 0), ("random_total", 5, 0), ("mass", 2, 3)):
        folder = folders[start] = starts / start / "translator" / (
            f"round{best}-mass3-2updates" if mass else
            f"round{best}-transformer_mass-{updates}updates")
        assert f"[{start}] == translator en->fr: {updates} updates from " in log
        for direction in BOTH:
            train_log = (folder / f"{direction}/train.log").read_text()
            assert "arch='transformer_mass'" in train_log and f"num_updates {updates}" in train_log
            assert ("Loaded checkpoint" in train_log) == bool(mass)
        # the rounds were copied, not trained again, and their checkpoints left behind
        run_log = (starts / start / "run.log").read_text()
        assert "training on" not in run_log.replace("translator", "")
        assert not list((starts / start).glob("round*/ckpt/*.pt"))
    with open(starts / "starts.csv", newline="") as f:
        rows = {r["start"]: r for r in csv.DictReader(f)}
    assert [(r["pretrain_updates"], r["translator_updates"]) for r in rows.values()] == [
        ("0", "2"), ("0", "5"), ("3", "2")]
    for start, r in rows.items():  # the scores of its valid.tsv, p against the MASS start
        valid = [line.split("\t") for line in (folders[start] / "valid.tsv").read_text()
                 .splitlines()[1:]]
        assert sorted((r[f"bleu_{d}"], r[f"chrf_{d}"]) for d in ("en_fr", "fr_en")) == sorted(
            (bleu, chrf) for _, _, bleu, chrf, _ in valid)
        for p in (r[f"p_{key}_{d}"] for key in ("bleu", "chrf") for d in ("en_fr", "fr_en")):
            assert (p == "") if start == "mass" else 0 <= float(p) <= 1
    assert re.search(r"^random_total +0\+5 ", log, re.M)
    # run again: every start resumes in its copy and trains nothing
    code, again = translator_starts(out, variables, *options)
    assert code == 0 and "updates from" not in again and "random_total" in again
    # --report-only: the table from the starts' outputs, no recipe run at all
    (starts / "starts.csv").unlink()
    code, report = translator_starts(out, variables, *options, "--report-only")
    assert code == 0 and "[random]" not in report and (starts / "starts.csv").is_file()
    assert re.search(r"^random_total +0\+5 ", report, re.M)
    # --pack: the same copy, for another machine: the pairs and markers the recipe reads to
    # resume and round BEST's translations, not the checkpoints, models or round files
    code, log = translator_starts(out, variables, "--pack", str(starts / "packed"))
    packed = starts / "packed"
    assert code == 0 and f"== {packed}: round {best}'s translations" in log
    assert (packed / "valid.tsv").read_text() == (out / "valid.tsv").read_text()
    assert (packed / f"translator/round{best}/mono.fr-en.en").is_file()
    assert sorted(p.name for p in (packed / "round1").rglob("*")) == [
        "ckpt", "done", "pairs.en.clean", "pairs.fr.clean"]
    assert not list(packed.rglob("*.pt")) and not (packed / "translator/mass3").exists()
    code, error = translator_starts(starts / "none", variables)
    assert code == 1 and f"--work-dir {starts / 'none'}: no valid.tsv" in error


def test_one_sitting_builds_the_in_domain_text_once_and_runs_the_recipe_on_the_corpora(
        tmp_path, monkeypatch):
    """python -m projects.unsupervised.one_sitting: the monolingual text is
    mono-doc plus the lines of mono that mono-doc's unigram model prefers,
    made once; the recipe then runs on it with the corpora's valid and test
    pairs and its own defaults; a missing corpus is a clear error."""
    from projects.unsupervised import one_sitting, repair

    data = tmp_path / "data"
    for folder in ("mono-doc", "mono", "para/en-fr"):
        (data / folder).mkdir(parents=True)
    for lang, doc, web in (("en", "open the file menu", ["the file menu opens", "a cat sat"]),
                           ("fr", "ouvrir le menu fichier", ["le menu fichier", "un chat"])):
        write(data / f"mono-doc/{lang}.txt", [doc] * 3)
        write(data / f"mono/{lang}.txt", web)
        for split in ("valid", "test"):
            write(data / f"para/en-fr/{split}.{lang}", [doc])
    seen = []
    monkeypatch.setattr(repair, "main", lambda argv: seen.append(
        {k: one_sitting.os.environ[k] for k in ("MONO_PREFIX", "WORK_DIR", "VALID_PREFIX",
                                                "REFERENCE_PREFIX")}))
    for name in ("MONO_PREFIX", "WORK_DIR", "VALID_PREFIX", "REFERENCE_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    one_sitting.main(["--data", str(data), "--work-dir", str(work)])
    assert (work / "raw/mono.en").read_text().splitlines() == ["open the file menu"] * 3 + [
        "the file menu opens"]
    assert (work / "raw/mono.fr").read_text().splitlines() == ["ouvrir le menu fichier"] * 3 + [
        "le menu fichier"]
    assert seen == [dict(MONO_PREFIX=str(work / "raw/mono"), WORK_DIR=str(work),
                         VALID_PREFIX=str(data / "para/en-fr/valid"),
                         REFERENCE_PREFIX=str(data / "para/en-fr/test"))]
    # made once: a second run keeps the text it made
    (work / "raw/mono.en").write_text("kept\n")
    one_sitting.main(["--data", str(data), "--work-dir", str(work)])
    assert (work / "raw/mono.en").read_text() == "kept\n" and len(seen) == 2
    (data / "mono/fr.txt").unlink()
    result = subprocess.run(["python", "-m", "projects.unsupervised.one_sitting", "--data",
                             str(data)], cwd=REPO, env=cli_env(), capture_output=True, text=True)
    assert result.returncode == 1
    assert f"error: --data {data}: mono/fr.txt is missing" in result.stderr
