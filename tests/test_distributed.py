"""Two CPU ranks (gloo, fairseq's legacy DDP) train like one rank with
--update-freq 2: each rank imports the plugin, gets its own batches and ends
with the weights of the one rank."""

import pytest
import torch

from conftest import (
    ALL_RANKS,
    REPO,
    assert_every_rank_ends_with,
    run_cli,
    run_two_gloo_ranks,
    synthetic_sentences,
    write,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    for name, seed, n in (("mono.txt", 30, 400), ("mono.valid.txt", 31, 30)):
        write(root / name, synthetic_sentences(seed, n))
    run_cli(["fairseq-preprocess", "--only-source", "--trainpref", root / "mono.txt",
             "--validpref", root / "mono.valid.txt", "--destdir", root / "bin",
             "--workers", "1"], cwd=REPO)
    return root / "bin"


def train_args(data, save_dir):
    # no dropout: the two set-ups draw dropout masks in a different order
    return [data, "--user-dir", "mass_plugin", "--task", "masked_s2s",
            "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss", "--cpu",
            "--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0",
            "--optimizer", "adam", "--lr", "0.002", "--max-tokens", "300",
            "--max-update", "12", "--seed", "5", "--num-workers", "1",
            "--disable-validation", "--save-dir", save_dir, "--log-format", "simple",
            "--log-interval", "1"]


def test_two_gloo_ranks_match_one_rank_with_update_freq_2(data, tmp_path):
    run_cli(["fairseq-train", *train_args(data, tmp_path / "one"), "--update-freq", "2"],
            cwd=REPO)
    # both ranks succeed: rank 1 could only build task masked_s2s by
    # importing the plugin itself; each writes its weights (ALL_RANKS)
    run_two_gloo_ranks(["python", ALL_RANKS, *train_args(data, tmp_path / "two")])
    # each update of the two ranks covers two batches, one per rank: the
    # weights can only match if the ranks read different sentences
    one = torch.load(tmp_path / "one/checkpoint_last.pt")
    two = torch.load(tmp_path / "two/checkpoint_last.pt")
    assert two["optimizer_history"][-1]["num_updates"] == 12
    assert_every_rank_ends_with(one["model"], tmp_path / "two", atol=1e-4, rtol=1e-4)
    start = torch.load(tmp_path / "two/rank0.start.pt")
    assert any(not torch.equal(start[k], one["model"][k]) for k in start)  # it trained
