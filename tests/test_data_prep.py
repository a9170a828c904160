"""mass_tools' data preparation: tokenisation, joint subwords, one-dictionary
binarization, in-domain selection."""

import subprocess

import pytest
import sentencepiece as spm
from fairseq.data import Dictionary

from conftest import REPO, cli_env, make_task, write

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

DATA = REPO / "examples" / "data"


def prep(script, *args, stdin=None, check=True):
    """Run ``python -m mass_tools.NAME`` for ``script`` NAME.py."""
    module = f"mass_tools.{script.removesuffix('.py')}"
    proc = subprocess.run(["python", "-m", module, *map(str, args)], env=cli_env(),
                          input=stdin, capture_output=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr.decode()[-3000:])
    return proc


def test_moses_tokenisation_reads_stdin_and_keeps_empty_lines():
    out = prep("tokenize_moses.py", "--lang", "fr",
               stdin="L'homme n'est pas là, dit-il.\n\nOui!\n".encode())
    assert out.stdout.decode().splitlines() == [
        "L' homme n' est pas là , dit-il .", "", "Oui !"]


def test_non_utf8_input_names_the_line_and_leaves_no_output(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes("fine\n".encode() + b"caf\xe9 latin-1\n")
    out_file = tmp_path / "out.txt"
    proc = prep("tokenize_moses.py", "--lang", "fr", "--input", bad, "--output", out_file,
                check=False)
    assert proc.returncode == 1
    message = proc.stderr.decode()
    assert "bad.txt, line 2: not valid UTF-8" in message and "--encoding-errors" in message
    assert "Traceback" not in message
    assert not out_file.exists() and list(tmp_path.iterdir()) == [bad]
    prep("tokenize_moses.py", "--lang", "fr", "--input", bad, "--output", out_file,
         "--encoding-errors", "replace")
    assert "\ufffd" in out_file.read_text().splitlines()[1]


@pytest.fixture(scope="module")
def subword_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("subwords")
    for lang in ("en", "fr"):
        lines = (DATA / f"mono.{lang}").read_text().splitlines()[:800]
        write(root / f"mono.{lang}", lines)
    prep("learn_subwords.py", "--method", "sentencepiece", "--vocab-size", "600",
         "--output", root / "spm", root / "mono.en", root / "mono.fr")
    prep("learn_subwords.py", "--method", "sentencepiece", "--vocab-size", "600",
         "--symbols", "¤", "--output", root / "spm-symbols", root / "mono.en", root / "mono.fr")
    prep("learn_subwords.py", "--method", "bpe", "--vocab-size", "300",
         "--output", root / "bpe", root / "mono.en", root / "mono.fr")
    return root


def test_symbols_are_pieces_of_their_own_where_the_text_never_has_them(subword_models):
    root = subword_models
    assert not any("¤" in (root / f"mono.{lang}").read_text() for lang in ("en", "fr"))
    plain, symbols = (spm.SentencePieceProcessor(model_file=str(root / f"{name}.model"))
                      for name in ("spm", "spm-symbols"))
    assert plain.unk_id() in plain.encode("la ¤ fichier")
    pieces = symbols.encode("la ¤ fichier¤", out_type=str)
    assert pieces.count("¤") == 2 and symbols.unk_id() not in symbols.encode("la ¤ fichier")
    assert symbols.decode(pieces) == "la ¤ fichier¤"


def test_one_joint_sentencepiece_model_covers_both_languages(subword_models):
    root = subword_models
    model = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    assert model.get_piece_size() == 600
    for lang in ("en", "fr"):
        out = prep("apply_subwords.py", "--model", root / "spm.model",
                   "--input", root / f"mono.{lang}").stdout.decode().splitlines()
        original = (root / f"mono.{lang}").read_text().splitlines()
        assert len(out) == len(original)
        assert model.decode(out[0].split()) == original[0]
        assert model.unk_id() not in model.encode(original[:50], out_type=int)[0]


def test_bpe_codes_are_applied_with_subword_nmt(subword_models):
    root = subword_models
    assert len((root / "bpe.codes").read_text().splitlines()) > 100
    out = prep("apply_subwords.py", "--model", root / "bpe.codes",
               stdin="Choisissez Format - Cellules\n".encode()).stdout.decode()
    assert out.replace("@@ ", "").strip() == "Choisissez Format - Cellules"


def test_binarized_layout_is_read_by_masked_s2s_and_translation(tmp_path, subword_models):
    root = subword_models
    for name in ("mono.en", "mono.fr", "mono.valid.en", "mono.valid.fr",
                 "train.en", "train.fr", "valid.en", "valid.fr"):
        lines = (DATA / name).read_text().splitlines()[:200]
        write(tmp_path / name, lines)
        prep("apply_subwords.py", "--model", root / "spm.model", "--input", tmp_path / name,
             "--output", tmp_path / f"spm.{name}")
    dest = tmp_path / "data-bin"
    prep("binarize.py", "--destdir", dest, "--langs", "en,fr",
         "--mono-train", tmp_path / "spm.mono.{lang}",
         "--mono-valid", tmp_path / "spm.mono.valid.{lang}",
         "--pair", "en-fr", "--train", tmp_path / "spm.train", "--valid", tmp_path / "spm.valid",
         "--workers", "1")
    for name in ("dict.txt", "dict.en.txt", "dict.fr.txt", "train.en.bin", "train.fr.idx",
                 "valid.fr.bin", "train.en-fr.en.bin", "valid.en-fr.fr.idx"):
        assert (dest / name).exists(), name
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]  # no leftovers
    dictionaries = [Dictionary.load(str(dest / n)) for n in ("dict.txt", "dict.en.txt",
                                                              "dict.fr.txt")]
    assert dictionaries[0].indices == dictionaries[1].indices == dictionaries[2].indices

    task = make_task(dest, langs="en,fr")
    task.load_dataset("train")
    assert len(task.dataset("train")) == 400  # 200 English + 200 French sentences
    task.load_dataset("valid.fr")  # one language's validation set, by name
    assert len(task.dataset("valid.fr")) == 200
    with pytest.raises(FileNotFoundError, match="de"):
        make_task(dest, langs="en,de").load_dataset("train")


def test_binarize_says_which_input_is_missing(tmp_path):
    proc = prep("binarize.py", "--destdir", tmp_path / "out", "--langs", "en,fr",
                "--mono-train", tmp_path / "nothing.{lang}", check=False)
    assert proc.returncode == 1
    assert "nothing.en: no such file" in proc.stderr.decode()


def test_binarize_names_a_dictionary_fairseq_cannot_read(tmp_path):
    for lang in ("en", "fr"):
        (tmp_path / f"valid.{lang}").write_text("a b c\n")
    (tmp_path / "dict.txt").write_text("a b c d\n")  # not "<token> <count>"
    proc = prep("binarize.py", "--destdir", tmp_path / "out", "--langs", "en,fr",
                "--pair", "en-fr", "--valid", tmp_path / "valid",
                "--dict", tmp_path / "dict.txt", check=False)
    assert proc.returncode == 1
    error = proc.stderr.decode()
    assert "fairseq-preprocess" in error and str(tmp_path / "dict.txt") in error
    assert "Incorrect dictionary format" in error and "Traceback" not in error
    assert not (tmp_path / "out" / "dict.txt").exists()  # nothing looks finished


def test_news_crawl_processing_filters_dedupes_and_holds_out_validation(tmp_path):
    import gzip

    raw = tmp_path / "wmt" / "raw"
    raw.mkdir(parents=True)
    lines = ["one two", "a b c d", "a  b c d ", "x " * 200] + [f"w{i} w w" for i in range(20)]
    with gzip.open(raw / "news.2019.fr.shuffled.deduped.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    prep("fetch_wmt.py", "--langs", "fr", "--outdir", tmp_path / "wmt", "--skip-download",
         "--max-lines", "10", "--valid-lines", "3")
    valid = (tmp_path / "wmt" / "mono.valid.fr").read_text().splitlines()
    train = (tmp_path / "wmt" / "mono.fr").read_text().splitlines()
    # too short, duplicate (after whitespace clean-up) and too long lines go
    assert valid == ["a b c d", "w0 w w", "w1 w w"]
    assert train == [f"w{i} w w" for i in range(2, 12)]


def test_news_crawl_processing_without_the_download_says_so(tmp_path):
    proc = prep("fetch_wmt.py", "--langs", "de", "--outdir", tmp_path, "--skip-download",
                check=False)
    assert proc.returncode == 1
    assert "run without --skip-download" in proc.stderr.decode()


def test_in_domain_selection_keeps_the_lines_an_in_domain_sample_prefers(tmp_path):
    in_domain = ["Choose Tools - Options to change the settings of the document.",
                 "Click the button in the dialog to open the file."] * 20
    candidates = ["Click Tools - Options in the dialog.",
                  "lol see you at the party tonight",
                  "Open the file in the dialog.",
                  "my cat ate my homework again",
                  ""]
    write(tmp_path / "doc.txt", in_domain)
    write(tmp_path / "web.txt", candidates)
    out = prep("select_in_domain.py", "--in-domain", tmp_path / "doc.txt",
               "--candidates", tmp_path / "web.txt")
    assert out.stdout.decode().splitlines() == [candidates[0], candidates[2]]
    assert "kept 2 of 5 lines" in out.stderr.decode()
    # a higher threshold keeps more, in input order
    out = prep("select_in_domain.py", "--in-domain", tmp_path / "doc.txt",
               "--candidates", tmp_path / "web.txt", "--threshold", "100")
    assert out.stdout.decode().splitlines() == candidates[:4]  # an empty line is never kept


def test_in_domain_selection_refuses_an_empty_sample(tmp_path):
    write(tmp_path / "doc.txt", [])
    write(tmp_path / "web.txt", ["some text"])
    out = prep("select_in_domain.py", "--in-domain", tmp_path / "doc.txt",
               "--candidates", tmp_path / "web.txt", check=False)
    assert out.returncode == 1 and b"has no words" in out.stderr
