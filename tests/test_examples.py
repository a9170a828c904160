"""Shrunken runs of the shell recipes in examples/ (the same scripts, fewer updates)."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from fairseq import checkpoint_utils

from conftest import BIN_DIR, PLUGIN_DIR, REPO, bash, bash_error, cli_env, write

EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    work = tmp_path_factory.mktemp("quickstart")
    log = bash("quickstart.sh", WORK_DIR=work, PRETRAIN_UPDATES=12, FINETUNE_UPDATES=12)
    return work, log


def test_quickstart_runs_every_stage_and_prints_bleu(quickstart):
    work, log = quickstart
    assert re.search(r"== en->fr test: 300 sentences", log)
    assert re.search(r"^\s*BLEU\|nrefs:1.* = [\d.]+ ", log, flags=re.M)
    assert re.search(r"^chrF2\|.* = [\d.]+", log, flags=re.M)
    # fairseq's progress output is shown, and pre-training validated per language
    assert "valid on 'valid.en' subset" in log and "valid on 'valid.fr' subset" in log
    assert "loading pretrained model from" in log
    hypotheses = (work / "checkpoints/ft-en-fr/checkpoint_best.test.en-fr.txt").read_text()
    assert len(hypotheses.splitlines()) == 300
    # pre-trained with the whole sentence masked, its default
    pretrained = checkpoint_utils.load_checkpoint_to_cpu(
        str(work / "checkpoints/pretrain/checkpoint_best.pt"))
    assert pretrained["cfg"]["task"]["mask_ratio"] == 1.0


def test_quickstart_without_pre_training_fine_tunes_from_random_initialisation(tmp_path):
    """PRETRAIN_UPDATES=0, the quickstart's control: no pre-training, the same
    fine-tuning and translation."""
    control = tmp_path / "control"
    log = bash("quickstart.sh", WORK_DIR=control, PRETRAIN_UPDATES=0, FINETUNE_UPDATES=4)
    assert "== 2/4 no pre-training" in log and "loading pretrained model from" not in log
    assert not (control / "checkpoints/pretrain").exists()
    assert re.search(r"^\s*BLEU\|nrefs:1.* = [\d.]+ ", log, flags=re.M)


def test_hub_devices_translates_the_quickstart_model_on_every_device_there_is(quickstart,
                                                                           tmp_path):
    """benchmarks/hub_devices.py (a step of benchmarks/gpu_check.sh): the CPU
    everywhere; CUDA float32 and float16 where there is a GPU."""
    work, _ = quickstart
    proc = subprocess.run([sys.executable, "benchmarks/hub_devices.py", "--work-dir", str(work),
                           "-n", "4", "--output", str(tmp_path / "hub.json")], cwd=REPO,
                          env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "hub.json").read_text())["rows"]
    assert rows[0]["device"] == "cpu" and rows[0]["agree"] == 4
    assert [row["dtype"] for row in rows] == (["float32", "float32", "float16"]
                                              if torch.cuda.is_available() else ["float32"])
    missing = subprocess.run([sys.executable, "benchmarks/hub_devices.py", "--work-dir",
                              str(tmp_path)], cwd=REPO, env=cli_env(), capture_output=True,
                             text=True)
    assert missing.returncode == 1 and "run examples/quickstart.sh" in missing.stderr


def test_summarization_recipe_fine_tunes_and_scores_rouge(quickstart, tmp_path):
    work, _ = quickstart
    xsum = tmp_path / "xsum"
    log = bash("finetune_summarization.sh", WORK_DIR=xsum, SPM_MODEL=work / "spm.model",
               PRETRAIN_DICT=work / "data-bin/dict.txt",
               PRETRAINED=work / "checkpoints/pretrain/checkpoint_best.pt",
               SAVE_DIR=xsum / "ckpt", MAX_UPDATE=3, MAX_SOURCE=256, NUM_GPUS=0,
               MAX_TOKENS=3000, TOKENS_PER_UPDATE=3000,
               EXTRA_ARGS=_small_model_args())
    assert "loading pretrained model from" in log
    out = bash("generate.sh", METRIC="rouge", SRC="document", TGT="summary",
               DATA_BIN=xsum / "data-bin", CHECKPOINT=xsum / "ckpt/checkpoint_best.pt",
               REFERENCE=REPO / "examples/data/xsum/test.summary", MAX_LEN_A=0, MAX_LEN_B=20,
               BEAM=1, NUM_GPUS=0,
               EXTRA_ARGS="--truncate-source --max-source-positions 256")
    assert "== document->summary test: 100 sentences" in out
    assert re.search(r"ROUGE-1 = [\d.]+ ROUGE-2 = [\d.]+ ROUGE-L = [\d.]+", out)


def _small_model_args():
    """The model dimensions quickstart.sh used, read back from its script."""
    text = (EXAMPLES / "quickstart.sh").read_text()
    block = re.search(r'MODEL_ARGS=\$\{MODEL_ARGS:-"(.*?)"\}', text, flags=re.S).group(1)
    return " ".join(block.replace("\\\n", " ").split())


def test_recipes_find_the_plugin_where_python_m_mass_plugin_does(tmp_path):
    """The recipes' common.sh (in the folder `python -m mass_tools.shell` prints)
    finds --user-dir without importing the package (and fairseq); it must name
    the directory `python -m mass_plugin` prints, from anywhere."""
    env = cli_env()
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env['PATH']}"
    env.update(NUM_GPUS="0")
    env.pop("USER_DIR", None)
    recipes = subprocess.run(["bash", "-c", 'source "$(python -m mass_tools.shell)/common.sh" '
                              "&& echo $USER_DIR"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    module = subprocess.run(["python", "-m", "mass_plugin"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=True)
    assert recipes.stdout.strip() == module.stdout.strip() == str(PLUGIN_DIR)


def test_results_tables_print_without_util_linux_column(tmp_path):
    """print_table aligns a recipe's results.tsv with awk alone: the GPU
    image has no `column`, and online_bt.sh stopped there after scoring."""
    results = tmp_path / "results.tsv"
    results.write_text("direction\tBLEU\tchrF\nen-fr\t12.3\t40.1\nfr-en\t9.87\t38.0\n")
    env = cli_env()
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env['PATH']}"
    shell_lib = subprocess.run(["python", "-m", "mass_tools.shell"], env=env, text=True,
                               capture_output=True, check=True).stdout.strip()
    bare = tmp_path / "bin"  # awk but no column on the PATH
    bare.mkdir()
    (bare / "awk").symlink_to(shutil.which("awk"))
    env["PATH"] = str(bare)
    out = subprocess.run(["/bin/bash", "-c", f'source "{shell_lib}/common.sh" 2>/dev/null; '
                          f'print_table "{results}"'],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["direction  BLEU  chrF",
                                       "en-fr      12.3  40.1",
                                       "fr-en      9.87  38.0"]


@pytest.mark.parametrize("gpus,expected", [
    (0, "--cpu --update-freq 32"),
    (1, "--fp16 --distributed-world-size 1 --update-freq 32"),
    (4, "--fp16 --distributed-world-size 4 --update-freq 8"),
    (64, "--fp16 --distributed-world-size 64 --update-freq 1"),
])
def test_effective_batch_stays_constant_across_gpu_counts(gpus, expected):
    env = cli_env()
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env['PATH']}"
    env.update(NUM_GPUS=str(gpus), MAX_TOKENS="4096", TOKENS_PER_UPDATE="131072")
    out = subprocess.run(["bash", "-c", 'source "$(python -m mass_tools.shell)/common.sh" '
                          "&& device_args"],
                         cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


def test_low_resource_comparison_runs_both_inits_and_directions_and_resumes(quickstart,
                                                                           tmp_path):
    work, _ = quickstart
    para = tmp_path / "para"
    para.mkdir()
    for split, n in (("train", 200), ("valid", 30), ("test", 20)):
        for lang in ("en", "fr"):
            lines = (REPO / f"examples/data/{split}.{lang}").read_text().splitlines()[:n]
            write(para / f"{split}.{lang}", lines)
    variables = dict(PARA_DIR=para, SPM_MODEL=work / "spm.model",
                     PRETRAIN_DICT=work / "data-bin/dict.txt",
                     PRETRAINED=work / "checkpoints/pretrain/checkpoint_best.pt",
                     WORK_DIR=tmp_path / "low", N_PAIRS=100, MAX_UPDATE=2, MAX_TOKENS=2000,
                     NUM_GPUS=0, MODEL_ARGS=_small_model_args())
    log = bash("low_resource_nmt.sh", **variables)
    assert log.count("loading pretrained model from") == 2  # the two MASS runs
    rows = (tmp_path / "low/results.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["direction", "init", "BLEU", "chrF", "minutes"]
    assert sorted(tuple(r.split("\t")[:2]) for r in rows[1:]) == [
        ("en-fr", "mass"), ("en-fr", "random"), ("fr-en", "mass"), ("fr-en", "random")]
    assert all(re.fullmatch(r"[\d.]+", r.split("\t")[2]) for r in rows[1:])
    again = bash("low_resource_nmt.sh", **variables)
    assert again.count("done, skipping") == 4


def test_offline_back_translation_rounds_chain_and_resume(quickstart, tmp_path):
    """Two rounds of projects/unsupervised/offline_bt.sh from the quickstart's
    cross-lingual checkpoint: each round trains on the other direction's
    translations of a new monolingual slice, starting from its previous model."""
    work, _ = quickstart
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "fr"):  # a 10-sentence test set, subwords and raw text
        for name, source in (("spm.test", work / f"spm/test.{lang}"),
                             ("test", REPO / f"examples/data/test.{lang}")):
            lines = source.read_text().splitlines()[:10]
            write(raw / f"{name}.{lang}", lines)
    subprocess.run(["python", "-m", "mass_tools.binarize", "--destdir", tmp_path / "bin",
                    "--dict", work / "data-bin/dict.txt", "--langs", "en,fr",
                    "--pair", "en-fr", "--valid", raw / "spm.test", "--test", raw / "spm.test"],
                   cwd=REPO, env=cli_env(), check=True, capture_output=True)
    out = tmp_path / "offline"
    variables = dict(DATA_BIN=tmp_path / "bin", MONO_PREFIX=work / "spm/mono",
                     PRETRAINED=work / "checkpoints/pretrain/checkpoint_best.pt",
                     REFERENCE_PREFIX=raw / "test", WORK_DIR=out, ROUNDS=2, MONO_LINES=30,
                     MAX_UPDATE=1, MAX_TOKENS=2000, BEAM=1, NUM_GPUS=0,
                     MODEL_ARGS=_small_model_args())
    log = bash("projects/unsupervised/offline_bt.sh", **variables)
    rows = [r.split("\t") for r in (out / "results.tsv").read_text().splitlines()]
    assert rows[0] == ["round", "direction", "BLEU", "chrF", "minutes"]
    assert sorted((r[0], r[1]) for r in rows[1:]) == [
        (str(i), d) for i in range(3) for d in ("en-fr", "fr-en")]
    assert all(re.fullmatch(r"[\d.]+", r[2]) for r in rows[1:])
    # rounds.csv: a row per round in projects/unsupervised/results.csv's columns, each
    # round's BLEU tested against round 0's, the share of French in en->fr
    with open(out / "rounds.csv", newline="") as f:
        table = list(csv.DictReader(f))
    bleu = {(r[0], r[1]): r[2] for r in rows[1:]}
    assert [(r["system"], r["round"], r["updates"]) for r in table] == [
        ("mass_then_bt", str(i), str(i)) for i in range(3)]
    assert [r["bleu_fr_en"] for r in table] == [bleu[(str(i), "fr-en")] for i in range(3)]
    assert table[0]["p_en_fr"] == "" and all(0 < float(r[p]) <= 1 for r in table[1:]
                                             for p in ("p_en_fr", "p_fr_en"))
    assert all(0 <= float(r[share]) <= 1 for r in table for share in ("share_fr", "share_en"))
    assert "== rounds.csv: mass_then_bt,2,2," in log
    # round 1 translates with the pre-trained model, round 2 with round 1's
    assert re.search(r"round 1: translating 30 fr sentences into en with \S+pretrain/", log)
    assert re.search(r"round 2: translating 30 fr sentences into en with "
                     r"\S+round1/ckpt-fr-en/", log)
    mono = (work / "spm/mono.fr").read_text().splitlines()
    for round_, first in ((1, 0), (2, 30)):  # a new slice of the text every round
        pairs = out / f"round{round_}/gen-fr-en/pairs"
        real = pairs.with_suffix(".fr").read_text().splitlines()
        synthetic = pairs.with_suffix(".en").read_text().splitlines()
        assert len(real) == len(synthetic) > 0
        assert set(real) <= set(mono[first:first + 30])
        assert real != synthetic
    # the en->fr model of round 2 started from round 1's, on round 2's pairs
    train_log = (out / "round2/train-en-fr.log").read_text()
    assert "round1/ckpt-en-fr/checkpoint_best.pt" in train_log
    # finished rounds are kept; a trained but unscored model is scored again,
    # not translated for or trained again
    (out / "results.tsv").write_text(
        "\n".join("\t".join(r) for r in rows if r[:2] != ["2", "en-fr"]) + "\n")
    again = bash("projects/unsupervised/offline_bt.sh", **variables)
    assert "round 1: done, skipping" in again and "translating" not in again
    assert "round 2: en->fr trained before, scoring it" in again and "fine-tuning" not in again
    assert len((out / "results.tsv").read_text().splitlines()) == 7


def test_offline_recipe_reads_one_way_lexicons_by_prefix(quickstart, tmp_path):
    """LEXICON=PREFIX (induce_lexicon.py --one-way): each direction's round 0
    reads its own file, PREFIX.SRC-TGT.tsv, not reversed."""
    work, _ = quickstart
    lexicon = tmp_path / "one"
    write(tmp_path / "one.en-fr.tsv", ["the\tla\t0.4", "select\tsélectionnez\t0.4"])
    write(tmp_path / "one.fr-en.tsv", ["le\tthe\t0.3", "la\tthe\t0.3", "les\tthe\t0.3"])
    out = tmp_path / "offline"
    variables = dict(DATA_BIN=work / "data-bin", MONO_PREFIX=work / "spm/mono",
                     PRETRAINED=work / "checkpoints/pretrain/checkpoint_best.pt",
                     REFERENCE_PREFIX=REPO / "examples/data/test", WORK_DIR=out, ROUNDS=0,
                     NUM_GPUS=0, LEXICON=lexicon, SPM_MODEL=work / "spm.model")
    bash("projects/unsupervised/offline_bt.sh", **variables)
    for src, tgt in (("en", "fr"), ("fr", "en")):
        expected = subprocess.run(
            ["python", "-m", "projects.unsupervised.translate_words",
             "--lexicon", tmp_path / f"one.{src}-{tgt}.tsv", "--min-score", "0.1",
             "--src-lang", src, "--tgt-lang", tgt, "--input", REPO / f"examples/data/test.{src}"],
            cwd=REPO, env=cli_env(), capture_output=True, text=True, check=True).stdout
        assert (out / f"round0.test.{src}-{tgt}.txt").read_text() == expected
    fr_en = (out / "round0.test.fr-en.txt").read_text()
    assert " le " not in f" {fr_en.lower()} " and " les " not in f" {fr_en.lower()} "
    (tmp_path / "one.fr-en.tsv").unlink()
    assert "one.fr-en.tsv is missing or empty" in bash_error(
        "projects/unsupervised/offline_bt.sh", **{**variables, "WORK_DIR": tmp_path / "again"})


def test_offline_recipe_starts_word_by_word_with_a_lexicon(quickstart, tmp_path):
    """LEXICON: round 0 is word-by-word translation of the test set, and
    round 1 trains on word-by-word translations of the monolingual slice;
    with GEN_ENGINE=ctranslate2, round 2 back-translates with the CTranslate2
    export of round 1's models."""
    work, _ = quickstart
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "fr"):
        for name, source in (("spm.test", work / f"spm/test.{lang}"),
                             ("test", REPO / f"examples/data/test.{lang}")):
            write(raw / f"{name}.{lang}", source.read_text().splitlines()[:10])
    subprocess.run(["python", "-m", "mass_tools.binarize", "--destdir", tmp_path / "bin",
                    "--dict", work / "data-bin/dict.txt", "--langs", "en,fr",
                    "--pair", "en-fr", "--valid", raw / "spm.test", "--test", raw / "spm.test"],
                   cwd=REPO, env=cli_env(), check=True, capture_output=True)
    lexicon = tmp_path / "lexicon.tsv"
    # "the" scores below the recipe's MIN_SCORE (0.1): it must stay untranslated
    write(lexicon, ["the\tle\t0.05", "select\tsélectionnez\t0.4", "choose\tchoisissez\t0.4",
                    "click\tcliquez\t0.3"])
    out = tmp_path / "offline"
    variables = dict(DATA_BIN=tmp_path / "bin", MONO_PREFIX=work / "spm/mono",
                     PRETRAINED=work / "checkpoints/pretrain/checkpoint_best.pt",
                     REFERENCE_PREFIX=raw / "test", WORK_DIR=out, ROUNDS=2, MONO_LINES=20,
                     MAX_UPDATE=1, MAX_TOKENS=2000, BEAM=1, NUM_GPUS=0,
                     MODEL_ARGS=_small_model_args(), LEXICON=lexicon,
                     SPM_MODEL=work / "spm.model", GEN_ENGINE="ctranslate2")
    log = bash("projects/unsupervised/offline_bt.sh", **variables)
    rows = [r.split("\t") for r in (out / "results.tsv").read_text().splitlines()]
    assert sorted((r[0], r[1]) for r in rows[1:]) == [
        (str(i), d) for i in range(3) for d in ("en-fr", "fr-en")]

    def words(*args, stdin):
        return subprocess.run(["python", "-m", "projects.unsupervised.translate_words",
                               "--lexicon", lexicon, "--min-score", "0.1", *map(str, args)],
                              cwd=REPO,
                              env=cli_env(), input=stdin, capture_output=True, text=True,
                              check=True).stdout

    # round 0: the test set translated word by word, then scored
    test_en = (raw / "test.en").read_text()
    round0 = (out / "round0.test.en-fr.txt").read_text()
    assert round0 == words("--src-lang", "en", "--tgt-lang", "fr", stdin=test_en)
    assert " the " in f" {round0} " and " le " not in f" {round0} "
    assert "en->fr word by word" in log and "fr->en word by word" in log
    # round 1: real fr sentences, and their word-by-word translation (reversed lexicon)
    assert "round 1: translating 20 fr sentences into en word by word" in log
    pairs = out / "round1/gen-fr-en/pairs"
    real = pairs.with_suffix(".fr").read_text()
    assert pairs.with_suffix(".en").read_text() == words(
        "--reverse", "--src-lang", "fr", "--tgt-lang", "en", "--spm-model",
        work / "spm.model", stdin=real)
    assert len(real.splitlines()) == 20
    assert "loading pretrained model from" in (out / "round1/train-en-fr.log").read_text()
    with open(out / "rounds.csv", newline="") as f:
        table = list(csv.DictReader(f))
    # against word by word, and the share of French in round 0 is word by word's
    assert [(r["system"], r["round"]) for r in table] == [
        ("words_then_bt", str(i)) for i in range(3)]
    share = subprocess.run(["python", "-m", "mass_tools.output_stats", "--json",
                            out / "round0.test.en-fr.txt"], cwd=REPO, env=cli_env(),
                           capture_output=True, text=True, check=True).stdout
    assert float(table[0]["share_fr"]) == json.loads(share)["french_share"]
    # round 2: round 1's fr->en model, exported, translates the next slice with CTranslate2
    assert re.search(r"round 2: translating 20 fr sentences into en with "
                     r"\S+round1/ckpt-fr-en/checkpoint_best.pt \(CTranslate2, int8\)", log)
    pairs = out / "round2/gen-fr-en/pairs"
    real = pairs.with_suffix(".fr").read_text().splitlines()
    synthetic = pairs.with_suffix(".en").read_text().splitlines()
    assert len(real) == len(synthetic) > 0 and real != synthetic
    assert set(real) <= set((work / "spm/mono.fr").read_text().splitlines()[20:40])
    vocabulary = {line.split()[0] for line in (tmp_path / "bin/dict.txt").open()}
    assert {piece for line in synthetic for piece in line.split()} <= vocabulary
    assert "translated 20 sentences" in (out / "round2/gen-fr-en/translate.log").read_text()
