"""data-prep/induce_lexicon.py and data-prep/translate_words.py: a word
lexicon from two monolingual corpora, and word-by-word translation with it."""

import collections
import re
import subprocess
import sys

import pytest

from conftest import REPO, write

PREP = REPO / "data-prep"
DATA = REPO / "examples" / "data"
sys.path.insert(0, str(PREP))
from induce_lexicon import tokenized  # noqa: E402


def prep(script, *args, stdin=None, check=True):
    proc = subprocess.run([sys.executable, str(PREP / script), *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr[-3000:])
    return proc


def cipher(word):
    """A spelling no English word has."""
    return "q" + word[::-1] + "q"


@pytest.fixture(scope="module")
def ciphered(tmp_path_factory):
    """The bundled English text, and a 'second language': the same text with
    its 40 most frequent words (of 4 letters or more) spelt otherwise."""
    root = tmp_path_factory.mktemp("lexicon")
    lines = (DATA / "mono.en").read_text(encoding="utf-8").splitlines()
    counts = collections.Counter(w for line in lines for w in re.findall(r"[a-z]+", line.lower())
                                 if len(w) >= 4)
    secret = {w: cipher(w) for w, _ in counts.most_common(40)}
    pattern = re.compile(r"\b(" + "|".join(secret) + r")\b", re.IGNORECASE)
    write(root / "en.txt", lines)
    write(root / "xx.txt", [pattern.sub(lambda m: secret[m.group(1).lower()], line)
                            for line in lines])
    out = prep("induce_lexicon.py", "--src", root / "en.txt", "--src-lang", "en",
               "--tgt", root / "xx.txt", "--tgt-lang", "en", "--output", root / "lexicon.tsv",
               "--dim", "50", "--epochs", "5", "--max-vocab", "2000", "--csls-vocab", "2000",
               "--iterations", "3", "--restarts", "1")
    return root, secret, out.stderr


def test_induced_lexicon_recovers_words_that_are_spelt_differently(ciphered):
    root, secret, log = ciphered
    rows = [line.split("\t") for line in (root / "lexicon.tsv").read_text().splitlines()]
    assert all(len(row) == 3 and -2 <= float(row[2]) <= 2 for row in rows)
    lexicon = {source: target for source, target, _ in rows}
    # the seed held none of them: only words spelt alike
    recovered = [w for w in secret if lexicon.get(w) == secret[w]]
    assert len(recovered) >= 30, f"{len(recovered)} of 40 recovered: {recovered}"
    # and the words both spell alike mostly map to themselves
    alike = [s for s, t in lexicon.items() if s not in secret]
    assert sum(lexicon[s] == s for s in alike) >= 0.8 * len(alike)
    assert "spelt alike (the seed dictionary)" in log and "iteration 3:" in log
    assert all(re.search(r"[^\W\d_]", s) and re.search(r"[^\W\d_]", t) for s, t, _ in rows)


def test_restarts_keep_the_lexicon_with_the_highest_selection_score(ciphered):
    root = ciphered[0]
    small = ["--src", root / "en.txt", "--src-lang", "en", "--tgt", root / "xx.txt",
             "--tgt-lang", "en", "--dim", "50", "--epochs", "2", "--max-vocab", "1000",
             "--csls-vocab", "1000", "--iterations", "1", "--select-words", "200"]
    log = prep("induce_lexicon.py", *small, "--restarts", "3", "--seed", "5",
               "--output", root / "kept.tsv").stderr
    scores = {int(seed): float(score) for seed, score in re.findall(
        r"seed (\d+): \d+ pairs, mean CSLS score of the first 200: ([-\d.]+)", log)}
    assert sorted(scores) == [5, 6, 7]
    best = max(scores, key=scores.get)
    assert f"kept seed {best} (the highest mean CSLS score)" in log
    # the kept file is the lexicon that seed makes alone, and its score is the mean of its
    # first 200 pairs
    prep("induce_lexicon.py", *small, "--seed", best, "--restarts", "1",
         "--output", root / "alone.tsv")
    kept = (root / "kept.tsv").read_text()
    assert kept == (root / "alone.tsv").read_text()
    first = [float(line.split("\t")[2]) for line in kept.splitlines()[:200]]
    assert sum(first) / 200 == pytest.approx(scores[best], abs=1e-3)
    others = [s for s in scores if s != best]
    prep("induce_lexicon.py", *small, "--seed", others[0], "--restarts", "1",
         "--output", root / "other.tsv")
    assert (root / "other.tsv").read_text() != kept  # the seeds do make other lexicons


def test_vectors_are_learnt_on_the_tokens_translation_looks_up(tmp_path):
    """Tokenized before lower-casing: "file." inside a line is "file" and ".",
    as translate_words.py splits it, not one token no lookup ever asks for."""
    write(tmp_path / "en.txt", ["Open the File. Then close it.", "", "Save it."])
    assert tokenized(tmp_path / "en.txt", "en") == [
        ["open", "the", "file", ".", "then", "close", "it", "."], ["save", "it", "."]]


def test_too_little_text_is_refused_with_the_option_to_change(tmp_path):
    write(tmp_path / "a.txt", ["one two three"] * 5)
    proc = prep("induce_lexicon.py", "--src", tmp_path / "a.txt", "--src-lang", "en",
                "--tgt", tmp_path / "a.txt", "--tgt-lang", "fr", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "a.txt: only 3 words occur --min-count 3 times or more" in proc.stderr
    proc = prep("induce_lexicon.py", "--src", tmp_path / "a.txt", "--src-lang", "en",
                "--tgt", tmp_path / "a.txt", "--tgt-lang", "fr", "--restarts", "0", check=False)
    assert proc.returncode == 1 and "--restarts 0: give 1 or more" in proc.stderr


@pytest.fixture
def lexicon(tmp_path):
    path = tmp_path / "lexicon.tsv"
    write(path, ["the\tle\t0.50", "file\tfichier\t0.40", "open\touvrir\t0.10",
                 "(\t)\t0.30", "times\tfois\t0.35"])
    return path


def test_words_are_translated_with_their_case_and_the_rest_is_copied(lexicon):
    out = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en",
               "--tgt-lang", "fr", stdin="Open THE file (notes.txt) 3 times.\n\nUnknown words\n")
    # "(" is not translated (no letter); "notes.txt" and "Unknown" are not in the lexicon
    assert out.stdout.splitlines() == ["Ouvrir LE fichier (notes.txt) 3 fois.", "",
                                       "Unknown words"]
    back = prep("translate_words.py", "--lexicon", lexicon, "--reverse", "--src-lang", "fr",
                "--tgt-lang", "en", stdin="Ouvrir le fichier.\n")
    assert back.stdout == "Open the file.\n"
    confident = prep("translate_words.py", "--lexicon", lexicon, "--min-score", "0.2",
                     "--src-lang", "en", "--tgt-lang", "fr", stdin="open the file\n")
    assert confident.stdout == "open le fichier\n"


def test_a_missing_or_malformed_lexicon_is_named(tmp_path, lexicon):
    missing = prep("translate_words.py", "--lexicon", tmp_path / "none.tsv", "--src-lang",
                   "en", "--tgt-lang", "fr", stdin="x\n", check=False)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "none.tsv: no such file" in missing.stderr and "induce_lexicon.py" in missing.stderr
    bad = tmp_path / "bad.tsv"
    write(bad, ["the\tle\t0.5", "lonely"])
    proc = prep("translate_words.py", "--lexicon", bad, "--src-lang", "en", "--tgt-lang",
                "fr", stdin="x\n", check=False)
    assert proc.returncode == 1 and "bad.tsv, line 2: expected source<TAB>target" in proc.stderr
