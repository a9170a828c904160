"""MaskedS2SDataset and the masked_s2s task: batches, determinism, workers, options."""

import numpy as np
import pytest
import torch

from conftest import binarize_splits, make_task, synthetic_sentences
from mass_plugin.data.masked_s2s_dataset import PAD_POSITION
from mass_plugin.data.masking import span_length
from mass_plugin.tasks.masked_s2s import language_sample_sizes


def run_epochs(task, split="train", first_epoch=1, epochs=1, num_workers=0):
    """Batches of each epoch, iterated the way fairseq's trainer does it:
    one cached iterator, next_epoch_itr() at the start of every epoch."""
    itr = task.get_batch_iterator(
        task.dataset(split), max_tokens=400, max_positions=task.max_positions(),
        seed=1, num_workers=num_workers, epoch=first_epoch,
        disable_iterator_cache=True,  # a new iterator for each call
    )
    result = []
    for _ in range(epochs):
        epoch_itr = itr.next_epoch_itr(shuffle=True)
        result.append(list(epoch_itr))
    assert itr.num_workers == num_workers
    if num_workers > 0:
        # shut the workers down now; torch's finaliser waits 5 s per worker
        itr.dataloader._iterator._shutdown_workers()
    return result


def batches(task, split="train", epoch=1, num_workers=0):
    return run_epochs(task, split, first_epoch=epoch, num_workers=num_workers)[0]


def by_id(batch_list):
    """{sentence id: (source, prev_output_tokens, target, positions)} without padding."""
    out = {}
    for batch in batch_list:
        net = batch["net_input"]
        for row in range(batch["target"].size(0)):  # every row, not len(batch)
            k = int((net["positions"][row] != PAD_POSITION).sum())
            m = int(net["src_lengths"][row])
            out[int(batch["id"][row])] = (
                net["src_tokens"][row, :m].tolist(),
                net["prev_output_tokens"][row, :k].tolist(),
                batch["target"][row, :k].tolist(),
                net["positions"][row, :k].tolist(),
            )
    return out


def test_mask_symbol_is_added_once_at_the_end_of_the_dictionary(mono_data):
    data_dir, _, dictionary = mono_data
    task = make_task(data_dir)
    assert task.mask_idx == len(dictionary)
    assert task.source_dictionary[task.mask_idx] == "<mask>"
    assert len(task.source_dictionary) == len(dictionary) + 1


def test_batches_hold_the_mass_transformation_of_every_sentence(mono_data):
    data_dir, train, dictionary = mono_data
    task = make_task(data_dir)
    task.load_dataset("train")
    samples = by_id(batches(task))
    assert sorted(samples) == list(range(len(train)))
    pad = dictionary.pad()
    for index, (source, prev, target, positions) in samples.items():
        tokens = dictionary.encode_line(train[index], add_if_not_exist=False).tolist()
        k = span_length(len(tokens), 0.5)
        assert len(target) == k and pad not in target
        assert positions == list(range(positions[0], positions[0] + k))
        assert target == tokens[positions[0] - 1:positions[0] - 1 + k]
        assert prev[1:] == target[:-1]
        assert len(source) == len(tokens)


def test_collater_counts_only_span_tokens_and_pads_positions_with_zero(mono_data):
    data_dir, _, dictionary = mono_data
    task = make_task(data_dir)
    task.load_dataset("train")
    batch = batches(task)[0]
    target, net = batch["target"], batch["net_input"]
    real = target.ne(dictionary.pad())
    assert batch["ntokens"] == int(real.sum())
    assert batch["nsentences"] == target.size(0)
    assert torch.equal(net["positions"].ne(PAD_POSITION), real)
    assert torch.equal(net["prev_output_tokens"].ne(dictionary.pad()), real)
    assert target.size(1) < net["src_tokens"].size(1)


@pytest.mark.parametrize("epoch", [1, 2])
def test_workers_do_not_change_the_samples(mono_data, epoch):
    data_dir, _, _ = mono_data
    task = make_task(data_dir)
    task.load_dataset("train")
    in_process = by_id(batches(task, epoch=epoch, num_workers=0))
    two_workers = by_id(batches(task, epoch=epoch, num_workers=2))
    assert in_process == two_workers


def test_masks_change_with_the_epoch_also_in_persistent_workers(mono_data):
    """fairseq reuses one data loader with persistent workers across epochs;
    the workers' copies of the dataset must still see the new epoch."""
    data_dir, _, _ = mono_data
    task = make_task(data_dir)
    task.load_dataset("train")
    first, second = (by_id(b) for b in run_epochs(task, epochs=2, num_workers=2))
    assert first.keys() == second.keys()
    changed = sum(first[i] != second[i] for i in first)
    assert changed > 0.8 * len(first)
    # and epoch 2 is the same as in a fresh run started at epoch 2 (resume)
    fresh = make_task(data_dir)
    fresh.load_dataset("train")
    assert by_id(batches(fresh, epoch=2, num_workers=0)) == second


def test_same_seed_epoch_and_index_give_the_same_item_in_a_new_task(mono_data):
    data_dir, _, _ = mono_data
    items = []
    for _ in range(2):
        task = make_task(data_dir)
        task.load_dataset("train")
        task.dataset("train").set_epoch(3)
        items.append(task.dataset("train")[17])
    for key in ("source", "prev_output_tokens", "target", "positions"):
        assert torch.equal(items[0][key], items[1][key])
    other_seed = make_task(data_dir, seed=2)
    other_seed.load_dataset("train")
    other_seed.dataset("train").set_epoch(3)
    assert not all(torch.equal(items[0][k], other_seed.dataset("train")[17][k])
                   for k in ("source", "positions"))


def test_validation_masks_do_not_depend_on_the_epoch(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir)
    task.load_dataset("valid")
    assert by_id(batches(task, "valid", epoch=1)) == by_id(batches(task, "valid", epoch=7))


def test_mask_ratio_reaches_the_dataset(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir, mask_ratio=0.2)
    task.load_dataset("train")
    for source, _, target, _ in by_id(batches(task)).values():
        assert len(target) == span_length(len(source), 0.2)


def test_discrete_mode_reaches_the_dataset(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir, mask_mode="discrete")
    task.load_dataset("train")
    gaps = [np.diff(p).max() for *_, p in by_id(batches(task)).values() if len(p) > 1]
    assert max(gaps) > 1


def test_feed_reaches_the_dataset_and_only_masked_tokens_are_counted(mono_data):
    data_dir, _, _ = mono_data
    plain, fed = make_task(data_dir), make_task(data_dir, feed_unmasked=True)
    for task in (plain, fed):
        task.load_dataset("train")
    pad = fed.source_dictionary.pad()
    plain_batches, fed_batches = batches(plain), batches(fed)
    assert len(plain_batches) == len(fed_batches)
    for a, b in zip(plain_batches, fed_batches):
        assert torch.equal(a["id"], b["id"])
        assert a["ntokens"] == b["ntokens"] == int(b["target"].ne(pad).sum())
        # the decoder gets every position of the sentence, not only the span
        lengths = b["net_input"]["src_lengths"]
        assert torch.equal((b["net_input"]["positions"] != PAD_POSITION).sum(1), lengths)
        assert b["target"].size(1) > a["target"].size(1)


def test_reconstruct_sentence_reaches_the_dataset_and_counts_every_token(mono_data):
    data_dir, _, _ = mono_data
    plain = make_task(data_dir)
    whole = make_task(data_dir, reconstruct_sentence=True)
    for task in (plain, whole):
        task.load_dataset("train")
    pad = whole.source_dictionary.pad()
    for a, b in zip(batches(plain), batches(whole)):
        assert torch.equal(a["net_input"]["src_tokens"], b["net_input"]["src_tokens"])
        # every token of every sentence is a target, and counted
        lengths = b["net_input"]["src_lengths"]
        assert torch.equal(b["target"].ne(pad).sum(1), lengths)
        assert b["ntokens"] == int(lengths.sum()) > a["ntokens"]


def test_ratio_zero_predicts_one_token_per_sentence(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir, mask_ratio=0.0)
    task.load_dataset("train")
    items = by_id(batches(task)).values()
    assert len(items) > 10 and all(len(target) == 1 for _, _, target, _ in items)


def test_sentences_longer_than_the_model_are_filtered_with_fairseqs_message(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir, max_source_positions=10, max_target_positions=1024)
    task.load_dataset("train")
    with pytest.raises(ValueError, match=r"longer than --max-source-positions.*up to \d+ "
                       r"tokens.*--skip-invalid-size-inputs-valid-test"):
        batches(task)
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=400,
                                  max_positions=task.max_positions(),
                                  ignore_invalid_inputs=True)
    lengths = [b["net_input"]["src_lengths"].max() for b in itr.next_epoch_itr()]
    assert max(lengths) <= 10


@pytest.mark.parametrize("overrides,flag", [
    ({"mask_ratio": -0.1}, "--mask-ratio"),
    ({"mask_ratio": 1.5}, "--mask-ratio"),
    ({"random_token_prob": -0.1}, "--random-token-prob"),
    ({"leave_unmasked_prob": 1.2}, "--leave-unmasked-prob"),
    ({"random_token_prob": 0.6, "leave_unmasked_prob": 0.5},
     "--random-token-prob \\+ --leave-unmasked-prob"),
])
def test_bad_masking_options_name_the_flag(mono_data, overrides, flag):
    data_dir, _, _ = mono_data
    with pytest.raises(ValueError, match=flag):
        make_task(data_dir, **overrides)


def test_missing_split_and_dictionary_say_what_to_create(mono_data, tmp_path_factory):
    data_dir, _, _ = mono_data
    task = make_task(data_dir)
    with pytest.raises(FileNotFoundError, match="test.bin"):
        task.load_dataset("test")
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="dict.txt.*fairseq-preprocess"):
        make_task(empty)


def test_language_ids_and_temperature_sampling(tmp_path):
    en = synthetic_sentences(40, 90, prefix="e")
    fr = synthetic_sentences(41, 10, prefix="f")
    binarize_splits(tmp_path, {"train.en": en, "train.fr": fr, "valid.fr": fr})

    assert language_sample_sizes([90, 10], 0.5) == {0: 75, 1: 25}  # 3:1 for sqrt(9):1
    task = make_task(tmp_path, langs="en,fr", lang_sampling_alpha=0.5)
    task.load_dataset("train")
    dataset = task.dataset("train")
    batch = dataset.collater([dataset[i] for i in (0, 89, 90, 99)])
    assert batch["net_input"]["src_lang_id"].tolist() == [0, 0, 1, 1]
    counts = []
    for epoch in (1, 2):
        dataset.set_epoch(epoch)
        sentences = dataset.sentence_index(dataset.ordered_indices())
        counts.append((int((sentences < 90).sum()), int((sentences >= 90).sum())))
        # French (10 sentences) is drawn 25 times: with replacement
        assert set(sentences[sentences >= 90].tolist()) <= set(range(90, 100))
    assert counts == [(75, 25), (75, 25)]
    assert not dataset.can_reuse_epoch_itr_across_epochs  # new draws every epoch
    task.load_dataset("valid.fr")  # one language's split knows its language
    valid = task.dataset("valid.fr")
    assert valid.collater([valid[0]])["net_input"]["src_lang_id"].tolist() == [1]


def test_each_upsampled_copy_of_a_sentence_gets_its_own_mask(tmp_path):
    binarize_splits(tmp_path, {
        "train.en": synthetic_sentences(40, 90, prefix="e", min_len=12),
        "train.fr": synthetic_sentences(41, 10, prefix="f", min_len=12)})
    task = make_task(tmp_path, langs="en,fr", lang_sampling_alpha=0.5)
    task.load_dataset("train")
    dataset = task.dataset("train")
    dataset.set_epoch(3)
    slots = dataset.ordered_indices()
    assert len(set(slots.tolist())) == len(slots) == 100  # no slot twice
    sentences = dataset.sentence_index(slots)
    copies = {}
    for slot, sentence in zip(slots.tolist(), sentences.tolist()):
        copies.setdefault(sentence, []).append(slot)
    repeated = [group for group in copies.values() if len(group) >= 3]
    assert repeated, "25 draws of 10 French sentences repeat some sentence 3 times"
    for group in repeated:
        items = [dataset[slot] for slot in group]
        # the same sentence under every copy ...
        tokens = dataset.dataset[int(dataset.sentence_index(group[0]))]
        for item in items:
            assert torch.equal(item["target"], tokens[item["positions"] - 1])
        spans = {tuple(item["positions"].tolist()) for item in items}
        sources = {tuple(item["source"].tolist()) for item in items}
        # ... but masks of their own (spans of >= 6 of 13+ tokens)
        assert len(spans) > 1 or len(sources) > 1
        # each copy's mask is a pure function of (seed, epoch, slot)
        again = make_task(tmp_path, langs="en,fr", lang_sampling_alpha=0.5)
        again.load_dataset("train")
        again.dataset("train").set_epoch(3)
        for slot, item in zip(group, items):
            assert torch.equal(again.dataset("train")[slot]["source"], item["source"])
    batch = dataset.collater([dataset[slot] for slot in repeated[0]])
    assert batch["net_input"]["src_lang_id"].tolist() == [1] * len(repeated[0])
    # the first copy of every sentence keeps the sentence's own index
    assert {min(group) for group in copies.values()} == set(copies)
