"""The benchmark's batches and FLOPs: batches of a large corpus padded as at
scale (far less than the sample's own sentences batched), and the FLOPs of
a step counted on its real tokens only."""

import json

import numpy as np
import pytest
import torch

from benchmarks.bench_batches import corpus_batches, padding_shares, sample_batches
from benchmarks.flops import real_token_flops, sentence_sample, training_step_flops
from benchmarks.real_flops import print_real_mfu
from conftest import binarize_bilingual, build_trainer


def padding_of(batches, sizes):
    """The share of padding when each batch is padded to its longest sentence."""
    slots = sum(len(b) * sizes[b].max() for b in batches)
    return 1 - sum(sizes[b].sum() for b in batches) / slots


def test_corpus_batches_hold_sentences_of_nearly_one_length():
    rng = np.random.RandomState(1)
    sizes = np.clip(rng.lognormal(3.2, 0.6, 8000).astype(np.int64), 2, 250)
    sampled = sample_batches(sizes, 65536)
    at_scale = corpus_batches(sizes, 65536, 32, corpus_sentences=2_000_000)
    assert len(at_scale) == 32
    for batch in at_scale:
        assert len(batch) * sizes[batch].max() <= 65536
        assert len(batch) % 8 == 0 or len(batch) < 8  # fairseq-train's batch multiple
    # the sample's few batches span many lengths; the corpus's hardly any
    assert padding_of(sampled, sizes) > 0.15
    assert padding_of(at_scale, sizes) < 0.02
    # the lengths are drawn from the sample's: long and short batches both come up
    means = [sizes[b].mean() for b in at_scale]
    assert min(means) < np.median(sizes) < max(means)


def test_too_few_corpus_sentences_for_the_batches_asked_is_an_error():
    with pytest.raises(ValueError, match="raise --corpus-sentences"):
        corpus_batches(np.full(100, 20), 4096, 50, corpus_sentences=1000)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    data = binarize_bilingual(tmp_path_factory.mktemp("bench_flops") / "bin")
    trainer = build_trainer(data, "cpu", "fp32", "--task", "masked_s2s")
    trainer.task.load_dataset("train")
    return trainer


def collate(trainer, indices):
    dataset = trainer.task.dataset("train")
    return dataset.collater([dataset[i] for i in indices])


def lengths_of(trainer):
    return trainer.task.dataset("train").sizes


def test_real_token_flops_are_the_sum_over_unpadded_groups(trainer):
    """A batch of two lengths, padded to the longer: its real-token FLOPs are
    those of each length's sentences batched alone, without padding."""
    sizes = np.asarray(lengths_of(trainer))
    short, long_ = [np.flatnonzero(sizes == n)[:3] for n in (sizes.min() + 2, sizes.max() - 1)]
    assert len(short) == len(long_) == 3
    pad = trainer.task.source_dictionary.pad()
    mixed = collate(trainer, list(short) + list(long_))
    src_pad, _ = padding_shares([mixed], pad)
    assert src_pad > 0.1
    expected = (training_step_flops(trainer, collate(trainer, short))
                + training_step_flops(trainer, collate(trainer, long_)))
    assert real_token_flops(trainer, mixed, pad) == expected
    assert training_step_flops(trainer, mixed) > 1.1 * expected


def test_without_padding_real_token_flops_are_the_step_flops(trainer):
    sizes = np.asarray(lengths_of(trainer))
    same = np.flatnonzero(sizes == np.bincount(sizes).argmax())[:4]
    sample = collate(trainer, same)
    pad = trainer.task.source_dictionary.pad()
    assert padding_shares([sample], pad)[0] == 0.0
    assert real_token_flops(trainer, sample, pad) == training_step_flops(trainer, sample)


def test_a_sentence_alone_keeps_its_tokens_positions_and_language(trainer):
    sizes = np.asarray(lengths_of(trainer))
    rows = [int(np.argmin(sizes)), int(np.argmax(sizes))]
    sample = collate(trainer, rows)
    pad = trainer.task.source_dictionary.pad()
    alone = sentence_sample(sample, 0, pad)
    net, full = alone["net_input"], sample["net_input"]
    assert net["src_tokens"].tolist() == [[t for t in full["src_tokens"][0].tolist() if t != pad]]
    kept = sample["target"][0].ne(pad)
    for key in ("prev_output_tokens", "positions"):
        if key in full:
            assert torch.equal(net[key][0], full[key][0][kept])
    assert torch.equal(alone["target"][0], sample["target"][0][kept])
    assert net["src_lengths"].tolist() == [int(full["src_tokens"][0].ne(pad).sum())]
    for key in ("src_lang_id", "tgt_lang_id"):
        if key in full:
            assert torch.equal(net[key], full[key][:1])


def fake_speed_run(budget_s=None, step_s=None, row_s=0.0):
    """The speed table with a fake measurement: (the rows' specs in the
    order they ran, the printed checks)."""
    import time
    from types import SimpleNamespace

    from benchmarks import bench_tables

    ran = []

    def steady(name, argv, size, dims, precision, variant, count_flops, **extra):
        ran.append(dict(name=name, argv=argv, size=size, precision=precision, key=variant,
                        count_flops=count_flops, **extra))
        time.sleep(row_s)
        fast = "--attention" in argv
        flops = dict(step_flops=4e12, step_real_flops=3e12) if count_flops else {}
        rate = (2.0 if fast else 1.0) * (0.7 if "denoising" in argv else 1.0)
        return dict(name=name, src_tokens_per_s=1e5 * rate, sentences_per_s=1e3 * rate,
                    step_s=(step_s or {}).get(variant, 0.5), batches=f"b{size}",
                    max_tokens=size, peak_tflops=100.0, src_pad=0.01, tgt_pad=0.0, **flops)

    args = SimpleNamespace(base_size=65536, device="cuda", budget_s=budget_s,
                           started=time.perf_counter(), quick=False)
    checks = bench_tables.speed_table(args, steady, "work")
    return ran, checks


def test_the_speed_table_measures_the_fast_paths_beside_denoising():
    ran, checks = fake_speed_run()
    keys = [row["key"] for row in ran]
    assert keys[:5] == ["mass_fp16", "bart_fp16", "dae_fp16", "mass_fast_fp16", "dae_fast_fp16"]
    by_key = {row["key"]: row for row in ran}
    fast = by_key["mass_fast_fp16"]
    for option in ("--attention", "sdpa", "--compile-layers", "--optimizer", "torch_adam"):
        assert option in fast["argv"] and option in by_key["dae_fast_bf16"]["argv"]
    assert fast["memory_efficient"] and by_key["mass_fast_bf16"]["precision"] == "bf16"
    # like for like: the same model for denoising, the study's settings
    assert "transformer_mass" in by_key["dae_fp16"]["argv"]
    assert "bart_base" in by_key["bart_fp16"]["argv"]
    for key in ("bart_fp16", "dae_fp16"):
        argv = [str(a) for a in by_key[key]["argv"]]
        assert argv[argv.index("--mask") + 1] == "0.3"
        assert argv[argv.index("--poisson-lambda") + 1] == "3"
    assert all(row["argv"][-2:] == ["--clip-norm", "1.0"] for row in ran)
    preset = by_key["mass_fast_fp16_4096x4"]
    assert preset["size"] == 4096 and preset["update_freq"] == 4
    # FLOPs counted once per task and batches, the others take them
    assert {k for k, row in by_key.items() if row["count_flops"]} == {
        "mass_fp16", "bart_fp16", "dae_fp16", "mass_fast_fp16_4096x4"}
    text = "\n".join(checks)
    assert "like for like" in text and "fp16 1.43x" in text  # 2.0 / (2.0 * 0.7)
    assert "as shipped: 1.43x" in text
    # 3e12 real FLOPs a step of 0.5 s against a 100 TFLOP/s peak: 6%
    assert "on real tokens, masked_s2s fp16, fast paths: 6.0%" in text


def test_the_speed_table_stops_starting_rows_at_its_budget():
    ran, checks = fake_speed_run(budget_s=0.5, row_s=0.3)  # the second would end at 0.6 s
    assert [row["key"] for row in ran] == ["mass_fp16"]
    assert checks == ["the fast-path rows did not run"]


def test_real_flops_turns_a_logged_padded_mfu_into_real_tokens_mfu(tmp_path, capsys):
    log = tmp_path / "bench.jsonl"
    rows = [dict(name="masked_s2s 0.5 fp16", max_tokens=65536, mfu=0.192),
            dict(name="masked_s2s 0.5 bf16", max_tokens=131072, mfu=0.25),  # other batches
            dict(name="masked_s2s 0.5 cpu", max_tokens=65536, mfu=None),
            dict(name="denoising (BART) mask 0.5 fp16", max_tokens=65536, mfu=0.18)]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print_real_mfu(log, 65536, 0.675)
    out = capsys.readouterr().out
    assert "masked_s2s 0.5 fp16: 19.2% -> 13.0%" in out
    for other in ("bf16", "cpu", "denoising"):  # not the batches counted
        assert other not in out.split("\n", 2)[2]
