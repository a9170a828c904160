"""projects/unsupervised/rounds_table.py: the offline recipe's rounds as rows of
projects/unsupervised/results.csv, with significance and output language."""

import csv

import pytest

from conftest import write
from projects.unsupervised import rounds_table

REFERENCE_FR = ["le fichier est ouvert", "la cellule est vide", "ouvrez le menu"] * 20
REFERENCE_EN = ["the file is open", "the cell is empty", "open the menu"] * 20


@pytest.fixture
def work(tmp_path):
    write(tmp_path / "ref.fr", REFERENCE_FR)
    write(tmp_path / "ref.en", REFERENCE_EN)
    outputs = {  # round 0 poor, round 1 the references (better), round 2 half done
        0: (["the fichier is ouvert"] * 60, ["le file est open"] * 60),
        1: (REFERENCE_FR, REFERENCE_EN),
    }
    for round_, (en_fr, fr_en) in outputs.items():
        write(tmp_path / f"round{round_}.test.en-fr.txt", en_fr)
        write(tmp_path / f"round{round_}.test.fr-en.txt", fr_en)
    write(tmp_path / "results.tsv", ["round\tdirection\tBLEU\tchrF\tminutes",
                                     "0\ten-fr\t5.10\t30.00\t0", "0\tfr-en\t6.20\t31.00\t0",
                                     "1\ten-fr\t100.00\t100.00\t7", "1\tfr-en\t100.00\t100.00\t8",
                                     "2\ten-fr\t1.00\t2.00\t3"])
    return tmp_path


def test_one_row_per_round_done_both_ways_with_p_values_and_language_shares(work):
    rounds_table.main(["--work-dir", str(work), "--reference-prefix", str(work / "ref"),
                       "--system", "demo", "--updates-per-round", "500"])
    with open(work / "rounds.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:8] == ["system", "round", "updates", "bleu_en_fr", "bleu_fr_en",
                                 "chrf_en_fr", "chrf_fr_en", "minutes"]
    # round 2 has only one direction: no row yet
    assert [(r["system"], r["round"], r["updates"], r["minutes"]) for r in rows] == [
        ("demo", "0", "0", "0"), ("demo", "1", "500", "15")]
    assert (rows[0]["bleu_en_fr"], rows[1]["chrf_fr_en"]) == ("5.10", "100.00")
    assert rows[0]["p_en_fr"] == rows[0]["p_fr_en"] == ""
    assert float(rows[1]["p_en_fr"]) < 0.01 and float(rows[1]["p_fr_en"]) < 0.01
    # round 0's en->fr output is mostly English words: no line counts as French
    assert float(rows[0]["share_fr"]) == 0 and float(rows[1]["share_fr"]) == 1
    assert float(rows[1]["share_en"]) == 1
    # projects/unsupervised/repair.sh: round 1 trains longer than later rounds
    rounds_table.main(["--work-dir", str(work), "--reference-prefix", str(work / "ref"),
                       "--updates-per-round", "500", "--first-round-updates", "4000",
                       "--output", str(work / "repair.csv")])
    with open(work / "repair.csv", newline="") as f:
        assert [r["updates"] for r in csv.DictReader(f)] == ["0", "4000"]


def test_a_work_dir_without_results_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no results.tsv there"):
        rounds_table.main(["--work-dir", str(tmp_path), "--reference-prefix", "x",
                           "--updates-per-round", "1"])
