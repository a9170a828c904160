"""A truncated .bin is reported with its name and how to rebuild it."""

import pytest

from conftest import binarize_splits, make_task, synthetic_sentences
from mass_plugin.data.binarized_files import BinarizedDataError, check_binarized
from mass_plugin.tasks.unsupervised_translation import (
    UnsupervisedTranslationConfig,
    UnsupervisedTranslationTask,
)
from mass_tools.binarize import check_outputs
from mass_tools.textio import InputError


def cut(path, size=100):
    data = path.read_bytes()
    assert len(data) > size
    path.write_bytes(data[:size])


def test_an_intact_split_passes_and_a_cut_one_is_named(mono_data):
    data_dir, _, _ = mono_data
    check_binarized(str(data_dir / "train"), rebuild="x")  # intact: no error
    check_binarized(str(data_dir / "absent"), rebuild="x")  # missing: fairseq's message
    cut(data_dir / "train.bin")
    with pytest.raises(BinarizedDataError, match="truncated") as err:
        check_binarized(str(data_dir / "train"), rebuild="rebuild it so")
    message = str(err.value)
    assert str(data_dir / "train.bin") in message and "100 bytes" in message
    assert "rebuild it so" in message


def test_masked_s2s_names_the_truncated_file_and_the_command(mono_data):
    data_dir, _, _ = mono_data
    cut(data_dir / "valid.bin")
    task = make_task(data_dir)
    task.load_dataset("train")  # the intact split still loads
    with pytest.raises(BinarizedDataError) as err:
        task.load_dataset("valid")
    assert str(data_dir / "valid.bin") in str(err.value)
    assert "fairseq-preprocess --only-source" in str(err.value)


def test_a_longer_bin_than_its_index_is_refused_too(mono_data):
    data_dir, _, _ = mono_data
    with open(data_dir / "train.bin", "ab") as f:
        f.write(b"\0" * 8)
    with pytest.raises(BinarizedDataError, match="longer than its index"):
        make_task(data_dir).load_dataset("train")


def test_unsupervised_translation_names_the_truncated_pair_file(tmp_path):
    en = synthetic_sentences(1, 60, prefix="e")
    fr = synthetic_sentences(2, 60, prefix="f")
    binarize_splits(tmp_path, {"train.en": en, "train.fr": fr,
                               "test.en-fr.en": en[:20], "test.en-fr.fr": fr[:20]})
    cut(tmp_path / "test.en-fr.en.bin")
    cfg = UnsupervisedTranslationConfig(data=str(tmp_path), langs="en,fr", seed=1,
                                        train_subset="train", dataset_impl=None)
    task = UnsupervisedTranslationTask.setup_task(cfg)
    with pytest.raises(BinarizedDataError) as err:
        task.load_dataset("test")
    assert str(tmp_path / "test.en-fr.en.bin") in str(err.value)
    assert "mass-binarize --langs en,fr --pair en-fr --test" in str(err.value)


def test_binarize_checks_what_it_wrote(mono_data):
    data_dir, _, _ = mono_data
    check_outputs(str(data_dir))
    cut(data_dir / "train.bin")
    with pytest.raises(InputError, match="train.bin is truncated"):
        check_outputs(str(data_dir))
