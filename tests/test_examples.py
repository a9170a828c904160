"""Shrunken runs of the shell recipes in examples/ (the same scripts, fewer updates)."""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.data import data_utils

from conftest import PLUGIN_DIR, REPO, SHORT_DECODE, bash, cli_env, write

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

EXAMPLES = REPO / "examples"


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
    log = bash("quickstart.sh", WORK_DIR=control, PRETRAIN_UPDATES=0, FINETUNE_UPDATES=4,
               BEAM=1, **SHORT_DECODE)
    assert "== 2/4 no pre-training" in log and "loading pretrained model from" not in log
    assert not (control / "checkpoints/pretrain").exists()
    assert re.search(r"^\s*BLEU\|nrefs:1.* = [\d.]+ ", log, flags=re.M)


def _generate_default(name):
    """The default of NAME in examples/generate.sh, the quickstart's decoding."""
    text = (EXAMPLES / "generate.sh").read_text()
    return re.search(rf"^{name}=\$\{{{name}:-([\d.]+)\}}", text, flags=re.M).group(1)


def test_hub_devices_translates_the_quickstart_model_on_every_device_there_is(quickstart,
                                                                           tmp_path):
    """benchmarks/hub_devices.py (a step of benchmarks/gpu_check.sh): the CPU
    everywhere; CUDA float32 and float16 where there is a GPU. Its CPU
    translations, under generate.sh's beam and length limits, are
    fairseq-generate's of the same sentences. fairseq caps the hypotheses of
    a batch at A * its longest source + B, so the sentences are the test
    set's 4 longest: generate.sh batches by length (64 a batch), so their
    batch there has the longest source of their batch here."""
    work, _ = quickstart
    dataset = data_utils.load_indexed_dataset(str(work / "data-bin/test.en-fr.en"), None)
    lengths = dataset.sizes.copy()  # a copy: the sizes are a view of the file's map
    del dataset
    longest = np.argsort(-lengths, kind="stable")[:4]
    source = (EXAMPLES / "data/test.en").read_text().splitlines()
    write(tmp_path / "longest.en", [source[i] for i in longest])
    proc = subprocess.run(["python", "benchmarks/hub_devices.py", "--work-dir", str(work),
                           "--source", str(tmp_path / "longest.en"), "-n", "4",
                           "--beam", _generate_default("BEAM"),
                           "--max-len-a", _generate_default("MAX_LEN_A"),
                           "--max-len-b", _generate_default("MAX_LEN_B"),
                           "--output", str(tmp_path / "hub.json")], cwd=REPO,
                          env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hub = json.loads((tmp_path / "hub.json").read_text())
    generated = (work / "checkpoints/ft-en-fr/checkpoint_best.test.en-fr.txt").read_text()
    assert hub["translations"] == [generated.splitlines()[i] for i in longest]
    rows = hub["rows"]
    assert rows[0]["device"] == "cpu"
    assert [row["dtype"] for row in rows] == (["float32", "float32", "float16"]
                                              if torch.cuda.is_available() else ["float32"])
    missing = subprocess.run(["python", "benchmarks/hub_devices.py", "--work-dir",
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
                     NUM_GPUS=0, MODEL_ARGS=_small_model_args(), **SHORT_DECODE)
    log = bash("low_resource_nmt.sh", **variables)
    assert log.count("loading pretrained model from") == 2  # the two MASS runs
    rows = (tmp_path / "low/results.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["direction", "init", "BLEU", "chrF", "minutes"]
    assert sorted(tuple(r.split("\t")[:2]) for r in rows[1:]) == [
        ("en-fr", "mass"), ("en-fr", "random"), ("fr-en", "mass"), ("fr-en", "random")]
    assert all(re.fullmatch(r"[\d.]+", r.split("\t")[2]) for r in rows[1:])
    again = bash("low_resource_nmt.sh", **variables)
    assert again.count("done, skipping") == 4
