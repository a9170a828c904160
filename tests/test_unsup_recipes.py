"""The Python side of the unsupervised recipes (projects.unsupervised.repair,
offline_bt): their variables, the way they run their steps, their rows and
their synthetic pairs; the recipes themselves run in test_examples.py."""

import argparse
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import REPO, cli_env, write
from projects.unsupervised import commands, offline_pairs, repair, scores
from projects.unsupervised.recipe_vars import Var, read

VARIABLES = [Var("NEEDED", required="set NEEDED: it is needed"),
             Var("ROUNDS", "2", "how many", count=True, invalid="give a number of rounds"),
             Var("BEAM", "5", count=True),
             Var("SCORE_BEAM", lambda v: v["beam"], count=True, shown="BEAM"),
             Var("ENGINE", "fairseq", choices=("fairseq", "ct2"), invalid="choose fairseq or ct2"),
             Var("MIN_SCORE", "0.1", empty=True)]


def values(argv=(), **environ):
    return read(VARIABLES, "the description", "prog", list(argv), environ)


def test_a_variable_comes_from_its_option_else_the_environment_else_its_default():
    s = values(NEEDED="x", BEAM="3", ENGINE="")
    assert s == argparse.Namespace(needed="x", rounds=2, beam=3, score_beam=3, engine="fairseq",
                                   min_score="0.1")
    s = values(["--beam", "4", "--score-beam", "6", "--needed", "y"], NEEDED="x", BEAM="3")
    assert (s.needed, s.beam, s.score_beam) == ("y", 4, 6)
    assert values(NEEDED="x", MIN_SCORE="").min_score == ""  # ${MIN_SCORE-0.1}


@pytest.mark.parametrize("environ,error", [
    ({}, "error: NEEDED: set NEEDED: it is needed"),
    ({"NEEDED": "x", "ROUNDS": "-1"}, "error: ROUNDS=-1: give a number of rounds"),
    ({"NEEDED": "x", "BEAM": "1k"}, "error: BEAM=1k: give a whole number"),
    ({"NEEDED": "x", "ENGINE": "marian"}, "error: ENGINE=marian: choose fairseq or ct2")])
def test_a_missing_or_bad_variable_stops_with_one_line(environ, error, capsys):
    with pytest.raises(SystemExit) as stop:
        values(**environ)
    assert stop.value.code == 1
    assert capsys.readouterr().err == error + "\n"


def test_help_prints_the_description_and_every_variable_with_its_default():
    proc = subprocess.run([sys.executable, "-m", "projects.unsupervised.repair", "--help"],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, check=True)
    assert "repaired by a model of\nthe target language (Kim et al., 2018)" in proc.stdout
    for var in repair.VARIABLES:
        assert f"--{var.dest.replace('_', '-')} {var.name}" in proc.stdout
    text = " ".join(proc.stdout.split())
    assert "(default: 'work/unsup-repair')" in text and "(default: the value of BEAM)" in text
    assert "required: set MONO_PREFIX: MONO_PREFIX.L1" in text


def test_a_tool_runs_in_process_as_python_m_runs_it(tmp_path, capsys):
    from mass_tools.textio import InputError

    def tool(argv):
        print("out", *argv)
        print("said", file=sys.stderr)
        if argv == ["bad"]:
            raise InputError("bad input")

    assert commands.call(tool, "a", 1, stderr=tmp_path / "log") == "out a 1\n"
    assert (tmp_path / "log").read_text() == "said\n"
    with pytest.raises(SystemExit) as stop:
        commands.call(tool, "bad")
    assert stop.value.code == 1 and capsys.readouterr().err.endswith("error: bad input\n")


def test_a_failed_command_shows_the_end_of_its_log_and_exits_1(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        commands.run(["bash", "-c", "seq 30; exit 3"], stdout=tmp_path / "log",
                     log=tmp_path / "log")
    assert stop.value.code == 1
    assert capsys.readouterr().err.split() == [str(i) for i in range(11, 31)]
    with pytest.raises(SystemExit) as stop:  # no log: its own status, as under set -e
        commands.run(["bash", "-c", "exit 3"])
    assert stop.value.code == 3


def test_the_recipe_s_tables_print_in_columns_without_util_linux(tmp_path, capsys, monkeypatch):
    """show_tables pads each column to its widest cell, as column -t does,
    with no column command on the PATH (a GPU image has none)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    rows = ["round\tdirection\tBLEU", "0\ten-fr\t9.34", "12\tfr-en\t11.01"]
    (tmp_path / "valid.tsv").write_text("\n".join(rows) + "\n")
    scores.show_tables(tmp_path, test=False)
    assert capsys.readouterr().out.splitlines() == [
        "round  direction  BLEU", "0      en-fr      9.34", "12     fr-en      11.01"]

def test_a_program_missing_from_the_path_is_one_clear_error(tmp_path, capsys, monkeypatch):
    """``python`` of a venv that is not active finds no fairseq-train: say so
    instead of a FileNotFoundError's traceback, for run and output alike."""
    monkeypatch.setenv("PATH", str(tmp_path))
    for call in (commands.run, commands.output):
        with pytest.raises(SystemExit) as stop:
            call(["fairseq-train", "data-bin"])
        assert stop.value.code == 1
        assert capsys.readouterr().err == (
            "error: fairseq-train is not on the PATH: activate the environment fairseq is "
            "installed in (e.g. . .venv/bin/activate), or put its bin folder on the PATH\n")
    # the environment a command is given is the one searched
    assert commands.output(["echo", "found"], env={"PATH": os.defpath}) == "found\n"


@pytest.mark.parametrize("gpus,expected", [
    ("0", ["--cpu", "--update-freq", "3"]),
    ("2", ["--fp16", "--distributed-world-size", "2", "--update-freq", "2"])])
def test_device_args_are_common_sh_s(gpus, expected, monkeypatch):
    monkeypatch.setenv("NUM_GPUS", gpus)
    commands.num_gpus.cache_clear()
    try:
        assert commands.device_args(1000, 2500 if gpus == "0" else 3000) == expected
        assert commands.decode_device_args() == (["--cpu"] if gpus == "0" else [])
        assert commands.ct2_device() == ("cpu" if gpus == "0" else "cuda")
    finally:
        commands.num_gpus.cache_clear()


def test_hypotheses_come_in_the_order_of_the_source_each_n_best_as_written(tmp_path):
    write(tmp_path / "log", ["S-1\tb", "H-1\t-0.1\tB1 pieces", "D-1\t-0.1\tB1", "D-1\t-0.2\tB2",
                             "D-0\t-0.3\tA1", "D-0\t-0.4\t", "D-10\t-0.5\tK1"])
    assert commands.hypotheses(tmp_path / "log") == [(0, "A1"), (0, ""), (1, "B1"), (1, "B2"),
                                                     (10, "K1")]
    assert commands.hypotheses(tmp_path / "log", "H") == [(1, "B1 pieces")]


def test_rows_read_bleu_and_chrf_from_sacrebleu_text(tmp_path, capsys):
    text = ("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.0 = 12.34 45.6/"
            "20.1/10.0/5.0 (BP = 1.000 ratio = 1.000 hyp_len = 9 ref_len = 9)\n"
            "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.0 = 40.12")
    assert scores.bleu_chrf(text) == ("12.34", "40.12")
    table = tmp_path / "results.tsv"
    scores.start_table(table)
    scores.add_row(table, 1, "en-fr", text, 7)
    scores.start_table(table)  # kept
    assert table.read_text() == scores.HEADER + "1\ten-fr\t12.34\t40.12\t7\n"
    assert scores.has_row(table, 1, "en-fr") and not scores.has_row(table, 1, "fr-en")
    assert not scores.has_row(table, 11, "en-fr")
    with pytest.raises(SystemExit):
        scores.bleu_chrf("BLEU = 1")
    assert "error: no BLEU and chrF score in: BLEU = 1" in capsys.readouterr().err


def test_the_repair_clock_keeps_each_direction_s_half_minutes_across_runs(tmp_path):
    clock = repair.Clock(tmp_path)
    assert clock.minutes() == 0
    (tmp_path / "seconds").write_text("250\n")
    clock.spent(commands.seconds())
    assert clock.total() == 250 and clock.minutes() == 2


def test_each_round_back_translates_a_new_slice_wrapping_around(tmp_path):
    write(tmp_path / "mono.en", [f"line {i}" for i in range(5)])
    s = SimpleNamespace(mono_prefix=tmp_path / "mono", mono_lines=3)
    for round_, expected in ((1, [0, 1, 2]), (2, [0, 3, 4]), (3, [1, 2, 3])):
        offline_pairs.mono_slice(s, "en", round_, tmp_path / "slice")
        assert (tmp_path / "slice").read_text().splitlines() == [f"line {i}" for i in expected]
    assert offline_pairs.split_direction("en-fr") == ("en", "fr")


def test_only_pairs_with_a_translation_are_kept(tmp_path, capsys):
    write(tmp_path / "pairs.tsv", ["le chat\tthe cat", "\tthe dog", "un\u2028deux\ta two"])
    offline_pairs.keep_translated(tmp_path, "en", "fr")
    assert (tmp_path / "pairs.fr").read_text() == "le chat\nun\u2028deux\n"
    assert (tmp_path / "pairs.en").read_text() == "the cat\na two\n"
    assert capsys.readouterr().out == "   2 synthetic pairs\n"
    write(tmp_path / "pairs.tsv", ["\tthe dog"])
    with pytest.raises(SystemExit):
        offline_pairs.keep_translated(tmp_path, "en", "fr")
    assert f"error: no translations in {tmp_path}" in capsys.readouterr().err
