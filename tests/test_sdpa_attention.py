"""--attention sdpa computes what fairseq's attention paths compute: the same
loss and gradients on MASS batches and on translation batches, padded and
not, with <mask> states hidden or not; the same attention weights when
scoring; the same beam search; one host read a training forward instead of
fairseq's one per encoder layer plus one."""

import pytest
import torch

from conftest import assert_decodes_incrementally, tiny_model
from mass_plugin.models.sdpa_attention import SdpaAttention

NO_DROPOUT = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)


@pytest.fixture
def task(mass_task):
    return mass_task


def mass_batch(task, indices):
    dataset = task.dataset("train")
    return dataset.collater([dataset[i] for i in indices])


def translation_batch(task, src_lengths, tgt_lengths, seed=1):
    """A batch as fairseq's translation task makes it: sources padded on the
    left, decoder inputs and targets on the right."""
    d = task.source_dictionary
    g = torch.Generator().manual_seed(seed)
    n, src_len, tgt_len = len(src_lengths), max(src_lengths), max(tgt_lengths)
    src = torch.full((n, src_len), d.pad())
    target = torch.full((n, tgt_len), d.pad())
    prev = torch.full((n, tgt_len), d.pad())
    for i, (s, t) in enumerate(zip(src_lengths, tgt_lengths)):
        src[i, src_len - s:] = torch.randint(d.nspecial, task.mask_idx, (s,), generator=g)
        src[i, -1] = d.eos()
        target[i, :t] = torch.randint(d.nspecial, task.mask_idx, (t,), generator=g)
        target[i, t - 1] = d.eos()
        prev[i, 0], prev[i, 1:t] = d.eos(), target[i, :t - 1]
    net_input = dict(src_tokens=src, src_lengths=torch.tensor(src_lengths),
                     prev_output_tokens=prev)
    return dict(net_input=net_input, target=target)


def loss_and_grads(model, sample, pad):
    """The summed cross-entropy at the target's real positions and every
    parameter's gradient, in training mode."""
    model.train()
    model.zero_grad()
    logits = model(**sample["net_input"])[0]
    loss = torch.nn.functional.cross_entropy(
        logits.view(-1, logits.size(-1)), sample["target"].view(-1), ignore_index=pad,
        reduction="sum")
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


def assert_same_training(task, sample, **options):
    pad = task.source_dictionary.pad()
    fairseq = tiny_model(task, **NO_DROPOUT, **options)
    sdpa = tiny_model(task, attention="sdpa", **NO_DROPOUT, **options)
    assert isinstance(sdpa.decoder.layers[-1].encoder_attn, SdpaAttention)
    loss0, grads0 = loss_and_grads(fairseq, sample, pad)
    loss1, grads1 = loss_and_grads(sdpa, sample, pad)
    assert torch.allclose(loss0, loss1, rtol=1e-5, atol=0), (loss0, loss1)
    assert grads0.keys() == grads1.keys()
    for name in grads0:
        assert torch.allclose(grads0[name], grads1[name], rtol=1e-4, atol=1e-6), name


@pytest.mark.parametrize("indices", [range(8), range(3, 4), [5, 17, 40, 41, 90]])
def test_sdpa_trains_mass_batches_as_fairseqs_path(task, indices):
    sample = mass_batch(task, indices)
    assert_same_training(task, sample)


@pytest.mark.parametrize("hide", ["cross", "encoder"])
def test_sdpa_with_mask_states_hidden(task, hide):
    assert_same_training(task, mass_batch(task, range(8)), hide_mask_states=hide)


@pytest.mark.parametrize("src,tgt", [([9, 9, 9], [7, 7, 7]), ([12, 5, 9, 3], [4, 11, 6, 2]),
                                     ([6], [10])])
def test_sdpa_trains_translation_batches_as_fairseqs_path(task, src, tgt):
    assert_same_training(task, translation_batch(task, src, tgt))


def test_sdpa_gives_fairseqs_alignment_when_scoring(task):
    sample = translation_batch(task, [12, 5, 9], [4, 11, 6])
    outputs = []
    for path in ("fairseq", "sdpa"):
        model = tiny_model(task, attention=path)
        with torch.no_grad():
            outputs.append(model(**sample["net_input"]))
    (logits0, extra0), (logits1, extra1) = outputs
    real = sample["target"].ne(task.source_dictionary.pad())  # padding positions may differ
    assert torch.allclose(logits0[real], logits1[real], atol=1e-5)
    assert extra0["attn"][0] is not None
    assert torch.allclose(extra0["attn"][0][real], extra1["attn"][0][real], atol=1e-6)


def test_sdpa_decodes_incrementally_as_the_full_decoder(task):
    model = tiny_model(task, attention="sdpa")
    sample = translation_batch(task, [12, 5, 9], [8, 8, 8])
    assert_decodes_incrementally(model, *(sample["net_input"][k] for k in
                                          ("src_tokens", "src_lengths", "prev_output_tokens")))


def count_host_reads(monkeypatch, run):
    """How many times ``run()`` reads a tensor's value on the host."""
    reads = []
    with monkeypatch.context() as patch:
        for name in ("__bool__", "item", "tolist"):
            original = getattr(torch.Tensor, name)

            def counted(self, *args, _original=original, **kwargs):
                reads.append(1)
                return _original(self, *args, **kwargs)

            patch.setattr(torch.Tensor, name, counted)
        run()
    return len(reads)


def test_sdpa_reads_the_padding_once_a_forward(task, monkeypatch):
    sample = mass_batch(task, range(8))
    reads = {}
    for path in ("fairseq", "sdpa"):
        model = tiny_model(task, attention=path).train()
        reads[path] = count_host_reads(monkeypatch, lambda: model(**sample["net_input"]))
    # fairseq: one a layer of the encoder and one in the decoder (and one of
    # a CPU tensor it makes to ask whether the device is a TPU)
    assert reads["fairseq"] >= len(model.encoder.layers) + 1
    assert reads["sdpa"] == 1


def test_sdpa_refuses_left_padded_decoder_inputs(task):
    task.cfg.left_pad_target = True
    with pytest.raises(ValueError, match="--attention sdpa .* padded on the right"):
        tiny_model(task, attention="sdpa")
