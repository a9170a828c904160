"""mass_tools/output_stats.py: the language and repetition shares of a file of
outputs, on lines whose answer is known."""

import json
import subprocess

import pytest

from conftest import REPO, cli_env
from mass_tools import output_stats

LINES = [
    "Cliquez sur le bouton et choisissez une couleur dans la liste.",  # French
    "Click the button and choose a colour from the list.",  # English
    "Ctrl+Shift+F10",  # no function word
    "Le style de la page. Le style de la page. Le style de la page.",  # French, repeats
    "The the and le",  # English: three English function words, one French
]


def test_each_line_gets_the_language_of_its_function_words():
    tokenized = [output_stats.words(line) for line in LINES]
    assert [output_stats.line_language(t) for t in tokenized] == [
        "fr", "en", "none", "fr", "en"]
    assert output_stats.line_language(["la", "the"]) == "tie"
    # 13a tokenisation: punctuation is split off, case is ignored
    assert output_stats.words("The list.") == ["the", "list", "."]


def test_repetition_is_a_bigram_three_times():
    assert output_stats.repeats("a b a b a b".split())
    assert not output_stats.repeats("a b a b c d".split())
    assert not output_stats.repeats(["one"])


@pytest.mark.slow
def test_shares_of_a_file_from_the_command_line(tmp_path):
    path = tmp_path / "hyp.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    proc = subprocess.run(["python", "-m", "mass_tools.output_stats", str(path), "--json"],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["lines"] == 5
    assert result["french_share"] == 0.4
    assert result["english_share"] == 0.4
    assert result["no_function_words"] == 0.2
    assert result["repeating"] == 0.2
