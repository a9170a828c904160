"""The paper's whole chain in miniature, through the scripts a user runs, with
only the size knobs turned down (SCALE=tiny, few lines, few BPE codes) and a
local mirror in place of the servers: News Crawl en and fr -> joint BPE ->
data-bin (data-prep/news_crawl.sh), newstest2013/2014 through sacrebleu into
the same data-bin (data-prep/newstest.sh), cross-lingual MASS pre-training on
two CPU ranks under torchrun (examples/paper/pretrain.sh), one round of
offline back-translation from that checkpoint and its BLEU on the test set's
raw references (examples/paper/unsup_offline_bt.sh). The sentences are few
but of every length news_crawl.sh keeps, up to its MAX_WORDS (175 words):
real text, the longest of it cut to length."""

import re
import subprocess
from types import SimpleNamespace

import pytest
import sacrebleu
from fairseq import checkpoint_utils
from fairseq.data import Dictionary, data_utils
from mirror import demo_lines, news_crawl, sacrebleu_cache, sacrebleu_text, serve

from conftest import REPO, cli_env, free_port

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

TRAIN_LINES = 40  # a language: unsup_offline_bt.sh's tiny MONO_LINES, so one part of one
VALID_LINES = 10
MAX_WORDS = 175  # news_crawl.sh's default: the longest sentence it keeps


def cut(lang, words):
    """Real text of exactly ``words`` words: the demo's longest lines, joined."""
    longest = sorted(demo_lines(f"mono.{lang}"), key=lambda line: -len(line.split()))
    return " ".join(" ".join(longest[:3]).split()[:words])


def news(lang):
    """News Crawl as it comes: the longest sentence kept first (so it is
    validated), one too long and one too short (dropped), then real lines of
    every length (en: two of over 120 words, longer than tiny's 256 tokens)."""
    start = 2080  # demo lines 2092 and 2093 (en) have 129 and 123 words
    return ([cut(lang, MAX_WORDS), "Deux mots", cut(lang, MAX_WORDS + 1)]
            + demo_lines(f"mono.{lang}")[start:start + TRAIN_LINES + VALID_LINES + 10])


VALID_PAIRS = list(zip(demo_lines("valid.en"), demo_lines("valid.fr")))[:8]
TEST_PAIRS = list(zip(demo_lines("test.en"), demo_lines("test.fr")))[:12]


def run(script, **variables):
    """bash SCRIPT from the repository root under these variables, as a user
    runs it (no GPU): its stdout and stderr together."""
    env = {**cli_env(), "NUM_GPUS": "0",
           **{k: str(v) for k, v in variables.items()}}
    proc = subprocess.run(["bash", str(REPO / script)], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout[-5000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The mirror: one year of News Crawl per language over HTTP, newstest2013
    and newstest2014 en-fr in a sacrebleu cache (its SGML archive, and its
    plain-text files: data-prep/README.md's ways of running offline)."""
    root = tmp_path_factory.mktemp("chain")
    for lang in ("en", "fr"):
        news_crawl(root / "mirror" / "news-crawl", lang, [2017], news(lang))
    sacrebleu_cache(root / "sacrebleu", "wmt13", "en-fr", *zip(*VALID_PAIRS))
    sacrebleu_text(root / "sacrebleu", "wmt14/full", "en-fr", *zip(*TEST_PAIRS))
    with serve(root / "mirror") as server:
        yield SimpleNamespace(root=root, url=server.url, out=root / "en-fr")


def load(path, dictionary):
    dataset = data_utils.load_indexed_dataset(str(path), dictionary)
    assert dataset is not None, path
    return dataset


def lines(path):
    return path.read_text().splitlines()


def test_news_crawl_to_bleu_through_pretraining_on_two_ranks_and_back_translation(site):
    out, data_bin = site.out, site.out / "data-bin"
    # 1. data-prep, from the mirror
    common = dict(OUT=out, DOWNLOADS=site.root / "downloads", JOBS=1)
    run("data-prep/news_crawl.sh", **common, LANGS="en,fr", BASE_URL=f"{site.url}/news-crawl",
        YEARS="2017", MAX_LINES=TRAIN_LINES, VALID_LINES=VALID_LINES, CODES=200)
    run("data-prep/newstest.sh", **common, PAIR="en-fr", SACREBLEU=site.root / "sacrebleu")
    dictionary = Dictionary.load(str(data_bin / "dict.txt"))
    for side, lang in enumerate(("en", "fr")):
        assert len(load(data_bin / f"train.{lang}", dictionary)) == TRAIN_LINES
        valid = load(data_bin / f"valid.{lang}", dictionary)
        assert len(valid) == VALID_LINES
        kept = lines(out / "work" / "text" / f"mono.valid.{lang}")
        kept += lines(out / "work" / "text" / f"mono.{lang}")
        assert kept[0] == cut(lang, MAX_WORDS) and 256 < valid.sizes[0] <= 1024
        assert all(3 <= len(line.split()) <= MAX_WORDS for line in kept)
        for split, expected in (("valid", VALID_PAIRS), ("test", TEST_PAIRS)):
            assert len(load(data_bin / f"{split}.en-fr.{lang}", dictionary)) == len(expected)
            assert lines(out / "ref" / f"{split}.{lang}") == [pair[side] for pair in expected]

    # 2. MASS pre-training, two gloo ranks under torchrun
    save = site.root / "pretrain"
    launcher = f"torchrun --nproc_per_node 2 --master_addr 127.0.0.1 --master_port {free_port()}"
    log = run("examples/paper/pretrain.sh", SCALE="tiny", DATA_BIN=data_bin, SAVE_DIR=save,
              LAUNCHER=launcher)
    assert "(2 process(es) x 256 x update-freq 1" in log
    assert "distributed init (rank 0)" in log and "distributed init (rank 1)" in log
    assert "num_updates 20" in log and "valid on 'valid.fr' subset" in log
    # training leaves out sentences longer than MAX_TOKENS (256), and counts
    # them; validation takes them all (the longest has more than 256 tokens)
    skipped = re.findall(r"masked_s2s \| skipping (\d+) sentences longer than \(256, 256\)", log)
    assert skipped and int(skipped[0]) >= 2
    assert "Sentences lengths should not exceed" not in log
    state = checkpoint_utils.load_checkpoint_to_cpu(str(save / "checkpoint_best.pt"))
    assert state["cfg"]["distributed_training"]["distributed_world_size"] == 2
    assert state["cfg"]["task"]["langs"] == "en,fr"
    assert state["model"]["encoder.embed_langs.weight"].shape[0] == 2  # en and fr

    # 3. one round of offline back-translation from it, 4. test BLEU
    work = site.root / "offline"
    log = run("examples/paper/unsup_offline_bt.sh", SCALE="tiny", ROUNDS=1, DATA_BIN=data_bin,
              REFERENCE_PREFIX=out / "ref" / "test", PRETRAINED=save / "checkpoint_best.pt",
              WORK_DIR=work)
    for src, tgt in (("en", "fr"), ("fr", "en")):
        assert f"round 1: {src}->{tgt} translates part 1 of 1 of {data_bin}/train.{src}" in log
        generated = (work / "round1" / f"gen-{src}-{tgt}" / "generate.log").read_text()
        sources = re.findall(r"^S-(\d+)\t", generated, re.M)
        hypotheses = re.findall(r"^H-(\d+)\t\S+\t(.*)$", generated, re.M)
        assert sorted(sources) == sorted(i for i, _ in hypotheses)  # one each, ids unique
        assert len(set(sources)) == TRAIN_LINES
        kept = sum(1 for _, hypothesis in hypotheses if hypothesis)  # empty ones are dropped
        pair = work / "round1" / f"gen-{src}-{tgt}" / "pairs"
        assert len(lines(pair.with_suffix(f".{src}"))) == len(lines(pair.with_suffix(f".{tgt}")))
        assert len(lines(pair.with_suffix(f".{tgt}"))) == kept > 0
        assert (f"round 1: {src}->{tgt}: {kept} synthetic pairs, {len(hypotheses) - kept} "
                "empty translation(s) left out") in log
    pretrained = str(save / "checkpoint_best.pt")
    assert len(re.findall(rf"loading pretrained model from {re.escape(pretrained)}", log)) == 2
    table = [row.split("\t") for row in lines(work / "results.tsv")]
    assert table[0] == ["round", "direction", "BLEU", "chrF"]
    assert [row[:2] for row in table[1:]] == [["1", "en-fr"], ["1", "fr-en"]]
    for _, direction, bleu, chrf in table[1:]:
        src, tgt = direction.split("-")
        # the scores of the translations it wrote, against the test set's raw references
        with open(work / "round1" / f"test.{direction}.txt", encoding="utf-8") as f:
            written = [line.rstrip() for line in f]
        references = [[pair[("en", "fr").index(tgt)].rstrip() for pair in TEST_PAIRS]]
        assert [bleu, chrf] == [f"{sacrebleu.corpus_bleu(written, references).score:.2f}",
                                f"{sacrebleu.corpus_chrf(written, references).score:.2f}"]
        assert (f"== {src}->{tgt} test: {len(TEST_PAIRS)} sentences, hypotheses in "
                f"{work}/round1/test.{direction}.txt") in log
        assert re.search(rf"^\s*BLEU\|\S+ = {re.escape(bleu)} ", log, re.M), direction
        hypotheses = lines(work / "round1" / f"test.{direction}.txt")
        assert len(hypotheses) == len(lines(out / "ref" / f"test.{tgt}")) == len(TEST_PAIRS)
