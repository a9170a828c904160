"""Every batch the plugin's tasks build can be pinned and copied to a GPU.

fairseq's data loader pins each batch whenever CUDA is available: every
tensor is copied into fresh page-locked memory of the same layout. A tensor
whose elements share memory (an ``expand``-ed one) cannot be copied so, and
training stops before its first update. These tests make the same copy on
the CPU, for every tensor of every batch of every task and split."""

import pytest
import torch

from conftest import (
    binarize_bilingual,
    binarize_splits,
    make_task,
    synthetic_sentences,
    tiny_model,
)
from mass_plugin.tasks.unsupervised_translation import (
    UnsupervisedTranslationConfig,
    UnsupervisedTranslationTask,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """{"mono": one language's text, "bi": en and fr text (non-parallel) and a
    parallel valid set}, each binarized with its own dictionary."""
    root = tmp_path_factory.mktemp("batches")
    en = synthetic_sentences(1, 120, prefix="e")
    (root / "mono").mkdir()
    binarize_splits(root / "mono", {"train": en, "valid": en[:30]})
    binarize_bilingual(root / "bi")
    return root


def tensors(value, path="batch"):
    """(path, tensor) for every tensor in a batch, however nested."""
    if torch.is_tensor(value):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from tensors(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from tensors(item, f"{path}[{i}]")


def assert_pinnable(batch, where):
    found = list(tensors(batch))
    assert found, f"{where}: no tensors"
    for path, tensor in found:
        assert torch._debug_has_internal_overlap(tensor) == 0, (
            f"{where}: {path} (shape {tuple(tensor.shape)}, stride {tensor.stride()}) "
            "has elements that share memory")
        # what pin_memory does: a fresh tensor of the same layout, then a copy
        torch.empty_strided(tensor.size(), tensor.stride(), dtype=tensor.dtype).copy_(tensor)


def all_batches(task, split):
    task.load_dataset(split)
    iterator = task.get_batch_iterator(
        task.dataset(split), max_tokens=200, max_positions=task.max_positions(),
        ignore_invalid_inputs=True, seed=1, num_workers=0)
    batches = list(iterator.next_epoch_itr(shuffle=False))
    assert len(batches) > 1
    return batches


def unsupervised_task(data, **overrides):
    cfg = UnsupervisedTranslationConfig(data=str(data / "bi"), langs="en,fr", seed=1,
                                        train_subset="train", dataset_impl="mmap",
                                        **overrides)
    return UnsupervisedTranslationTask.setup_task(cfg)


@pytest.mark.parametrize("langs,split", [
    (None, "train"), (None, "valid"), ("en,fr", "train"), ("en,fr", "valid.fr"),
])
def test_masked_s2s_batches_can_be_pinned(data, langs, split):
    task = make_task(data / ("bi" if langs else "mono"), langs=langs)
    for batch in all_batches(task, split):
        assert_pinnable(batch, f"masked_s2s --langs {langs} {split}")


@pytest.mark.parametrize("split,direction", [
    ("train", None),        # monolingual, with the raw sentences
    ("valid.en", None),     # the MASS loss of one language
    ("valid", None),        # parallel, both directions
    ("valid", ("fr", "en")),  # parallel, one direction (-s/-t)
])
def test_unsupervised_translation_batches_can_be_pinned(data, split, direction):
    source, target = direction or (None, None)
    task = unsupervised_task(data, source_lang=source, target_lang=target)
    batches = all_batches(task, split)
    for batch in batches:
        assert_pinnable(batch, f"unsupervised_translation {split} {direction}")
    if split == "train":  # the batches each update builds from a training batch
        model = tiny_model(task, max_source_positions=256, max_target_positions=256)
        assert_pinnable(task.denoising_sample(batches[0], update_num=1), "denoising")
        assert_pinnable(task.backtranslation_sample(model, batches[0]), "back-translation")


def test_inference_batches_can_be_pinned(data):
    task = unsupervised_task(data, source_lang="en", target_lang="fr")
    tokens = [torch.tensor([5, 6, 7, 2]), torch.tensor([8, 9, 2])]
    dataset = task.build_dataset_for_inference(tokens, [4, 3])
    batch = dataset.collater([dataset[0], dataset[1]])
    assert batch["net_input"]["tgt_lang_id"].tolist() == [1, 1]
    assert_pinnable(batch, "fairseq-interactive batch")
