"""The Python side of the unsupervised recipe (projects.unsupervised.repair):
its settings, the way it runs its steps and its rows; the recipe itself runs
in test_repair_recipe.py."""

import dataclasses
import os
import subprocess
import sys

import pytest

from conftest import REPO, cli_env, write
from projects.unsupervised import commands, repair, scores

NEEDED = dict(MONO_PREFIX="raw/mono", REFERENCE_PREFIX="raw/test")


def test_a_variable_comes_from_its_option_else_the_environment_else_its_default():
    values = repair.read([], {**NEEDED, "BEAM": "3", "LR": ""})
    assert (values["beam"], values["score_beam"], values["lr"]) == (3, 3, "0.0005")
    assert values["tokens_per_update"] == values["max_tokens"] == 4096
    assert values["score_test"] is True and values["rounds"] == 2
    values = repair.read(["--beam", "4", "--score-beam", "6", "--mono-prefix", "y"],
                         {**NEEDED, "BEAM": "3"})
    assert (values["mono_prefix"], values["beam"], values["score_beam"]) == ("y", 4, 6)
    s = repair.Settings(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.beam = 5  # built once, read by every stage, changed by none


@pytest.mark.parametrize("environ,error", [
    ({}, "error: MONO_PREFIX: set MONO_PREFIX: MONO_PREFIX.L1"),
    ({**NEEDED, "ROUNDS": "-1"}, "error: ROUNDS=-1: give a whole number"),
    ({**NEEDED, "BEAM": "1k"}, "error: BEAM=1k: give a whole number"),
    ({**NEEDED, "SCORE_TEST": "2"}, "error: SCORE_TEST=2: give 1 (score the test set)"),
    ({**NEEDED, "KEEP_ROUND1_PAIRS": "1"}, "error: KEEP_ROUND1_PAIRS=1: the recipe no longer")])
def test_a_missing_or_bad_variable_stops_with_one_line(environ, error, capsys):
    with pytest.raises(SystemExit) as stop:
        repair.read([], environ)
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(error) and err.count("\n") == 1


def test_a_removed_variable_at_the_behaviour_kept_is_accepted(capsys):
    """DAE_UPDATES=0, KEEP_ROUND1_PAIRS=0, GEN_ENGINE=ctranslate2: what the
    recipe does, so the settings of a run without them, and not a word said."""
    values = repair.read([], {**NEEDED, "DAE_UPDATES": "0", "MASS_UPDATES": "0",
                              "KEEP_ROUND1_PAIRS": "0", "GEN_ENGINE": "ctranslate2",
                              "EXTRA_MONO_PREFIX": "", "TRANSLATOR_ARCH": "transformer_mass"})
    assert values == repair.read([], NEEDED)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_help_prints_the_description_and_every_variable_with_its_default():
    proc = subprocess.run(["python", "-m", "projects.unsupervised.repair", "--help"],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, check=True)
    assert "repaired by a model of\nthe target language (Kim et al., 2018)" in proc.stdout
    for var in repair.variables():
        assert f"--{var.name.replace('_', '-')} {var.name.upper()}" in proc.stdout
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


@pytest.mark.slow
def test_a_failed_command_shows_the_end_of_its_log_and_exits_1(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        commands.run(["bash", "-c", "seq 30; exit 3"], stdout=tmp_path / "log",
                     log=tmp_path / "log")
    assert stop.value.code == 1
    assert capsys.readouterr().err.split() == [str(i) for i in range(11, 31)]
    with pytest.raises(SystemExit) as stop:  # no log: its own status, as under set -e
        commands.run(["bash", "-c", "exit 3"])
    assert stop.value.code == 3


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


def test_the_model_options_change_their_arch_alone():
    args = "--encoder-layers 3 --arch transformer --dropout 0.1"
    assert commands.arch(args) == "transformer" and commands.arch("--dropout 0.1") == ""
    assert commands.with_arch(args, "transformer_mass") == (
        "--arch transformer_mass --encoder-layers 3 --dropout 0.1")


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


def test_the_recipe_s_tables_print_in_columns_without_util_linux(tmp_path, capsys, monkeypatch):
    """show_tables pads each column to its widest cell, as column -t does,
    with no column command on the PATH (a GPU image has none)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    rows = ["round\tdirection\tBLEU", "0\ten-fr\t9.34", "12\tfr-en\t11.01"]
    (tmp_path / "valid.tsv").write_text("\n".join(rows) + "\n")
    scores.show_tables(tmp_path, test=False)
    assert capsys.readouterr().out.splitlines() == [
        "round  direction  BLEU", "0      en-fr      9.34", "12     fr-en      11.01"]


def test_the_clock_keeps_each_direction_s_half_minutes_across_runs(tmp_path):
    clock = commands.Clock(tmp_path)
    assert clock.minutes() == 0
    (tmp_path / "seconds").write_text("250\n")
    clock.spent(commands.seconds())
    assert clock.total() == 250 and clock.minutes() == 2
