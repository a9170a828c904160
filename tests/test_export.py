"""mass_tools.export: a fine-tuned model as fairseq's plain transformer and
as a CTranslate2 model, translating the bundled test set as the original does."""

import math
import re
import subprocess

import pytest
import torch

from conftest import PLUGIN_DIR, REPO, cli_env, run_cli
from mass_tools.export import ExportError, check_exportable, direction, main

DATA = REPO / "examples" / "data"


def head(src, dst, n):
    with open(src, encoding="utf-8") as f:
        dst.write_text("".join(line for _, line in zip(range(n), f)), encoding="utf-8")


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A tiny en->fr model with language embeddings, fine-tuned for a few
    updates on the bundled pairs; its data and export directories."""
    root = tmp_path_factory.mktemp("export")
    raw = root / "raw"
    raw.mkdir()
    for lang in ("en", "fr"):
        head(DATA / f"mono.{lang}", raw / f"mono.{lang}", 1000)
        head(DATA / f"mono.valid.{lang}", raw / f"mono.valid.{lang}", 50)
        head(DATA / f"train.{lang}", raw / f"train.{lang}", 1500)
        head(DATA / f"valid.{lang}", raw / f"valid.{lang}", 50)
        head(DATA / f"test.{lang}", raw / f"test.{lang}", 300)  # the whole test set
    subprocess.run(["bash", "examples/prepare_data.sh"], cwd=REPO, check=True,
                   capture_output=True, env=dict(cli_env(), RAW_DIR=str(raw),
                                                 WORK_DIR=str(root), VOCAB_SIZE="1000"))
    data_bin = root / "data-bin"
    run_cli(["fairseq-train", data_bin, "--user-dir", PLUGIN_DIR, "--task", "translation",
             "-s", "en", "-t", "fr", "--arch", "transformer_mass_tiny",
             "--language-embeddings", "en,fr", "--criterion", "label_smoothed_cross_entropy",
             "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.003",
             "--max-tokens", "2000", "--max-update", "20", "--cpu", "--num-workers", "0",
             "--save-dir", root / "ft", "--no-epoch-checkpoints"], cwd=REPO)
    return root


def generate(data_dir, checkpoint, *extra):
    """fairseq-generate over the whole test set: {id: (tokens, scores)}."""
    log = run_cli(["fairseq-generate", data_dir, "--path", checkpoint, "--task",
                   "translation", "-s", "en", "-t", "fr", "--gen-subset", "test",
                   "--beam", "4", "--max-len-a", "0", "--max-len-b", "8", "--batch-size",
                   "64", "--required-batch-size-multiple", "1", "--cpu", *extra],
                  cwd=REPO).stdout
    out = {}
    for kind, i, rest in re.findall(r"^([SHP])-(\d+)\t(.*)$", log, flags=re.M):
        out.setdefault(int(i), {})[kind] = rest
    assert len(out) == 300, "every test sentence gets a hypothesis"
    return out


@pytest.fixture(scope="module")
def exported(finetuned):
    out = finetuned / "export"
    assert main(["--checkpoint", str(finetuned / "ft/checkpoint_best.pt"),
                 "--output", str(out / "model.pt"),
                 "--ctranslate2", str(finetuned / "ct2")]) == 0
    for path in (finetuned / "data-bin").glob("test.en-fr.*"):
        (out / path.name).symlink_to(path)  # the README's way to decode binarized data
    return out


@pytest.fixture(scope="module")
def original(finetuned):
    """The fine-tuned model's own hypotheses, through the plugin."""
    return generate(finetuned / "data-bin", finetuned / "ft/checkpoint_best.pt",
                    "--user-dir", PLUGIN_DIR)


@pytest.mark.slow
def test_stock_fairseq_gives_the_same_hypotheses_token_for_token(original, exported):
    plain = generate(exported, exported / "model.pt")  # no --user-dir, weights-only
    assert plain == original  # tokens, sentence scores and per-token scores


@pytest.mark.slow
def test_the_export_is_plain_data_and_fairseqs_own_transformer(finetuned, exported):
    state = torch.load(exported / "model.pt", weights_only=True)  # no allow-list needed
    assert state["cfg"]["model"]["arch"] == "transformer"
    assert state["cfg"]["task"]["_name"] == "translation"
    assert state["cfg"]["common"]["user_dir"] is None
    assert not [k for k in state["model"] if "embed_langs" in k or "checksum" in k]
    original = torch.load(finetuned / "ft/checkpoint_best.pt", weights_only=False)["model"]
    # the language vectors went into the position tables: they differ, the rest not
    for key, weight in state["model"].items():
        same = torch.equal(weight, original[key])
        assert same != key.endswith("embed_positions.weight"), key
    dictionary = (exported / "dict.fr.txt").read_text().splitlines()
    assert dictionary[-1].startswith("<mask> ")
    assert len(dictionary) + 4 == state["model"]["decoder.embed_tokens.weight"].size(0)


@pytest.mark.slow
def test_ctranslate2_scores_fairseqs_hypotheses_alike(finetuned, exported, original):
    ctranslate2 = pytest.importorskip(
        "ctranslate2", reason="CTranslate2 is an optional extra: pip install -e '.[serve]'")
    translator = ctranslate2.Translator(str(finetuned / "ct2"), compute_type="float32")
    ids = sorted(original)[:60]
    results = translator.score_batch([original[i]["S"].split() for i in ids],
                                     [original[i]["H"].split("\t")[1].split() for i in ids])
    for i, result in zip(ids, results):
        fairseq_bits = [float(x) for x in original[i]["P"].split()]  # log2, with </s>
        ct2_bits = [x / math.log(2) for x in result.log_probs]
        assert ct2_bits == pytest.approx(fairseq_bits, abs=2e-3), i


@pytest.fixture
def three_lines(tmp_path):
    """Raw English for translate_ct2.py, an empty line in the middle."""
    pytest.importorskip("ctranslate2",
                        reason="CTranslate2 is an optional extra: pip install -e '.[serve]'")
    source = tmp_path / "in.en"
    source.write_text("Choose Edit - Copy.\n\nThis section contains information.\n")
    return source


def translate_ct2(finetuned, source, *flags):
    """mass_tools/translate_ct2.py on ``source`` with the fine-tuned model."""
    return subprocess.run(
        ["python", "-m", "mass_tools.translate_ct2", "--model", finetuned / "ct2",
         "--spm", finetuned / "spm.model", "--input", source, "--threads", "1", *flags],
        cwd=REPO, env=cli_env(), capture_output=True, text=True)


@pytest.mark.slow
def test_ctranslate2_translate_script_turns_raw_text_into_raw_text(finetuned, exported,
                                                                   three_lines, tmp_path):
    proc = translate_ct2(finetuned, three_lines, "--output", tmp_path / "out",
                         "--compute-type", "int8", "--beam", "2")
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "out").read_text().split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # one line per line
    assert "\u2581" not in lines[0] + lines[2]  # pieces joined back into text
    assert "translated 3 sentences" in proc.stderr


@pytest.mark.slow
def test_ctranslate2_translate_script_writes_the_nbest_best_first(finetuned, exported,
                                                                  three_lines):
    best, three = (translate_ct2(finetuned, three_lines, "--compute-type", "float32",
                                 "--beam", "3", "--nbest", n) for n in ("1", "3"))
    assert best.returncode == 0 and three.returncode == 0, three.stderr
    best, three = best.stdout.splitlines(), three.stdout.splitlines()
    assert len(best) == 3 and len(three) == 9  # three consecutive lines for each line
    assert three[0::3] == best  # the first of each three is the 1-best
    assert three[3:6] == ["", "", ""]  # an empty line gives empty hypotheses
    assert len(set(three[0:3])) == 3 and len(set(three[6:9])) == 3  # distinct hypotheses
    proc = translate_ct2(finetuned, three_lines, "--beam", "2", "--nbest", "4")
    assert proc.returncode == 2 and "--nbest 4 exceeds --beam 2" in proc.stderr


@pytest.mark.parametrize("cfg,message", [
    ({"task": {"_name": "masked_s2s"}, "model": {"arch": "transformer_mass"}},
     "pre-training checkpoint does not translate"),
    ({"task": {"_name": "translation"}, "model": {"arch": "transformer"}},
     "needs no export"),
])
def test_what_cannot_be_exported_says_what_to_do(cfg, message):
    with pytest.raises(ExportError, match=message):
        check_exportable(cfg, "ckpt.pt")


def test_a_model_of_two_directions_needs_one_chosen():
    cfg = {"task": {"_name": "unsupervised_translation", "langs": "en,fr"}}
    with pytest.raises(ExportError, match="--source-lang and --target-lang"):
        direction(cfg)
    assert direction(cfg, "fr", "en") == ("fr", "en")


@pytest.mark.slow
def test_a_pretraining_checkpoint_is_refused_on_the_command_line(finetuned, tmp_path):
    run_cli(["fairseq-train", finetuned / "data-bin", "--user-dir", PLUGIN_DIR, "--task",
             "masked_s2s", "--langs", "en,fr", "--arch", "transformer_mass_tiny",
             "--criterion", "masked_s2s_loss", "--optimizer", "adam", "--lr", "0.001",
             "--max-tokens", "1000", "--max-update", "1", "--cpu", "--num-workers", "0",
             "--disable-validation", "--save-dir", tmp_path / "pre"], cwd=REPO)
    # by the export's older name, which runs mass_tools.export
    proc = subprocess.run(
        ["python", "-m", "mass_plugin.export", "--checkpoint",
         tmp_path / "pre/checkpoint_last.pt", "--output", tmp_path / "out.pt"],
        cwd=REPO, env=cli_env(), capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Fine-tune it first" in proc.stderr and not (tmp_path / "out.pt").exists()


@pytest.mark.slow
def test_the_serving_benchmark_compares_the_four_systems(finetuned, tmp_path):
    pytest.importorskip("ctranslate2",
                        reason="CTranslate2 is an optional extra: pip install -e '.[serve]'")
    pytest.importorskip("transformers",
                        reason="transformers is an optional extra: pip install -e '.[hf]'")
    proc = subprocess.run(
        ["python", "benchmarks/serving.py", "--checkpoint",
         finetuned / "ft/checkpoint_best.pt", "--data-bin", finetuned / "data-bin",
         "--spm", finetuned / "spm.model", "--source", DATA / "test.en", "--reference",
         DATA / "test.fr", "--beam", "2", "--threads", "1", "--work-dir", tmp_path],
        cwd=REPO, env=cli_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout.split("\nsystem ", 1)[1].splitlines()[1:]  # after the header
    rows = {line[:22].strip(): line.split()[-6:] for line in table}
    assert set(rows) == {"fairseq-generate", "CTranslate2 float32", "CTranslate2 int8",
                         "transformers"}
    assert rows["fairseq-generate"][1] == "1.00"  # speeds are relative to fairseq
    assert all(float(row[0]) > 0 for row in rows.values())
    # fairseq's batches and length limits: transformers' lines are fairseq's
    sentences = len((DATA / "test.en").read_text(encoding="utf-8").splitlines())
    assert rows["transformers"][5] == rows["fairseq-generate"][5] == str(sentences)
