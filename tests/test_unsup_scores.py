"""projects/unsupervised/scores.py: the round chosen on the valid set, and
rounds.csv, the test-scored rounds as rows of projects/unsupervised/results.csv
with significance and output language."""

import csv

import pytest

from conftest import write
from projects.unsupervised import scores

HEADER = "round\tdirection\tBLEU\tchrF\tminutes"
LANGS = ("en", "fr")
REFERENCE_FR = ["le fichier est ouvert", "la cellule est vide", "ouvrez le menu"] * 20
REFERENCE_EN = ["the file is open", "the cell is empty", "open the menu"] * 20


def table(path, rows):
    write(path, [HEADER] + ["\t".join(map(str, row)) for row in rows])


def test_the_best_mean_valid_bleu_is_chosen_and_the_test_set_plays_no_part(tmp_path):
    table(tmp_path / "valid.tsv", [
        (0, "en-fr", "9.66", "37.0", 0), (0, "fr-en", "10.76", "37.5", 0),
        (1, "en-fr", "9.79", "36.6", 3), (1, "fr-en", "10.83", "37.1", 3),
        (2, "en-fr", "11.00", "38.0", 5), (2, "fr-en", "12.00", "39.0", 5),
        (3, "en-fr", "12.00", "38.0", 7), (3, "fr-en", "10.50", "38.0", 7),
        (4, "en-fr", "30.00", "50.0", 9)])  # round 4: one direction only, not yet a round
    # the test set would choose round 3; it is only reported
    table(tmp_path / "results.tsv", [
        (2, "en-fr", "8.00", "36.0", 5), (2, "fr-en", "9.00", "37.0", 5),
        (3, "en-fr", "20.00", "40.0", 7), (3, "fr-en", "20.00", "40.0", 7)])
    assert scores.choose(scores.read_results(tmp_path / "valid.tsv"), LANGS) == 2
    lines = scores.summary(tmp_path, LANGS, 2)
    assert lines[0] == ("chosen on valid: round 2 (en->fr / fr->en): valid "
                        "BLEU 11.00 / 12.00 (mean 11.50)")
    assert lines[1] == "its test BLEU 8.00 / 9.00 (mean 8.50)"
    assert lines[2].endswith("round2/ckpt/checkpoint_last.pt")
    assert len(lines) == 3  # round 2 is above word by word on valid


def test_ties_go_to_chrf_then_to_the_earlier_round(tmp_path):
    table(tmp_path / "valid.tsv", [
        (1, "en-fr", "11.61", "39.52", 1), (1, "fr-en", "12.60", "39.46", 1),
        (2, "en-fr", "11.91", "40.19", 2), (2, "fr-en", "12.30", "39.54", 2),
        (3, "en-fr", "11.91", "40.19", 3), (3, "fr-en", "12.30", "39.54", 3)])
    # the same mean BLEU (24.21 / 2) in rounds 1-3: chrF picks 2 over 1, 2 comes before 3
    assert scores.choose(scores.read_results(tmp_path / "valid.tsv"), LANGS) == 2
    table(tmp_path / "valid.tsv", [(0, "en-fr", "10", "37", 0), (0, "fr-en", "11", "37", 0),
                                   (1, "en-fr", "9", "36", 1)])
    assert scores.choose(scores.read_results(tmp_path / "valid.tsv"), LANGS) is None


def test_word_by_word_above_every_model_round_is_said(tmp_path):
    table(tmp_path / "valid.tsv", [(0, "en-fr", "10", "37", 0), (0, "fr-en", "11", "37", 0),
                                   (1, "en-fr", "9", "36", 1), (1, "fr-en", "10", "36", 1)])
    assert scores.summary(tmp_path, LANGS, 1)[-1] == (
        "word by word (round 0) is higher on valid: BLEU 10.00 / 11.00 (mean 10.50)")


@pytest.fixture
def work(tmp_path):
    write(tmp_path / "ref.fr", REFERENCE_FR)
    write(tmp_path / "ref.en", REFERENCE_EN)
    outputs = {  # round 0 poor, round 1 the references (better); round 2 one way only
        0: (["the fichier is ouvert"] * 60, ["le file est open"] * 60),
        1: (REFERENCE_FR, REFERENCE_EN)}
    for round_, (en_fr, fr_en) in outputs.items():
        write(tmp_path / f"round{round_}.test.en-fr.txt", en_fr)
        write(tmp_path / f"round{round_}.test.fr-en.txt", fr_en)
    table(tmp_path / "results.tsv", [(0, "en-fr", "5.10", "30.00", 0),
                                     (0, "fr-en", "6.20", "31.00", 0),
                                     (1, "en-fr", "100.00", "100.00", 7),
                                     (1, "fr-en", "100.00", "100.00", 8),
                                     (2, "en-fr", "1.00", "2.00", 3)])
    return tmp_path


@pytest.mark.slow  # sacrebleu's paired bootstrap, as a process
def test_one_row_per_round_done_both_ways_with_p_values_and_language_shares(work, capsys):
    scores.write_rounds(work, LANGS, work / "ref", "demo", 500, 4000)
    with open(work / "rounds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["system", "round", "updates", "bleu_en_fr", "bleu_fr_en",
                             "chrf_en_fr", "chrf_fr_en", "minutes", "p_en_fr", "p_fr_en",
                             "share_fr", "share_en"]
    # round 2 has only one direction: no row yet; round 1 trained FIRST_UPDATES
    assert [(r["system"], r["round"], r["updates"], r["minutes"]) for r in rows] == [
        ("demo", "0", "0", "0"), ("demo", "1", "4000", "15")]
    assert (rows[0]["bleu_en_fr"], rows[1]["chrf_fr_en"]) == ("5.10", "100.00")
    assert rows[0]["p_en_fr"] == rows[0]["p_fr_en"] == ""
    assert float(rows[1]["p_en_fr"]) < 0.01 and float(rows[1]["p_fr_en"]) < 0.01
    # round 0's en->fr output is mostly English words: no line counts as French
    assert float(rows[0]["share_fr"]) == 0 and float(rows[1]["share_fr"]) == 1
    assert float(rows[1]["share_en"]) == 1
    assert capsys.readouterr().out == "== rounds.csv: " + ",".join(rows[1].values()) + "\n"


@pytest.mark.slow  # sacrebleu's paired bootstrap, as a process
def test_a_failed_paired_bootstrap_is_one_line(work, capsys):
    with pytest.raises(SystemExit) as stop:
        scores.paired_p(work / "ref.fr", work / "missing.txt", work / "round1.test.en-fr.txt")
    assert "error: sacrebleu's paired bootstrap of" in str(stop.value.code)
