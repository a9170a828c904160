"""projects/unsupervised/choose_round.py: the repair recipe's round chosen on the valid set."""

import pytest

from conftest import write
from projects.unsupervised import choose_round

HEADER = "round\tdirection\tBLEU\tchrF\tminutes"


def table(path, rows):
    write(path, [HEADER] + ["\t".join(map(str, row)) for row in rows])


def test_the_best_mean_valid_bleu_is_chosen_and_the_test_set_plays_no_part(tmp_path, capsys):
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
    choose_round.main(["--work-dir", str(tmp_path), "--round-only"])
    assert capsys.readouterr().out == "2\n"
    choose_round.main(["--work-dir", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("chosen on valid: round 2 (en->fr / fr->en): valid "
                      "BLEU 11.00 / 12.00 (mean 11.50)")
    assert out[1] == "its test BLEU 8.00 / 9.00 (mean 8.50)"
    assert out[2].endswith("round2/ckpt/checkpoint_last.pt")
    assert len(out) == 3  # round 2 is above word by word on valid


def test_ties_go_to_chrf_then_to_the_earlier_round(tmp_path):
    rows = [(1, "en-fr", "11.61", "39.52", 1), (1, "fr-en", "12.60", "39.46", 1),
            (2, "en-fr", "11.91", "40.19", 2), (2, "fr-en", "12.30", "39.54", 2),
            (3, "en-fr", "11.91", "40.19", 3), (3, "fr-en", "12.30", "39.54", 3)]
    table(tmp_path / "valid.tsv", rows)
    valid = choose_round.read_results(tmp_path / "valid.tsv")
    # the same mean BLEU (24.21 / 2) in rounds 1-3: chrF picks 2 over 1, 2 comes before 3
    assert choose_round.choose(valid, ["en", "fr"]) == 2


def test_word_by_word_above_every_model_round_is_said(tmp_path):
    table(tmp_path / "valid.tsv", [(0, "en-fr", "10", "37", 0), (0, "fr-en", "11", "37", 0),
                                   (1, "en-fr", "9", "36", 1), (1, "fr-en", "10", "36", 1)])
    valid = choose_round.read_results(tmp_path / "valid.tsv")
    lines = choose_round.summary(tmp_path, ["en", "fr"], 1, valid)
    assert lines[-1] == ("word by word (round 0) is higher on valid: "
                         "BLEU 10.00 / 11.00 (mean 10.50)")


def test_no_valid_table_or_no_model_round_is_an_error(tmp_path):
    with pytest.raises(SystemExit, match="no valid.tsv there"):
        choose_round.main(["--work-dir", str(tmp_path)])
    table(tmp_path / "valid.tsv", [(0, "en-fr", "10", "37", 0), (0, "fr-en", "11", "37", 0),
                                   (1, "en-fr", "9", "36", 1)])
    with pytest.raises(SystemExit, match="no round after round 0 scored in both directions"):
        choose_round.main(["--work-dir", str(tmp_path)])


def test_langs_must_be_two(tmp_path, capsys):
    with pytest.raises(SystemExit):
        choose_round.main(["--work-dir", str(tmp_path), "--langs", "en,fr,de"])
    assert "en,fr,de: give two languages, L1,L2" in capsys.readouterr().err
