"""projects/paper_analysis/__main__.py, shrunken: the k end points and the three baselines,
a few updates each, on a slice of the bundled data."""

import csv
import json
import math
import re
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import REPO, SHORT_DECODE, cli_env, hold_elsewhere, write
from projects.paper_analysis import analysis

DATA = REPO / "examples" / "data"
SMALL = ["--ratios", "0,1", "--ablations", "", "--baselines", "none,dae,bert_lm",
         "--pretrain-updates", "3", "--finetune-updates", "3", "--vocab-size", "300",
         "--warmup", "2", "--beam", "2"]


def run_analysis(raw, work, *extra, check=True):
    env = {**cli_env(), **SHORT_DECODE}
    proc = subprocess.run(
        ["python", "-m", "projects.paper_analysis", "--raw-dir", str(raw),
         "--work-dir", str(work), *SMALL, *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"paper_analysis failed:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    for name, lines in (("mono", 300), ("mono.valid", 40), ("train", 300), ("valid", 40),
                        ("test", 40)):
        for lang in ("en", "fr"):
            text = (DATA / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()
            write(raw / f"{name}.{lang}", text[:lines])
    work = tmp_path_factory.mktemp("analysis")
    proc = run_analysis(raw, work)
    return raw, work, proc.stdout + proc.stderr


def rows_of(work):
    with open(work / "results.csv", newline="") as f:
        return {row["point"]: row for row in csv.DictReader(f)}


@pytest.mark.slow
def test_every_point_gets_a_row_and_the_plot_is_written(analysed):
    _, work, log = analysed
    rows = rows_of(work)
    assert list(rows) == ["mass_r0.00", "mass_r1.00", "none", "dae", "bert_lm"]
    for name, row in rows.items():
        for key in ("finetune_valid_ppl", "bleu", "chrf"):
            assert math.isfinite(float(row[key])), (name, key)
        # the masked-span perplexities belong to the MASS points only
        has_ppl = row["kind"] == "mass"
        assert bool(row["ppl_span50"]) == has_ppl and bool(row["ppl_own_masking"]) == has_ppl
        if has_ppl:
            assert 1 < float(row["ppl_span50"]) < 1000  # a vocabulary of about 300
    png = (work / "results.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert "[5/5] bert_lm: BLEU" in log and "== 5 of 5 points" in log
    # pre-training trains for the budget; no pre-training for `none`
    assert not (work / "points" / "none" / "pretrain").exists()
    assert "loading pretrained model from" not in (work / "points/none/finetune.log").read_text()
    for name in ("mass_r0.00", "dae"):
        assert "loading pretrained model from" in (
            work / "points" / name / "finetune.log").read_text()
    # finished trainings keep checkpoint_last.pt only, not interval copies of it
    assert (work / "points/dae/pretrain/checkpoint_last.pt").exists()
    assert not list(work.glob("points/*/*/checkpoint_*_*.pt"))


@pytest.mark.slow
def test_end_points_mask_one_token_and_every_token(analysed):
    _, work, _ = analysed

    def epoch_stats(name):
        log = (work / "points" / name / "pretrain.log").read_text()
        line = [x for x in log.splitlines() if "| train | epoch" in x][-1]
        return {k: float(v) for k, v in
                (pair.strip().split(" ") for pair in line.split("|")[3:])
                if k in ("wpb", "bsz", "num_updates")}

    one, all_ = epoch_stats("mass_r0.00"), epoch_stats("mass_r1.00")
    assert one["num_updates"] == all_["num_updates"] == 3
    # masked_s2s counts predicted tokens: k = 1 predicts one per sentence
    assert one["wpb"] == pytest.approx(one["bsz"], abs=0.11)
    # k = m predicts whole sentences (over 10 tokens on average)
    assert all_["wpb"] > 10 * all_["bsz"]


@pytest.mark.slow
def test_bert_lm_joins_the_masked_lm_encoder_and_the_language_model_decoder(analysed):
    _, work, _ = analysed
    from fairseq import checkpoint_utils

    point = work / "points" / "bert_lm"
    load = checkpoint_utils.load_checkpoint_to_cpu
    joined = load(str(point / "joined.pt"))["model"]
    encoder = load(str(point / "encoder" / "checkpoint_last.pt"))["model"]
    decoder = load(str(point / "decoder" / "checkpoint_last.pt"))["model"]
    assert "encoder_mlm_loss" in (point / "encoder.log").read_text()
    name = "encoder.layers.0.fc1.weight"
    assert torch.equal(joined[name], encoder[name])
    assert not torch.equal(joined[name], decoder[name])
    for name in ("decoder.layers.1.self_attn.k_proj.weight", "decoder.embed_tokens.weight"):
        assert torch.equal(joined[name], decoder[name])
    # attention over the encoder starts afresh
    name = "decoder.layers.0.encoder_attn.v_proj.weight"
    assert not torch.equal(joined[name], decoder[name])
    assert torch.equal(joined["encoder.embed_tokens.weight"], joined["decoder.embed_tokens.weight"])


@pytest.mark.slow
def test_a_second_run_keeps_finished_points_and_other_settings_are_refused(analysed):
    raw, work, _ = analysed
    logs = {p: p.read_text() for p in work.glob("points/*/*.log")}
    proc = run_analysis(raw, work)
    assert proc.stdout.count("done before, kept") == 5
    assert {p: p.read_text() for p in work.glob("points/*/*.log")} == logs
    proc = run_analysis(raw, work, "--pretrain-updates", "5", check=False)
    assert proc.returncode != 0
    assert "pretrain_updates: 3 -> 5" in proc.stderr and "--work-dir" in proc.stderr
    # --plot-only redraws from the finished points without training
    (work / "results.png").unlink()
    run_analysis(raw, work, "--plot-only")
    assert (work / "results.png").exists()
    assert json.loads((work / "config.json").read_text())["pretrain_updates"] == 3


@pytest.mark.parametrize("argv,message", [
    (["--pair", "en-de"], "--pair en-de"),
    (["--baselines", "none,gpt"], "unknown gpt"),
    (["--ratios", "0.5,1.5"], "in \\[0, 1\\]"),
    (["--ablations", "span"], "unknown span"),
    (["--ablation-ratio", "0.5,x"], "--ablation-ratio must be comma-separated numbers"),
    (["--ablation-ratio", "0.5,2"], "in \\[0, 1\\]"),
])
def test_bad_options_are_named(argv, message, capsys):
    with pytest.raises(SystemExit):
        analysis.parse_args(argv)
    assert re.search(message, capsys.readouterr().err)


def test_the_original_ablation_pretrains_with_the_original_codes_options_at_each_ratio():
    """--ablations original at --ablation-ratio 0.5,1: one point per ratio,
    each pre-trained with the screen's `original` options at its ratio."""
    from types import SimpleNamespace

    from projects.paper_analysis import pretrain, screen

    args = analysis.parse_args(["--ratios", "0.5", "--ablations", "original,discrete",
                                "--ablation-ratio", "0.5,1", "--baselines", ""])
    points = analysis.points_of(args)
    assert [p.name for p in points] == ["mass_r0.50", "original_r0.50", "original_r1.00",
                                        "discrete_r0.50", "discrete_r1.00"]
    calls = []
    runner = SimpleNamespace(pretrain=lambda save_dir, log, extra, what: calls.append(extra))
    for point in points[:3]:
        pretrain.pretrain_point(runner, point, Path("/nonexistent"))
    base, orig_half, orig_all = (" ".join(extra) for extra in calls)
    assert "--hide-mask-states" not in base and "--mask-ratio 0.5" in base
    assert orig_half.endswith("--mask-ratio 0.5 " + screen.VARIANTS["original"])
    assert "--mask-ratio 1.0 --hide-mask-states encoder --span-start mass" in orig_all
    for option in ("--embedding-style xlm", "--decoder-mask-prob 0.1",
                   "--decoder-random-token-prob 0.1"):
        assert option in orig_all


@pytest.mark.slow
def test_a_point_in_use_by_another_process_is_a_failed_point(tmp_path, capsys):
    from types import SimpleNamespace

    runner = SimpleNamespace(work=tmp_path)  # the point fails before it needs more
    point = analysis.Point("mass_r0.50", "mass", 0.5)
    holder = hold_elsewhere(tmp_path / "points" / point.name)
    try:
        assert analysis.run_points(runner, [point], 1) == [point.name]
    finally:
        holder.kill()
        holder.wait()
    assert f"in use by another process (pid {holder.pid}" in capsys.readouterr().err
    # once the other process has finished the point, its result is kept
    (tmp_path / "points" / point.name / "result.json").write_text('{"bleu": 1.0}')
    assert analysis.run_point(runner, point, 1, 1) == {"bleu": 1.0}


@pytest.mark.slow
def test_the_screen_runs_each_variant_with_its_options_scores_valid_and_resumes(analysed,
                                                                                 tmp_path):
    """python -m projects.paper_analysis.screen, shrunken: a variant's options
    reach its pre-training only (its fine-tuning gets the defaults), its seed
    both stages; the control fine-tunes alone; the valid set is scored; a
    second run trains nothing."""
    raw, _, _ = analysed
    screen = ["python", "-m", "projects.paper_analysis.screen", "--raw-dir", str(raw),
              "--work-dir", str(tmp_path), "--variants", "hide_cross,none_xlm", "--seeds", "3",
              "--pretrain-updates", "2", "--finetune-updates", "2", "--vocab-size", "300"]
    env = {**cli_env(), **SHORT_DECODE}
    first = subprocess.run(screen, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=1200)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    with open(tmp_path / "screen.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["variant"], r["seed"]) for r in rows] == [("hide_cross", "3"), ("none_xlm", "3")]
    assert all(float(r["valid_bleu"]) >= 0 and float(r["valid_chrf"]) > 0 for r in rows)
    hidden = (tmp_path / "hide_cross-s3/pretrain.log").read_text()
    assert "hide_mask_states='cross'" in hidden and "'seed': 3," in hidden
    fine_tuned = (tmp_path / "hide_cross-s3/ft.log").read_text()
    assert "hide_mask_states='none'" in fine_tuned and "'seed': 3," in fine_tuned
    # fine-tuning takes the pre-trained checkpoint's style (logged as it builds the model)
    assert "--embedding-style fairseq) from " in fine_tuned
    # the control: no pre-training, the xlm style in the fine-tuning itself
    control = (tmp_path / "none_xlm-s3/ft.log").read_text()
    assert not (tmp_path / "none_xlm-s3/pretrain").exists()
    assert "embedding_style='xlm'" in control and "loading pretrained model" not in control
    assert "loading pretrained model" in fine_tuned
    # the valid set's 40 sentences were translated and scored, never the test set
    assert "== en->fr valid: 40 sentences" in (tmp_path / "hide_cross-s3/valid.log").read_text()
    again = subprocess.run(screen, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and "== hide_cross seed" not in again.stdout
    assert "hide_cross     valid BLEU mean" in again.stdout


@pytest.mark.slow
def test_the_whole_ablation_pretrains_and_scores_on_the_valid_set(analysed, tmp_path):
    """--ablations whole (--reconstruct-sentence) at 0.5, scored with
    --score-on valid: the valid set translated and scored, the test set
    untouched (the first run's data is reused)."""
    raw, first, _ = analysed
    work = tmp_path / "whole"
    work.mkdir()
    for name in ("data-bin", "mono-bin", "spm.model", "data.done"):
        (work / name).symlink_to(first / name)
    run_analysis(raw, work, "--ratios", "", "--ablations", "whole", "--baselines", "",
                 "--score-on", "valid")
    point = work / "points" / "whole_r0.50"
    pretrained = checkpoint_utils_cfg(point / "pretrain" / "checkpoint_last.pt")
    assert pretrained.reconstruct_sentence and pretrained.mask_ratio == 0.5
    hypotheses = (point / "valid.en-fr.txt").read_text().splitlines()
    assert len(hypotheses) == len((raw / "valid.fr").read_text().splitlines())
    assert (point / "valid.scores").exists() and not list(point.glob("test.*"))
    row = rows_of(work)["whole_r0.50"]
    assert row["kind"] == "whole" and row["scored_on"] == "valid"
    assert row["ppl_span50"] and math.isfinite(float(row["bleu"]))


def checkpoint_utils_cfg(path):
    """The task configuration a checkpoint was trained with."""
    from fairseq import checkpoint_utils

    return checkpoint_utils.load_checkpoint_to_cpu(str(path))["cfg"]["task"]
