"""The word tools of projects/unsupervised: a word lexicon from two monolingual
corpora (induce_lexicon), word-by-word translation with it (translate_words),
and what the repair rounds make of it (rounds.py: round-trip pairs, shuffled
and thinned copies, the placeholders restored)."""

import collections
import random
import re
import subprocess
from types import SimpleNamespace

import pytest

from conftest import REPO, write
from mass_tools.textio import InputError
from projects.unsupervised import rounds
from projects.unsupervised.induce_lexicon import tokenized

DATA = REPO / "examples" / "data"


def prep(script, *args, stdin=None, check=True):
    """Run ``python -m projects.unsupervised.NAME`` for ``script`` NAME.py."""
    module = f"projects.unsupervised.{script.removesuffix('.py')}"
    proc = subprocess.run(["python", "-m", module, *map(str, args)], cwd=REPO,
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_one_way_lexicons_give_every_word_its_nearest_neighbour(ciphered):
    root = ciphered[0]
    small = ["--src", root / "en.txt", "--src-lang", "en", "--tgt", root / "xx.txt",
             "--dim", "50", "--epochs", "2", "--max-vocab", "1000", "--csls-vocab", "1000",
             "--iterations", "1", "--restarts", "1", "--output", root / "mutual.tsv"]
    prep("induce_lexicon.py", *small, "--tgt-lang", "fr", "--one-way", root / "one",
         "--candidates", "3")
    mutual = [tuple(line.split("\t")[:2]) for line in
              (root / "mutual.tsv").read_text().splitlines()]
    for direction, flip in (("en-fr", False), ("fr-en", True)):
        rows = [line.split("\t") for line in
                (root / f"one.{direction}.tsv").read_text().splitlines()]
        words = [row[0] for row in rows]
        assert len(words) == len(set(words))  # each word once, in the first column
        pairs = {(row[1], row[0]) if flip else (row[0], row[1]) for row in rows}
        assert set(mutual) <= pairs  # the mutual pairs are each side's nearest neighbours
        assert len(rows) > len(mutual)  # and the one-way files translate more words
        check_candidates(rows, root / f"one.{direction}.candidates.tsv", 3)
    proc = prep("induce_lexicon.py", *small, "--tgt-lang", "en", "--one-way", root / "one",
                check=False)
    assert proc.returncode != 0 and "--one-way names its files by language" in proc.stderr
    proc = prep("induce_lexicon.py", *small[:-2], "--output", root / "one.en-fr.tsv",
                "--tgt-lang", "fr", "--one-way", root / "one", check=False)
    assert proc.returncode != 0 and "is also a file of --one-way" in proc.stderr
    proc = prep("induce_lexicon.py", *small, "--tgt-lang", "fr", "--candidates", "3",
                check=False)
    assert proc.returncode != 0 and "with --one-way PREFIX" in proc.stderr


def check_candidates(one_way, path, k):
    """Each word of the one-way lexicon, in its order, with at most k
    candidates, its nearest neighbour first, scores falling."""
    candidates = collections.defaultdict(list)
    for line in path.read_text().splitlines():
        word, target, score = line.split("\t")
        candidates[word].append((target, float(score)))
    assert list(candidates) == [row[0] for row in one_way]
    for word, target, score in one_way:
        assert candidates[word][0] == (target, float(score))
        assert 1 <= len(candidates[word]) <= k
        scores = [s for _, s in candidates[word]]
        assert scores == sorted(scores, reverse=True)
    assert sum(len(c) > 1 for c in candidates.values()) > len(candidates) / 4


def test_vectors_are_learnt_on_the_tokens_translation_looks_up(tmp_path):
    """Tokenized before lower-casing: "file." inside a line is "file" and ".",
    as translate_words.py splits it, not one token no lookup ever asks for."""
    write(tmp_path / "en.txt", ["Open the File. Then close it.", "", "Save it."])
    assert tokenized(tmp_path / "en.txt", "en") == [
        ["open", "the", "file", ".", "then", "close", "it", "."], ["save", "it", "."]]


@pytest.mark.slow
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
                 "(\t)\t0.30", "times\tfois\t0.35", "libreoffice\tlibreoffice\t0.60"])
    return path


@pytest.mark.slow
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
    # a word that translates to itself keeps its spelling, inner capitals too
    same = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en",
                "--tgt-lang", "fr", stdin="the LibreOffice file\n")
    assert same.stdout == "le LibreOffice fichier\n"


@pytest.mark.slow
def test_sampled_translations_follow_the_candidates_scores(tmp_path, lexicon):
    """--sample draws each frequent word's translation from its candidates;
    the words --lexicon (at --min-score) lacks stay placeholders."""
    candidates = tmp_path / "candidates.tsv"
    # "the" first (the most frequent), then "file"; "open" is below --min-score 0.2
    write(candidates, ["the\tle\t0.50", "the\tla\t0.40", "the\tles\t0.20",
                       "file\tfichier\t0.40", "file\tdossier\t0.38",
                       "open\touvrir\t0.10", "open\tfichier\t0.05"])
    text = "\n".join(["Open the file"] * 300) + "\n"

    def sample(*extra):
        out = prep("translate_words.py", "--lexicon", lexicon, "--min-score", "0.2",
                   "--src-lang", "en", "--tgt-lang", "fr", "--sample", candidates,
                   "--temperature", "0.1", *extra, stdin=text).stdout.splitlines()
        return collections.Counter(" ".join(line.split()[1:]) for line in out), out

    counts, out = sample()
    assert {line.split()[0] for line in out} == {"Open"}  # unknown at --min-score: copied
    articles = collections.Counter(key.split()[0] for key in counts.elements())
    # exp(score / 0.1): 0.67, 0.24 and 0.09 of the 300 lines
    assert 170 < articles["le"] < 230 and 45 < articles["la"] < 100 and 10 < articles["les"] < 45
    files = collections.Counter(key.split()[1] for key in counts.elements())
    assert 100 < files["dossier"] < 200 and files["fichier"] + files["dossier"] == 300
    assert sample()[1] == out and sample("--seed", "2")[1] != out  # the seed decides
    # --sample-words 1: only "the", the first word of the file, is drawn
    counts = sample("--sample-words", "1")[0]
    assert {key.split()[1] for key in counts} == {"fichier"} and len(counts) == 3
    proc = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en", "--tgt-lang",
                "fr", "--sample", tmp_path / "none.tsv", stdin="x\n", check=False)
    assert proc.returncode == 1 and "induce_lexicon.py --one-way PREFIX --candidates" in proc.stderr
    write(candidates, ["the\tle"])
    proc = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en", "--tgt-lang",
                "fr", "--sample", candidates, stdin="x\n", check=False)
    assert proc.returncode == 1 and "line 1: expected word<TAB>candidate<TAB>score" in proc.stderr
    proc = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en", "--tgt-lang",
                "fr", "--sample", candidates, "--temperature", "0", stdin="x\n", check=False)
    assert proc.returncode == 2 and "a temperature above 0" in proc.stderr


@pytest.mark.slow
def test_placeholders_stand_for_unknown_words_and_are_restored_in_order(tmp_path, lexicon):
    source = tmp_path / "in.en"
    write(source, ["Open the notes file ~ now.", "", "the file"])
    prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en", "--tgt-lang", "fr",
         "--input", source, "--output", tmp_path / "words.fr", "--placeholder", "~",
         "--masked", tmp_path / "masked")
    words = (tmp_path / "words.fr").read_text().splitlines()
    # the text's own "~" is masked too, so every placeholder has its word
    # one placeholder for each run of unknown words ("~ now")
    assert words == ["Ouvrir le ~ fichier ~.", "", "le fichier"]
    assert (tmp_path / "masked").read_text().splitlines() == ["notes\t~ now", "", ""]
    # a repair model moved one placeholder and kept both; line 3 got one it had none of
    write(tmp_path / "repaired", ["Ouvrir le fichier ~ ~.", "", "le ~ fichier"])
    write(tmp_path / "fallback", ["F1", "", "F3"])
    said = rounds.restore_all(tmp_path / "repaired", tmp_path / "masked", tmp_path / "fallback",
                              1, tmp_path / "out")
    assert (tmp_path / "out").read_text().splitlines() == [
        "Ouvrir le fichier notes ~ now.", "", "F3"]
    assert said == ["1 of 3 lines fell back to --fallback"]
    write(tmp_path / "short", ["x"])
    with pytest.raises(InputError, match="do not hold the same text"):
        rounds.restore_all(tmp_path / "short", tmp_path / "masked", tmp_path / "fallback", 1,
                           tmp_path / "out")
    proc = prep("translate_words.py", "--lexicon", lexicon, "--src-lang", "en", "--tgt-lang",
                "fr", "--placeholder", "~", stdin="x\n", check=False)
    assert proc.returncode == 2 and "--placeholder and --masked go together" in proc.stderr


def test_restoring_from_an_n_best_list_takes_the_first_hypothesis_that_kept_the_placeholders(
        tmp_path):
    write(tmp_path / "masked", ["notes", "", "a\tb"])
    write(tmp_path / "fallback", ["F1", "F2", "F3"])
    # two hypotheses a line, best first: line 1's best lost its placeholder, line 3's both did
    write(tmp_path / "nbest", ["Ouvrir le fichier.", "Ouvrir le ~ fichier.", "le fichier",
                               "le ~ fichier", "x", "y ~"])
    said = rounds.restore_all(tmp_path / "nbest", tmp_path / "masked", tmp_path / "fallback",
                              2, tmp_path / "out")
    assert (tmp_path / "out").read_text().splitlines() == [
        "Ouvrir le notes fichier.", "le fichier", "F3"]
    assert said == ["1 of 3 lines fell back to --fallback",
                    "1 lines took a hypothesis after the first"]
    with pytest.raises(InputError, match="do not hold the same text"):
        rounds.restore_all(tmp_path / "nbest", tmp_path / "masked", tmp_path / "fallback", 1,
                           tmp_path / "out")


def test_pairs_from_a_translation_there_and_back_keep_lines_whose_placeholders_match(
        tmp_path, capsys):
    write(tmp_path / "one.en-fr.tsv", ["the\tle\t0.5", "file\tfichier\t0.4",
                                       "open\touvrir\t0.05"])
    write(tmp_path / "one.fr-en.tsv", ["le\tthe\t0.5", "fichier\tfile\t0.4"])
    s = SimpleNamespace(lexicon=tmp_path / "one", l1="en", l2="fr", min_score_l1_l2="0",
                        min_score_l2_l1="0")
    write(tmp_path / "mono.en", ["Open the notes file.", "the file", "", "notes on the file",
                                 "the file"])
    # what a model's French came back as: line 2 gained a placeholder, line 5 is empty
    write(tmp_path / "back.en", ["Open those ~ of file.", "the ~ file", "", "~ of the file",
                                 ""])
    rounds.round_trip_pairs(s, "en", tmp_path / "mono.en", tmp_path / "back.en", tmp_path / "a")
    assert (tmp_path / "a.nen").read_text().splitlines() == ["Open those ~ of file.",
                                                             "~ of the file"]
    # the clean side: one placeholder for each run of words the lexicon lacks ("notes on")
    assert (tmp_path / "a.en").read_text().splitlines() == ["Open the ~ file.", "~ the file"]
    assert "2 of 5 lines kept" in capsys.readouterr().err
    # the --min-score of the way out masks what word by word left out: "Open" too
    s.min_score_l1_l2 = "0.1"
    rounds.round_trip_pairs(s, "en", tmp_path / "mono.en", tmp_path / "back.en", tmp_path / "b")
    assert (tmp_path / "b.en").read_text().splitlines() == ["~ the file"]
    # French text is masked with the French one-way lexicon
    write(tmp_path / "mono.fr", ["le fichier notes", "x", "", "fichier", "x"])
    write(tmp_path / "back.fr", ["the file ~", "x", "", "file", "~"])
    rounds.round_trip_pairs(s, "fr", tmp_path / "mono.fr", tmp_path / "back.fr", tmp_path / "f")
    assert (tmp_path / "f.fr").read_text().splitlines() == ["le fichier ~", "fichier", "~"]
    s.min_score_l1_l2 = "0"
    for lines, error in ((["x"], "has 5 lines, .* 1"),
                         (["~ and ~"] * 5, "no line has as many placeholders")):
        write(tmp_path / "other.en", lines)
        with pytest.raises(InputError, match=error):
            rounds.round_trip_pairs(s, "en", tmp_path / "mono.en", tmp_path / "other.en",
                                    tmp_path / "c")


def test_noised_copies_move_words_locally_drop_some_and_keep_the_line_beside_them(tmp_path):
    words = [f"w{i}" for i in range(30)]
    write(tmp_path / "mono.fr", [" ".join(words)] * 20 + ["", " ".join(words[:5])])
    rounds.noised_copies(tmp_path / "mono.fr", tmp_path / "a", "fr")
    noisy = (tmp_path / "a.nfr").read_text().splitlines()
    clean = (tmp_path / "a.fr").read_text().splitlines()
    assert len(noisy) == len(clean) == 21  # the empty line is skipped
    assert clean == [" ".join(words)] * 20 + [" ".join(words[:5])]
    dropped = 0
    for line in noisy[:20]:
        kept = line.split()
        dropped += 30 - len(kept)
        # a word moves by less than 3 positions: in order, kept words stay
        # within 3 of where they were, counting the dropped ones before them
        positions = [int(word[1:]) for word in kept]
        assert len(set(positions)) == len(positions)
        assert all(abs(b - a) < 3 or b > a for a, b in zip(positions, positions[1:]))
        assert all(positions[j] >= i - 2 for j, i in enumerate(range(len(kept))))
    assert noisy[:20] != [" ".join(words)] * 20, "nothing was shuffled"
    assert 0.03 < dropped / 600 < 0.2, dropped
    rounds.noised_copies(tmp_path / "mono.fr", tmp_path / "b", "fr")
    assert (tmp_path / "b.nfr").read_text() == (tmp_path / "a.nfr").read_text()
    rounds.noised_copies(tmp_path / "mono.fr", tmp_path / "c", "fr", seed=2)
    assert (tmp_path / "c.nfr").read_text() != (tmp_path / "a.nfr").read_text()
    # placeholders are never dropped
    assert rounds.noised(["~"] * 50, 3, 0.9, random.Random(1), {"~"}) == ["~"] * 50
