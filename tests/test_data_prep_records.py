"""What makes a prepared directory whole and consistent, checked in seconds:
data-prep/lib.sh's steps (done when their outputs are there and the same,
not when a marker says so; redone with every step after them), its settings
(a finished run's are kept, an unfinished one starts over), and the record
of the dictionary each binarized file was made with (mass-binarize refuses
to mix two; the recipes' check names a file read with another one)."""

import json
import os
import subprocess

import pytest

from conftest import REPO, cli_env, write
from mass_tools import binarize, data_bin_record
from mass_tools.textio import InputError

# A data-prep script in miniature: three steps (a -> b -> c) with the knob N,
# each copying its input, as the real scripts chain theirs.
SCRIPT = """set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)
OUT=$1 JOBS=1 N=${N:-1}
source "$REPO/data-prep/lib.sh"
check_settings "N=$N"
step a "$OUT/a" -- bash -c 'for i in $(seq "$2"); do echo "line $i"; done > "$1/a"' _ "$OUT" "$N"
step b "$OUT/b" -- cp "$OUT/a" "$OUT/b"
step c "$OUT/c" -- bash -c "${FAIL:+exit 1; }cp '$OUT/b' '$OUT/c'"
finish
"""


def prep(tmp_path, status=0, **variables):
    script = tmp_path / "mini.sh"
    script.write_text(SCRIPT)
    env = {**cli_env(), "REPO": str(REPO), **{k: str(v) for k, v in variables.items()}}
    proc = subprocess.run(["bash", str(script), str(tmp_path / "out")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == status, proc.stdout + proc.stderr
    return [line.removeprefix("== ") for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.slow
def test_a_step_is_done_when_its_outputs_are_there_and_the_same(tmp_path):
    out = tmp_path / "out"
    assert prep(tmp_path)[0] == ["a", "b", "c"]
    assert prep(tmp_path)[0] == [f"{name}: done already" for name in "abc"]
    (out / "b").unlink()  # a deleted output: b again, and c after it
    lines, _ = prep(tmp_path)
    assert lines[0] == "a: done already" and lines[2:] == ["b", "c"]
    assert "b: its outputs are missing or changed" in lines[1]
    (out / "a").write_text("line 9\n")  # same size, other content: a, b and c
    assert prep(tmp_path)[0][1:] == ["a", "b", "c"]
    assert (out / "c").read_text() == "line 1\n"
    (out / "c").write_text("line 1\n")  # rewritten the same (a new time): still done
    assert prep(tmp_path)[0][-1] == "c: done already"


@pytest.mark.slow
def test_settings_bind_a_finished_run_not_a_failed_one(tmp_path):
    _, error = prep(tmp_path, status=1, N=5, FAIL=1)  # c fails: the run did not finish
    lines, _ = prep(tmp_path, N=2)  # other settings are taken: it starts over
    assert lines[:2] == ["other settings than the unfinished run in "
                         f"{tmp_path / 'out'}: starting over", "  N: 5 before, 2 now"]
    assert lines[2:] == ["a", "b", "c"] and (tmp_path / "out" / "c").read_text().count("\n") == 2
    _, error = prep(tmp_path, status=1, N=3)  # finished: other settings stop it
    assert error.splitlines() == [
        f"error: {tmp_path / 'out'} was prepared by mini.sh with other settings:",
        "  N: 2 before, 3 now",
        f"Use another OUT, or redo it: delete {tmp_path / 'out' / '.done' / 'mini'}."]


def mono(tmp_path, name, lines):
    write(tmp_path / f"{name}.en", lines)
    write(tmp_path / f"{name}.fr", [line.upper() for line in lines])
    return str(tmp_path / name)


@pytest.fixture
def data_bin(tmp_path):
    """A data-bin as news_crawl.sh and newstest.sh leave it: monolingual
    train/valid and valid pairs, one dictionary, one subword model."""
    codes = tmp_path / "bpe.codes"
    codes.write_text("#version: 0.2\na b\n")
    text = mono(tmp_path, "mono", ["a b c", "b c d", "c d e"])
    binarize.main(["--destdir", str(tmp_path / "bin"), "--langs", "en,fr", "--mono-train",
                   text + ".{lang}", "--mono-valid", text + ".{lang}",
                   "--subword-model", str(codes), "--workers", "1"])
    binarize.main(["--destdir", str(tmp_path / "bin"), "--langs", "en,fr", "--dict",
                   str(tmp_path / "bin" / "dict.txt"), "--subword-model", str(codes),
                   "--pair", "en-fr", "--valid", text, "--workers", "1"])
    return tmp_path / "bin"


def test_mass_binarize_refuses_to_mix_two_dictionaries_in_one_directory(tmp_path, data_bin):
    record = json.loads((data_bin / "made_with.json").read_text())
    assert set(record) == {"train.en", "train.fr", "valid.en", "valid.fr",
                           "valid.en-fr.en", "valid.en-fr.fr"}
    dictionary = (data_bin / "dict.txt").read_text()
    other = mono(tmp_path, "other", ["x y z", "y z w"])  # a new text: a new dictionary
    with pytest.raises(InputError) as refused:
        binarize.main(["--destdir", str(data_bin), "--langs", "en,fr", "--mono-train",
                       other + ".{lang}", "--mono-valid", other + ".{lang}", "--workers", "1"])
    error = str(refused.value)
    assert "valid.en-fr.en, valid.en-fr.fr (" in error, error
    assert f"({dictionary.count(chr(10))} symbols, md5 " in error and "Delete those" in error
    assert (data_bin / "dict.txt").read_text() == dictionary  # nothing written
    # the same dictionary, other subwords: refused as well
    codes = tmp_path / "other.codes"
    codes.write_text("#version: 0.2\nx y\n")
    same_dict = ["--destdir", str(data_bin), "--langs", "en,fr", "--dict",
                 str(data_bin / "dict.txt"), "--pair", "en-fr", "--workers", "1"]
    with pytest.raises(InputError, match="subwords other.codes md5 "):
        binarize.main([*same_dict, "--subword-model", str(codes), "--test", other])
    # the files it replaces do not count: the same run again is fine
    binarize.main([*same_dict, "--subword-model", str(tmp_path / "bpe.codes"),
                   "--valid", str(tmp_path / "mono")])


@pytest.mark.slow
def test_the_recipes_check_names_a_file_read_with_another_dictionary(data_bin):
    data_bin_record.check(str(data_bin))
    # dict.fr.txt rewritten by hand (another tool): the French side of the
    # pairs is read with it, the monolingual files with dict.txt
    (data_bin / "dict.fr.txt").write_text("x 5\ny 4\n")
    with pytest.raises(InputError) as refused:
        data_bin_record.check(str(data_bin))
    error = str(refused.value)
    assert "valid.en-fr.fr (" in error and "dict.fr.txt: 2 symbols" in error
    assert "valid.en-fr.en" not in error and "train.fr" not in error
    data_bin_record.check(str(data_bin), ["train."])  # a recipe's own files only
    # the command: one line on stderr, exit status 1
    proc = subprocess.run(["python", "-m", "mass_tools.data_bin_record", str(data_bin)],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.startswith("error: ") and "\n" == proc.stderr[-1]
    assert proc.stderr.count("\n") == 1
    os.remove(data_bin / "dict.fr.txt")  # then fairseq reads dict.txt: as made
    data_bin_record.check(str(data_bin))
