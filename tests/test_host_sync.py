"""The loss reads no tensor value on the host: on a GPU such a read (a
tensor's truth value, .item(), .tolist()) makes the CPU wait for the forward
pass before it may issue the backward pass. On a CPU nothing waits, so the
test forbids the reads themselves."""

import contextlib

import pytest
import torch

from conftest import make_task, tiny_model
from mass_plugin.criterions.masked_s2s_loss import MaskedS2SLoss


@contextlib.contextmanager
def no_host_reads(monkeypatch):
    """Within the block, reading a tensor's value on the host raises."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("a tensor's value was read on the host")

    with monkeypatch.context() as patch:
        for name in ("__bool__", "item", "tolist"):
            patch.setattr(torch.Tensor, name, refuse)
        yield


@pytest.fixture
def task_and_model(mono_data):
    task = make_task(mono_data[0])
    task.load_dataset("train")
    return task, tiny_model(task)


def padded_batch(task, n=8):
    dataset = task.dataset("train")
    return dataset.collater([dataset[i] for i in range(n)])


def test_the_loss_reads_no_tensor_value_on_the_host(task_and_model, monkeypatch):
    task, model = task_and_model
    sample = padded_batch(task)
    logits = model(**sample["net_input"])  # fairseq's decoder reads one value
    criterion = MaskedS2SLoss(task, sentence_avg=False, label_smoothing=0.1)
    model.forward = lambda **net_input: logits
    with no_host_reads(monkeypatch):
        _, _, log = criterion(model, sample)
    in_span = sample["target"].ne(task.target_dictionary.pad())
    assert int(log["span_total"]) == int(in_span.sum())
    correct = logits[0].argmax(-1).eq(sample["target"]).logical_and(in_span).sum()
    assert int(log["span_correct"]) == int(correct)
