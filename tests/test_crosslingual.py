"""The cross-lingual projects (projects/crosslingual): the retrieval probe and
mined pairs, on a 1-update cross-lingual MASS checkpoint."""

import json

import pytest

from conftest import REPO, cross_lingual_mass_checkpoint, run_cli, unsup_data, write

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return unsup_data(tmp_path_factory.mktemp("crosslingual"))


def test_retrieval_probe_finds_translations_by_position_and_checks_its_inputs(data, tmp_path):
    """projects/crosslingual/retrieval.py on a 1-update cross-lingual checkpoint.
    Both sides hold the same text: in the same order every sentence retrieves
    its own line; in reversed order it retrieves its twin at the mirrored
    line, so precision at 1 is 0 (an even number of unique lines)."""
    lines = list(dict.fromkeys((data / "valid.en").read_text().splitlines()))[:16]
    assert len(lines) == 16
    for lang in ("en", "fr"):
        write(tmp_path / f"same.{lang}", lines)
    write(tmp_path / "rev.en", lines)
    write(tmp_path / "rev.fr", lines[::-1])
    run_cli(["python", "-m", "mass_tools.binarize", "--destdir", tmp_path / "bin",
             "--langs", "en,fr", "--dict", data / "bin/dict.txt", "--pair", "en-fr",
             "--valid", tmp_path / "same", "--test", tmp_path / "rev"], cwd=REPO)
    cross_lingual_mass_checkpoint(data, tmp_path / "mass", updates=1)
    probe = ["python", "-m", "projects.crosslingual.retrieval", tmp_path / "bin",
             "--path", tmp_path / "mass/checkpoint_last.pt", "--langs", "en,fr", "--json"]

    def scores(subset):
        out = run_cli(probe + ["--subset", subset], cwd=REPO)
        return json.loads(out.stdout.strip().splitlines()[-1])

    same, rev = scores("valid"), scores("test")
    assert same["sentences"] == rev["sentences"] == 16 and same["chance"] == 1 / 16
    for direction in ("en->fr", "fr->en"):
        assert same[f"{direction} centred"] >= 0.9, same
        assert rev[f"{direction} centred"] == 0.0, rev
    missing = run_cli(probe + ["--subset", "train"], cwd=REPO, check=False)
    assert missing.returncode != 0 and "train.en-fr.en.idx: no such file" in missing.stderr
    wrong = run_cli(probe[:-3] + ["--langs", "en,de"], cwd=REPO, check=False)
    assert wrong.returncode != 0 and "en-de" in wrong.stderr


def test_mining_pairs_each_sentence_with_its_twin_in_the_other_corpus(data, tmp_path):
    """projects/crosslingual/mine_pairs.py on a 1-update checkpoint: the French corpus is
    the English one in another order, so every mutual best pair by margin
    must be a line and its twin, whatever their positions."""
    lines = list(dict.fromkeys((data / "valid.en").read_text().splitlines()))[:16]
    order = [(7 * i + 3) % 16 for i in range(16)]
    write(tmp_path / "mono.en", lines)
    write(tmp_path / "mono.fr", [lines[i] for i in order])
    run_cli(["python", "-m", "mass_tools.binarize", "--destdir", tmp_path / "bin",
             "--langs", "en,fr", "--dict", data / "bin/dict.txt",
             "--mono-train", tmp_path / "mono.{lang}"], cwd=REPO)
    cross_lingual_mass_checkpoint(data, tmp_path / "mass", updates=1)
    mine = ["python", "-m", "projects.crosslingual.mine_pairs", tmp_path / "bin",
            "--path", tmp_path / "mass/checkpoint_last.pt", "--out", tmp_path / "mined/train"]
    run_cli(mine, cwd=REPO)
    en = (tmp_path / "mined/train.en").read_text().splitlines()
    fr = (tmp_path / "mined/train.fr").read_text().splitlines()
    table = [row.split("\t") for row in (tmp_path / "mined/train.tsv").read_text().splitlines()]
    assert table[0] == ["margin", "en_line", "fr_line"]
    assert len(en) == len(fr) == len(table) - 1 >= 14
    assert en == fr
    for margin, i, j in table[1:]:
        assert order[int(j) - 1] == int(i) - 1 and float(margin) >= 1.0
    margins = [float(row[0]) for row in table[1:]]
    assert margins == sorted(margins, reverse=True)
    run_cli(mine + ["--max-pairs", "5"], cwd=REPO)
    assert len((tmp_path / "mined/train.en").read_text().splitlines()) == 5
    missing = run_cli(mine + ["--subset", "valid"], cwd=REPO, check=False)
    assert missing.returncode != 0 and "valid.en.idx: no such file" in missing.stderr
