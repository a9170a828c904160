"""Downloads (mass_tools.download) over real HTTP from a local mirror: a
broken transfer is resumed with a Range request, a damaged file never gets
its name; the path from mass-fetch-wmt to examples/prepare_data.sh for
monolingual data with newstest sets only (no train.* pairs); sacrebleu's
failure in one line that says where it looked; the scripts' --help."""

import gzip
import hashlib
import subprocess

import pytest
from fairseq.data import Dictionary, data_utils
from mirror import demo_lines, news_crawl, sacrebleu_cache, serve, write_gz

from conftest import REPO, bash, cli_env
from mass_tools.download import download
from mass_tools.textio import InputError


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    write_gz(root / "big.gz", [f"line {i} of a file long enough to cut" for i in range(20000)])
    whole = gzip.compress("".join(f"{i * i} {i}\n" for i in range(5000)).encode())
    (root / "bad.gz").write_bytes(whole[:len(whole) // 2])  # served whole, but cut short
    with serve(root) as server:
        yield server


def test_a_broken_transfer_keeps_its_part_and_the_rerun_resumes_it(mirror, tmp_path):
    mirror.broken.add("/big.gz")
    target = tmp_path / "big.gz"
    with pytest.raises(InputError, match=r"got \d+ of \d+ bytes; what came is kept in .*part: "
                                         "run again to resume"):
        download(f"{mirror.url}/big.gz", str(target))
    part = tmp_path / "big.gz.part"
    assert not target.exists() and 0 < part.stat().st_size
    had = part.stat().st_size
    mirror.requests.clear()
    download(f"{mirror.url}/big.gz", str(target))
    assert mirror.requests == [("/big.gz", f"bytes={had}-")]  # only the rest was asked for
    assert target.read_bytes() == (mirror.root / "big.gz").read_bytes()
    assert not part.exists()
    mirror.requests.clear()
    download(f"{mirror.url}/big.gz", str(target))  # there already: nothing asked
    assert mirror.requests == []


@pytest.mark.slow
def test_a_damaged_gzip_is_set_aside_with_what_to_do(mirror, tmp_path):
    proc = subprocess.run(["python", "-m", "mass_tools.download", f"{mirror.url}/bad.gz",
                           str(tmp_path / "bad.gz")], capture_output=True, text=True,
                          env=cli_env())
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "bad.gz: the downloaded file is bad: not a complete gz file" in proc.stderr
    assert "delete it and run again" in proc.stderr
    assert not (tmp_path / "bad.gz").exists() and (tmp_path / "bad.gz.bad").exists()


def test_a_wrong_checksum_or_url_stops_with_the_reason(mirror, tmp_path):
    with pytest.raises(InputError, match="MD5 [0-9a-f]+ where 0123 is published"):
        download(f"{mirror.url}/big.gz", str(tmp_path / "a.gz"), md5="0123")
    with pytest.raises(InputError, match="answered 404.*check the URL"):
        download(f"{mirror.url}/news.1999.xx.gz", str(tmp_path / "b.gz"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gz.bad"]


def test_file_urls_work_too(mirror, tmp_path):
    source = mirror.root / "big.gz"
    download(source.as_uri(), str(tmp_path / "big.gz"),
             size=source.stat().st_size, md5=hashlib.md5(source.read_bytes()).hexdigest())
    assert (tmp_path / "big.gz").read_bytes() == source.read_bytes()


@pytest.mark.slow
def test_fetch_then_prepare_data_without_train_pairs(tmp_path):
    """From download to binarized data for monolingual corpora:
    mass-fetch-wmt --langs en,fr --test-set wmt14 --pair en-fr writes mono.*
    and test.*, no train.* or valid.*; then prepare_data.sh (PAIR=en-fr by
    default) binarizes the monolingual text and the test pair."""
    root, cache = tmp_path / "mirror", tmp_path / "sacrebleu"
    for lang in ("en", "fr"):
        news_crawl(root, lang, [2017], demo_lines(f"mono.{lang}")[:600])
    sacrebleu_cache(cache, "wmt14", "en-fr", demo_lines("test.en")[:30],
                    demo_lines("test.fr")[:30])
    raw = tmp_path / "wmt"
    with serve(root) as server:
        subprocess.run(
            ["python", "-m", "mass_tools.fetch_wmt", "--langs", "en,fr", "--test-set",
             "wmt14", "--pair", "en-fr", "--outdir", raw, "--year", "2017",
             "--base-url", server.url, "--max-lines", "500", "--valid-lines", "50"],
            check=True, env={**cli_env(), "SACREBLEU": str(cache)})
    assert sorted(p.name for p in raw.glob("[!.]*.*")) == [
        "mono.en", "mono.fr", "mono.valid.en", "mono.valid.fr", "test.en", "test.fr"]
    out = bash("examples/prepare_data.sh", RAW_DIR=raw, WORK_DIR=tmp_path / "work",
               VOCAB_SIZE=300)
    assert "Traceback" not in out
    data_bin = tmp_path / "work" / "data-bin"
    dictionary = Dictionary.load(str(data_bin / "dict.txt"))
    expected = {"train.en": 500, "train.fr": 500, "valid.en": 50, "valid.fr": 50,
                "test.en-fr.en": 30, "test.en-fr.fr": 30}
    for name, count in expected.items():
        dataset = data_utils.load_indexed_dataset(str(data_bin / name), dictionary)
        assert dataset is not None and len(dataset) == count, name
    assert not list(data_bin.glob("train.en-fr.*")) and not list(data_bin.glob("valid.en-fr.*"))
    assert (raw / "test.fr").read_text().splitlines() == demo_lines("test.fr")[:30]


@pytest.mark.slow
def test_sacrebleu_failing_says_where_it_looked_and_where_it_downloads_from(tmp_path):
    """No copy in $SACREBLEU and no way out (a proxy that refuses): one line
    naming the plain-text files it reads, its archive folder and the URL."""
    env = {k: v for k, v in cli_env().items() if k.lower() != "no_proxy"}
    env.update(SACREBLEU=str(tmp_path / "cache"), https_proxy="http://127.0.0.1:9",
               HTTPS_PROXY="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9")
    proc = subprocess.run(["python", "-m", "mass_tools.fetch_wmt", "--langs", "",
                           "--pair", "en-fr", "--valid-set", "wmt13", "--test-set", "wmt14",
                           "--outdir", str(tmp_path / "ref")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: sacrebleu could not give wmt13 en-fr (src): ")
    cache = tmp_path / "cache" / "wmt13"
    assert f"It reads {cache}/wmt13.en-fr.{{src,ref,docid,genre,origlang}}" in proc.stderr
    assert f"the archive in {cache}/raw/ that it downloads from https://" in proc.stderr
    assert not (tmp_path / "ref").exists() or not list((tmp_path / "ref").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("script,defaults", [
    ("newstest.sh", ["wmt13 (en-fr)", "wmt14/full (en-fr)", "wmt16/dev (en-ro)"]),
    ("parallel.sh", ["Europarl v7 (en-fr, en-de)", "10000,100000,1000000"]),
    ("news_crawl.sh", ["MIN_WORDS=${MIN_WORDS:-3}", "MAX_WORDS=${MAX_WORDS:-175}"])])
def test_help_shows_the_defaults_set_by_pair(script, defaults):
    proc = subprocess.run(["bash", f"data-prep/{script}", "--help"], cwd=REPO, env=cli_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "see below" not in proc.stdout
    for default in defaults:
        assert default in proc.stdout, default
