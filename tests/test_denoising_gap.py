"""The study of why denoising leads MASS (projects/paper_analysis/denoising_gap.py)
and its two analyses without training: per-sentence gain against
source-reference overlap (overlap.py) and the share of each objective's
targets visible in its encoder input (visible_targets.py)."""

import csv
import json
import re

import pytest

from conftest import binarize_splits, synthetic_sentences
from conftest import write as write_lines
from projects.paper_analysis import analysis, denoising_gap, overlap, visible_targets

SOURCES = ["Click OK to close the Options dialog .", "Le chat dort .",
           "Press F5 in Calc", "nothing here matches"]
REFERENCES = ["Cliquez sur OK pour fermer la boîte Options .", "The cat sleeps .",
              "Appuyez sur F5 dans Calc", "rien ne correspond"]


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lines(path, lines)


def test_words_and_overlap_leave_punctuation_out():
    assert overlap.words("Press F5, then OK.") == ["Press", "F5", "then", "OK"]
    source = set(overlap.words(SOURCES[0]))
    # "OK" and "Options" of 8 reference words appear in the source
    assert overlap.share_in(overlap.words(REFERENCES[0]), source) == pytest.approx(2 / 8)
    assert overlap.share_in([], source) == 0.0


@pytest.fixture
def seeds(tmp_path):
    """Two seeds' hypotheses of three points: `copy` outputs the reference
    where the source shares words with it and nothing useful elsewhere."""
    raw = tmp_path / "raw"
    write(raw / "valid.en", SOURCES)
    write(raw / "valid.fr", REFERENCES)
    dirs = []
    for seed in (1, 2):
        work = tmp_path / f"s{seed}"
        hyps = {"mass_r0.50": ["x"] * 4, "dae": REFERENCES[:1] + ["x"] * 3,
                "none": ["x", "x", "x", "x"]}
        hyps["dae"][2] = REFERENCES[2]
        for point, lines in hyps.items():
            write(work / "points" / point / "valid.en-fr.txt", lines)
        dirs.append(work)
    return raw, dirs


def test_overlap_gain_is_placed_in_its_overlap_bin_and_written_per_sentence(seeds, tmp_path,
                                                                           capsys):
    raw, dirs = seeds
    out = tmp_path / "overlap.csv"
    overlap.main(["--raw-dir", str(raw), "--baseline", "mass_r0.50", "--out", str(out),
                  *map(str, dirs)])
    printed = capsys.readouterr().out
    assert "== 4 sentences" in printed and "none in 50.0% of the sentences" in printed
    dae = next(line for line in printed.splitlines() if line.startswith("dae |"))
    cells = [c.strip() for c in dae.split("|")]
    # the columns: point, chrF, one per bin of overlap.BINS (each overlap in
    # one bin), r; the two sentences dae gets right overlap by 2 of 8 and 2 of
    # 5 reference words: gains in their bins, none where nothing overlaps
    column = {}
    for share in (0.0, 2 / 8, 2 / 5):
        found = [i for i, (_, low, high) in enumerate(overlap.BINS)
                 if overlap.in_bin(share, low, high)]
        assert len(found) == 1
        column[share] = 2 + found[0]
    assert len(cells) == 2 + len(overlap.BINS) + 1 and cells[column[0.0]] == "+0.00"
    assert float(cells[column[2 / 8]]) > 50 and float(cells[column[2 / 5]]) > 50
    assert float(cells[-1]) > 0  # gain rises with overlap
    rows = list(csv.DictReader(out.open()))
    assert [r["overlap"] for r in rows] == ["0.2500", "0.0000", "0.4000", "0.0000"]
    assert set(rows[0]) == {"sentence", "overlap", "dae", "mass_r0.50", "none"}


def test_overlap_waits_for_the_baseline_and_refuses_short_outputs(seeds, capsys):
    raw, dirs = seeds
    overlap.main(["--raw-dir", str(raw), "--baseline", "mass_r1.00", *map(str, dirs)])
    assert "no valid.en-fr.txt of mass_r1.00" in capsys.readouterr().out
    write(dirs[1] / "points" / "dae" / "valid.en-fr.txt", ["x"])
    with pytest.raises(SystemExit, match="1 lines for 4 references"):
        overlap.main(["--raw-dir", str(raw), *map(str, dirs)])


def test_visible_targets_rank_the_objectives_by_what_the_decoder_can_copy(tmp_path, capsys):
    sentences = synthetic_sentences(7, 60, min_len=8, max_len=20)
    binarize_splits(tmp_path, {"valid.en": sentences, "valid.fr": sentences[::-1]})
    visible_targets.main([str(tmp_path)])
    rows = dict(re.findall(r"^(\S+)\s+([\d.]+)%", capsys.readouterr().out, flags=re.M))
    share = {name: float(value) for name, value in rows.items()}
    assert set(share) == set(visible_targets.OBJECTIVES)
    # k = m: only the span tokens left unchanged or drawn at random (about 10%)
    assert 3 < share["mass_r1.00"] < 25
    assert share["mass_r1.00"] < share["whole_r0.50"] < share["dae"]
    assert share["mass_r0.50"] < share["whole_r0.50"]


def test_the_study_runs_the_five_points_in_xlm_style_on_valid():
    args = analysis.parse_args([*denoising_gap.SCALE, *denoising_gap.POINT_ARGS])
    assert sorted(p.name for p in analysis.points_of(args)) == sorted(denoising_gap.POINTS)
    assert (args.embedding_style, args.score_on) == ("xlm", "valid")  # the test set unused
    # every size of the study's scale reaches the analysis, over its preset's
    preset = analysis.parse_args([])
    sizes = dict(zip(denoising_gap.SCALE[::2], denoising_gap.SCALE[1::2]))
    names = [option[2:].replace("-", "_") for option in sizes]
    assert len(sizes) == len(denoising_gap.SCALE) // 2 and "pretrain_updates" in names
    for option, name in zip(sizes, names):
        assert getattr(args, name) == type(getattr(preset, name))(sizes[option])
    assert any(getattr(args, name) != getattr(preset, name) for name in names)
    # options given after the study's settings override them
    quick = denoising_gap.parse_args(["--seeds", "1", "--pretrain-updates", "3"])
    assert quick.analysis_args == ["--pretrain-updates", "3"]
    with pytest.raises(SystemExit):
        denoising_gap.parse_args(["--seeds", "one"])


def test_the_report_gives_each_points_mean_and_range_over_the_seeds(seeds, capsys):
    raw, dirs = seeds
    work = dirs[0].parent
    for seed, d in zip((1, 2), dirs):
        for point, bleu in (("mass_r0.50", 10.0 + seed), ("dae", 20.0), ("none", 5.0)):
            (d / "points" / point / "result.json").write_text(json.dumps(
                dict(bleu=bleu, chrf=40.0, finetune_valid_ppl=20.0)))
    denoising_gap.main(["--report-only", "--seeds", "1,2", "--work-dir", str(work),
                        "--raw-dir", str(raw)])
    printed = capsys.readouterr().out
    assert re.search(r"mass_r0\.50\s+2\s+11\.50 \(11\.00 to 12\.00\)", printed)
    assert "mass_r1.00" not in printed.split("==")[0]  # no run, no row
    rows = list(csv.DictReader((work / "denoising-gap.csv").open()))
    assert len(rows) == 6 and {r["point"] for r in rows} == {"none", "mass_r0.50", "dae"}
    assert "by overlap" in printed  # the overlap analysis ran on the hypotheses
