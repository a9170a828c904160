"""The data-prep scripts of the paper's data, end to end from a local mirror
over HTTP: News Crawl -> joint BPE -> pre-training data (after a run stopped
by a knob the input cannot take, a run killed in the middle of a download,
then finished), the newstest sets through sacrebleu, the low-resource
samples of a Europarl-style .tgz (after a size larger than the corpus),
XSum; then a rerun that does nothing, a deleted output that is made again,
changed settings, a new dictionary that the later files were not made with,
and a damaged download, all of which stop or mend with a clear message."""

import os
import shutil
import signal
import subprocess
import time
from types import SimpleNamespace

import pytest
import sacrebleu
from fairseq.data import Dictionary, data_utils
from mirror import demo_lines, news_crawl, sacrebleu_cache, sacrebleu_text, serve, tgz, xsum

from conftest import REPO, bash, cli_env, make_task

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

YEARS = "2016-2017"
STALLED = "/news-crawl/fr/news.2016.fr.shuffled.deduped.gz"  # fr's second download
TEST_PAIRS = list(zip(demo_lines("test.en")[:30], demo_lines("test.fr")[:30]))
VALID_PAIRS = list(zip(demo_lines("valid.en")[:40], demo_lines("valid.fr")[:40]))


def start(script, **variables):
    env = {**cli_env(),
           **{k: str(v) for k, v in variables.items()}}
    return subprocess.Popen(["bash", str(REPO / "data-prep" / script)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def run(script, status=0, **variables):
    proc = start(script, **variables)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == status, f"{script} exited {proc.returncode}:\n{out[-4000:]}"
    return out


def build_mirror(root):
    for lang in ("en", "fr"):
        news_crawl(root / "news-crawl", lang, [2016, 2017], demo_lines(f"mono.{lang}")[:1200])
    whole = (root / "news-crawl" / "en" / "news.2017.en.shuffled.deduped.gz").read_bytes()
    (root / "news-crawl" / "de").mkdir()
    (root / "news-crawl" / "de" / "news.2017.de.shuffled.deduped.gz").write_bytes(whole[:-99])
    train = list(zip(demo_lines("train.en")[:500], demo_lines("train.fr")[:500]))
    pairs = train + train[:10] + TEST_PAIRS[:5] + [("", "vide"), ("empty", " ")]
    tgz(root / "europarl" / "v7" / "fr-en.tgz",
        {"europarl-v7.fr-en.en": [en for en, _ in pairs],
         "europarl-v7.fr-en.fr": [fr for _, fr in pairs]})
    articles = list(zip(demo_lines("xsum/train.document"), demo_lines("xsum/train.summary")))
    xsum(root / "xsum", {"train": articles[:40], "validation": articles[40:50],
                         "test": articles[50:60]})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    build_mirror(root / "mirror")
    cache = root / "sacrebleu"
    sacrebleu_cache(cache, "wmt13", "en-fr", *zip(*VALID_PAIRS))
    # the test set as sacrebleu's plain-text files: data-prep/README.md's other
    # way of running offline
    sacrebleu_text(cache, "wmt14/full", "en-fr", *zip(*TEST_PAIRS))
    with serve(root / "mirror") as server:
        common = dict(DOWNLOADS=root / "downloads", JOBS=1, SACREBLEU=cache)
        yield SimpleNamespace(
            root=root, server=server, out=root / "en-fr",
            # two jobs: the text goes through in parts, joined in order
            news=dict(common, JOBS=2, LANGS="en,fr", OUT=root / "en-fr",
                      BASE_URL=f"{server.url}/news-crawl", YEARS=YEARS, MAX_LINES=400,
                      VALID_LINES=60, CODES=200, BPE_LINES=300),
            newstest=dict(common, PAIR="en-fr", OUT=root / "en-fr"),
            para=dict(common, PAIR="en-fr", OUT=root / "en-fr", SIZES="100,all", CORPORA=(
                f"{server.url}/europarl/v7/fr-en.tgz|europarl-v7.fr-en.en|europarl-v7.fr-en.fr")),
            xsum=dict(common, PREP=root / "en-fr", OUT=root / "xsum",
                      XSUM_URL=f"{server.url}/xsum/XSUM-EMNLP18-Summary-Data-Original.tar.gz",
                      SPLIT_URL=f"{server.url}/xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"))


@pytest.fixture(scope="module")
def news(site):
    """news_crawl.sh with a VALID_LINES larger than the text (it stops), then
    killed while fr's second file downloads, then run again."""
    too_many = run("news_crawl.sh", status=1, **{**site.news, "VALID_LINES": 5000})
    site.server.stalled.add(STALLED)
    proc = start("news_crawl.sh", **site.news)
    part = site.root / "downloads" / "news-crawl" / (STALLED.rsplit("/", 1)[1] + ".part")
    deadline = time.monotonic() + 120
    while not (part.exists() and part.stat().st_size > 0):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    killed = proc.communicate()[0]
    site.server.stalled.clear()
    site.server.release.set()
    had = part.stat().st_size
    site.server.requests.clear()
    out = run("news_crawl.sh", **site.news)
    return SimpleNamespace(out=out, had=had, requests=list(site.server.requests),
                           too_many=too_many, killed=killed)


def test_a_knob_the_input_cannot_take_stops_at_once_and_locks_nothing(site, news):
    kept = len({" ".join(line.split()) for line in demo_lines("mono.en")[:1200]
                if 3 <= len(line.split()) <= 175})  # as mass-fetch-wmt keeps them
    assert (f"mono.en: the input has {kept} lines of 3 to 175 words (no repeats), and "
            "--valid-lines 5000 (VALID_LINES of data-prep/news_crawl.sh) holds them all out"
            ) in news.too_many
    assert f"Set it below {kept}" in news.too_many and "Traceback" not in news.too_many
    # nothing was marked done, and the corrected knob was taken, not refused
    assert "== fetch.en\n" in news.too_many and "done already" not in news.too_many
    assert ("other settings than the unfinished run in " in news.killed
            and "  VALID_LINES: 5000 before, 60 now" in news.killed)


def load(path, dictionary):
    dataset = data_utils.load_indexed_dataset(str(path), dictionary)
    assert dataset is not None, path
    return dataset


def test_a_killed_run_resumes_its_download_and_finishes(news):
    assert "== fetch.en: done already" in news.out
    assert (STALLED, f"bytes={news.had}-") in news.requests  # the rest only
    assert [path for path, _ in news.requests] == [STALLED]


def test_news_crawl_gives_masked_s2s_data_in_one_bpe(site, news):
    data_bin = site.out / "data-bin"
    codes = (site.out / "bpe.codes").read_text().splitlines()
    assert codes[0].startswith("#version") and 50 < len(codes) - 1 <= 200
    task = make_task(data_bin, langs="en,fr")
    task.load_dataset("train")
    assert len(task.dataset("train")) == 800  # MAX_LINES of each language
    for lang in ("en", "fr"):
        task.load_dataset(f"valid.{lang}")
        assert len(task.dataset(f"valid.{lang}")) == 60
        # joined from two parts in order: the first sentence is the first line
        dataset = load(data_bin / f"train.{lang}", task.source_dictionary)
        first = task.source_dictionary.string(dataset[0]).replace("@@ ", "")
        tokenized = (site.out / "work" / "tok" / f"mono.{lang}").read_text().splitlines()
        assert first == tokenized[0] and len(tokenized) == 400
    assert not list((site.root / "downloads" / "news-crawl").glob("*.part"))


@pytest.fixture(scope="module")
def newstest(site, news):
    return run("newstest.sh", **site.newstest)


def test_newstest_pairs_share_the_dictionary_and_keep_the_references(site, newstest):
    dictionary = Dictionary.load(str(site.out / "data-bin" / "dict.txt"))
    for split, pairs in (("valid", VALID_PAIRS), ("test", TEST_PAIRS)):
        for side, lang in enumerate(("en", "fr")):
            dataset = load(site.out / "data-bin" / f"{split}.en-fr.{lang}", dictionary)
            assert len(dataset) == len(pairs)
            reference = (site.out / "ref" / f"{split}.{lang}").read_text().splitlines()
            assert reference == [pair[side] for pair in pairs]  # untokenized
    assert dictionary.unk() not in load(site.out / "data-bin" / "test.en-fr.fr", dictionary)[0]


@pytest.fixture(scope="module")
def para(site, newstest):
    """parallel.sh asking for more pairs than the corpus has (it stops), then
    with sizes it has."""
    too_many = run("parallel.sh", status=1, **{**site.para, "SIZES": "100,100000"})
    assert "--sizes asks for 100000 pairs but the corpora" in too_many
    return run("parallel.sh", **site.para)


def test_parallel_samples_are_nested_clean_and_binarized(site, para):
    dictionary = Dictionary.load(str(site.out / "data-bin" / "dict.txt"))
    samples = {size: list(zip(*((site.out / "para" / size / f"train.{lang}").read_text()
                                .splitlines() for lang in ("en", "fr"))))
               for size in ("100", "all")}
    assert len(samples["all"]) == 500  # no repeated, empty-sided or test-set pair
    assert len(samples["100"]) == 100 and set(samples["100"]) < set(samples["all"])
    assert not set(samples["all"]) & set(TEST_PAIRS)
    for size, count in (("100", 100), ("all", 500)):
        data_bin = site.out / "para" / size / "data-bin"
        assert (data_bin / "dict.txt").read_text() == (
            site.out / "data-bin" / "dict.txt").read_text()
        for split, expected in (("train", count), ("valid", 40), ("test", 30)):
            for lang in ("en", "fr"):
                assert len(load(data_bin / f"{split}.en-fr.{lang}", dictionary)) == expected


def test_the_sample_is_fixed_by_the_seed(site, para, tmp_path):
    def sample(seed):
        subprocess.run(["python", "-m", "mass_tools.sample_pairs", "--pair", "en-fr",
                        "--corpus", str(next((site.root / "downloads" / "parallel").iterdir())),
                        "europarl-v7.fr-en.en", "europarl-v7.fr-en.fr", "--sizes", "100",
                        "--seed", str(seed), "--outdir", str(tmp_path / str(seed)),
                        "--exclude", *map(str, (site.out / "ref").glob("*.*"))],
                       check=True, capture_output=True, cwd=REPO, env=cli_env())
        return (tmp_path / str(seed) / "100" / "train.en").read_text()

    assert sample(1) == (site.out / "para" / "100" / "train.en").read_text()
    assert sample(2) != sample(1)


@pytest.fixture(scope="module")
def summaries(site, para):
    return run("xsum.sh", **site.xsum)


def test_xsum_documents_and_summaries_are_binarized(site, summaries):
    articles = list(zip(demo_lines("xsum/train.document"), demo_lines("xsum/train.summary")))
    text = site.root / "xsum" / "text"
    assert (text / "test.summary").read_text().splitlines() == [s for _, s in articles[50:60]]
    assert "Share this with" not in (text / "train.document").read_text()
    dictionary = Dictionary.load(str(site.root / "xsum" / "data-bin" / "dict.txt"))
    for split, count in (("train", 40), ("valid", 10), ("test", 10)):
        for side in ("document", "summary"):
            path = site.root / "xsum" / "data-bin" / f"{split}.document-summary.{side}"
            assert len(load(path, dictionary)) == count


TINY = dict(SCALE="tiny", NUM_GPUS="0")  # the paper recipes shrunk for the CPU


def test_the_recipes_train_on_what_the_scripts_wrote(site, para, summaries, tmp_path):
    """examples/paper/low_resource.sh on a parallel sample and summarization.sh
    on XSum, as data-prep wrote them (from random initialisation: the
    pre-trained start is the chain test's), each to its scores."""
    bash("examples/paper/low_resource.sh", **TINY,
         DATA_BIN=site.out / "para" / "100" / "data-bin",
         REFERENCE_PREFIX=site.out / "ref" / "test", PRETRAINED="unused", INITS="random",
         DIRECTIONS="en-fr", WORK_DIR=tmp_path / "low")
    rows = (tmp_path / "low" / "results.tsv").read_text().splitlines()[1:]
    assert [row.split("\t")[:3] for row in rows] == [["train", "en-fr", "random"]]
    # its BLEU and chrF: sacreBLEU's of the translations it wrote, against the raw reference
    with open(tmp_path / "low" / "test.train.en-fr.random.txt", encoding="utf-8") as f:
        hypotheses = [line.rstrip() for line in f]
    references = [[fr.rstrip() for _, fr in TEST_PAIRS]]
    assert rows[0].split("\t")[3:] == [
        f"{sacrebleu.corpus_bleu(hypotheses, references).score:.2f}",
        f"{sacrebleu.corpus_chrf(hypotheses, references).score:.2f}"]
    xsum = site.root / "xsum"
    bash("examples/paper/summarization.sh", **TINY, DATA_BIN=xsum / "data-bin",
         PRETRAINED="unused", REFERENCE=xsum / "text" / "test.summary", INITS="random",
         WORK_DIR=tmp_path / "sum")
    rows = (tmp_path / "sum" / "results.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["init", "ROUGE-1", "ROUGE-2", "ROUGE-L"]
    assert rows[1].split("\t")[0] == "random" and len(rows) == 2


def test_a_second_run_does_nothing(site, summaries):
    data_bin = site.out / "data-bin" / "train.en.bin"
    before = data_bin.stat().st_mtime_ns
    site.server.requests.clear()
    for script, variables in (("news_crawl.sh", site.news), ("parallel.sh", site.para),
                              ("newstest.sh", site.newstest),
                              ("xsum.sh", site.xsum)):
        out = run(script, **variables)
        steps = [line for line in out.splitlines() if line.startswith("== ")][:-1]
        assert steps and all(line.endswith(": done already") for line in steps), out
    assert site.server.requests == [] and data_bin.stat().st_mtime_ns == before


def test_other_settings_in_the_same_out_stop(site, news):
    out = run("news_crawl.sh", status=1, **{**site.news, "CODES": 300})
    assert f"error: {site.out} was prepared by news_crawl.sh with other settings:\n" in out
    assert "\n  CODES: 200 before, 300 now\n" in out and f"delete {site.out}/.done and" in out


def test_a_deleted_output_is_made_again_and_a_new_dictionary_is_not_mixed(site, newstest,
                                                                          tmp_path):
    """In a copy of the prepared OUT: a deleted data-bin file is made again
    (its step, and those after it); then news_crawl.sh redone with other
    codes after deleting only its own records (as the settings message used
    to say) stops before it mixes its new dictionary with newstest.sh's
    pairs, and newstest.sh refuses the subwords it did not encode with."""
    out = tmp_path / "en-fr"
    shutil.copytree(site.out, out, symlinks=True)
    first = (out / "data-bin" / "train.en.bin").read_bytes()
    (out / "data-bin" / "train.en.bin").unlink()
    news = {**site.news, "OUT": out, "JOBS": 1}  # one process a step: less to start
    log = run("news_crawl.sh", **news)
    assert "== binarize: its outputs are missing or changed since it was done" in log
    assert "== learn_subwords: done already" in log
    assert (out / "data-bin" / "train.en.bin").read_bytes() == first
    dictionary = (out / "data-bin" / "dict.txt").read_text()
    shutil.rmtree(out / ".done" / "news_crawl")
    log = run("news_crawl.sh", status=1, **{**news, "CODES": 100})
    refusal = log[log.index("error: "):]
    assert refusal.startswith(f"error: {out}/data-bin holds files binarized with another "
                              "dictionary or subword model than this run's (")
    before = f"({dictionary.count(chr(10))} symbols, md5 "
    assert (f"test.en-fr.en, test.en-fr.fr, valid.en-fr.en, valid.en-fr.fr {before}"
            in refusal)
    assert (out / "data-bin" / "dict.txt").read_text() == dictionary  # left as it was
    log = run("newstest.sh", status=1, **{**site.newstest, "OUT": out})
    assert f"error: {out} was prepared by newstest.sh with other settings:\n" in log
    assert "\n  subwords: bpe.codes, md5 " in log and f"delete {out}/.done/newstest" in log


def test_a_damaged_download_stops_with_what_to_do(site):
    out = run("news_crawl.sh", status=1,
              **{**site.news, "LANGS": "de", "OUT": site.root / "de", "YEARS": "2017"})
    assert "news.2017.de.shuffled.deduped.gz: the downloaded file is bad" in out
    assert "delete it and run again" in out and "Traceback" not in out
    assert not (site.root / "downloads" / "news-crawl" / "news.2017.de.shuffled.deduped.gz"
                ).exists()
