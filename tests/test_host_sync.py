"""No host reads of tensor values where fairseq's own code would make the CPU
wait for the GPU: transformer_mass's encoder forward pass and the criteria's
logging outputs. On a CPU nothing waits, so the tests forbid the reads
themselves (a tensor's truth value, .item(), .tolist())."""

import contextlib

import pytest
import torch
from fairseq.models.transformer import TransformerEncoderBase

from conftest import make_task, tiny_model
from mass_plugin.criterions.masked_s2s_loss import MaskedS2SLoss
from mass_plugin.models import sync_free_encoder


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


def test_the_encoder_reads_no_tensor_value_on_the_host(task_and_model, monkeypatch):
    task, model = task_and_model
    src = padded_batch(task)["net_input"]["src_tokens"]
    assert src.eq(task.source_dictionary.pad()).any()
    with no_host_reads(monkeypatch):
        model.encoder(src, return_all_hiddens=True)
    # the same check catches fairseq's forward pass, which tests has_pads per layer
    monkeypatch.setenv(sync_free_encoder.ENV, "1")
    with pytest.raises(AssertionError, match="read on the host"):
        with no_host_reads(monkeypatch):
            model.encoder(src)


@pytest.mark.parametrize("padded", [True, False])
def test_the_encoder_output_is_fairseqs(task_and_model, padded):
    task, model = task_and_model
    src = padded_batch(task)["net_input"]["src_tokens"]
    if not padded:  # every row as long as the longest
        src = src.masked_fill(src.eq(task.source_dictionary.pad()), 7)
    with torch.no_grad():
        ours = model.encoder(src, return_all_hiddens=True)
        theirs = TransformerEncoderBase.forward_scriptable(model.encoder, src, None, True)
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert len(ours[key]) == len(theirs[key]), key
        for a, b in zip(ours[key], theirs[key]):
            if b is None:
                assert a is None, key
            else:
                torch.testing.assert_close(a, b, msg=key)


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
