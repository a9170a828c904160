"""The plugin's attention (mass_plugin/models/attention.py): --attention sdpa
computes what fairseq's path computes (the same loss and gradients on MASS
and translation batches, padded and not, with <mask> states hidden or not;
the same attention weights when scoring; the same beam search); the
decoder's self-attention is causal because it was built so, with or
without a padding mask; one host read a training forward.

The two paths are compared in float64, where the comparison does not
depend on how a machine orders its sums: fairseq's path rounds its
attention probabilities to float32 (utils.softmax), everything else is
float64. Each result may therefore differ from the other by a few float32
roundings of the probabilities (relative 2**-24 each), far below the 1e-6
allowed here of each output's largest magnitude (of the largest gradient,
for gradients: some, such as the key projections' biases, are zero in exact
arithmetic and hold only float64 rounding); a wrong mask or a dropped term
moves them by orders of magnitude more."""

import pytest
import torch

from conftest import assert_decodes_incrementally, tiny_model
from mass_plugin.models.attention import MassAttention, future_mask

NO_DROPOUT = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
RELATIVE = 1e-6  # of the largest magnitude compared; see the module docstring


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
    parameter's gradient, in training mode, in float64."""
    model.double().train()
    model.zero_grad()
    logits = model(**sample["net_input"])[0]
    loss = torch.nn.functional.cross_entropy(
        logits.view(-1, logits.size(-1)), sample["target"].view(-1), ignore_index=pad,
        reduction="sum")
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


def assert_close(expected, actual, what, scale=None):
    """``actual`` within RELATIVE of ``scale`` (``expected``'s largest
    magnitude by default) from ``expected``, everywhere."""
    gap = (expected - actual).abs().max().item()
    scale = expected.abs().max().item() if scale is None else scale
    assert gap <= RELATIVE * scale, f"{what}: {gap:.3g} apart, against {scale:.3g}"


def assert_same_training(task, sample, **options):
    pad = task.source_dictionary.pad()
    fairseq = tiny_model(task, **NO_DROPOUT, **options)
    sdpa = tiny_model(task, attention="sdpa", **NO_DROPOUT, **options)
    assert all(module.fused for module in sdpa.modules() if isinstance(module, MassAttention))
    loss0, grads0 = loss_and_grads(fairseq, sample, pad)
    loss1, grads1 = loss_and_grads(sdpa, sample, pad)
    assert_close(loss0, loss1, "loss")
    assert grads0.keys() == grads1.keys()
    largest = max(grad.abs().max().item() for grad in grads0.values())
    for name in grads0:
        assert_close(grads0[name], grads1[name], name, scale=largest)


@pytest.mark.parametrize("indices", [range(8), range(3, 4), [5, 17, 40, 41, 90]])
def test_sdpa_trains_mass_batches_as_fairseqs_path(task, indices):
    assert_same_training(task, mass_batch(task, indices))


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
        model = tiny_model(task, attention=path).double()
        with torch.no_grad():
            outputs.append(model(**sample["net_input"]))
    (logits0, extra0), (logits1, extra1) = outputs
    real = sample["target"].ne(task.source_dictionary.pad())  # padding positions may differ
    assert_close(logits0[real], logits1[real], "logits")
    assert extra0["attn"][0] is not None
    assert_close(extra0["attn"][0][real], extra1["attn"][0][real], "alignment")


def test_sdpa_decodes_incrementally_as_the_full_decoder(task):
    model = tiny_model(task, attention="sdpa")
    sample = translation_batch(task, [12, 5, 9], [8, 8, 8])
    assert_decodes_incrementally(model, *(sample["net_input"][k] for k in
                                          ("src_tokens", "src_lengths", "prev_output_tokens")))


@pytest.mark.parametrize("options", [{}, dict(compile_layers=True),
                                     dict(hide_mask_states="encoder"),
                                     dict(embedding_style="fairseq")])
def test_sdpa_reaches_every_attention_whatever_else_is_chosen(task, options):
    model = tiny_model(task, attention="sdpa", **options)
    attentions = [m for m in model.modules() if isinstance(m, MassAttention)]
    layers = len(model.encoder.layers) + 2 * len(model.decoder.layers)
    assert len(attentions) == layers and all(a.fused for a in attentions)
    causal = [layer.self_attn.is_causal for layer in model.decoder.layers]
    assert all(causal) and not any(layer.self_attn.is_causal for layer in model.encoder.layers)


@pytest.mark.parametrize("fused", [False, True])
def test_a_causal_attention_given_padding_stays_causal(fused):
    """The decoder's self-attention is causal because it was built so: with a
    padding mask too (which the kernel cannot take beside its own
    causality), a query still sees no later position."""
    torch.manual_seed(0)
    attention = MassAttention(8, 2, self_attention=True, fused=fused, is_causal=True).double()
    x = torch.randn(5, 2, 8, dtype=torch.float64)  # T x B x C
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    out = attention(x, x, x, key_padding_mask=padding, need_weights=False)[0]
    plain = MassAttention(8, 2, self_attention=True).double()
    plain.load_state_dict(attention.state_dict())
    expected = plain(x, x, x, key_padding_mask=padding, need_weights=False,
                     attn_mask=future_mask(x))[0]
    real = ~padding.t()  # T x B: what padding positions compute is never read
    assert_close(expected[real], out[real], "causal attention with padding")
    # and the first position depends on nothing after it
    changed = x.clone()
    changed[1:] += 1.0
    again = attention(changed, changed, changed, key_padding_mask=padding,
                      need_weights=False)[0]
    assert torch.equal(out[0], again[0])


def test_only_a_self_attention_can_be_built_causal():
    with pytest.raises(ValueError, match="only a self-attention can be causal"):
        MassAttention(8, 2, encoder_decoder_attention=True, is_causal=True)


def test_full_context_alignment_is_refused(task):
    model = tiny_model(task, attention="sdpa")
    sample = translation_batch(task, [6, 6], [5, 5])
    encoder_out = model.encoder(sample["net_input"]["src_tokens"])
    with pytest.raises(ValueError, match="full_context_alignment is not supported"):
        model.decoder(sample["net_input"]["prev_output_tokens"], encoder_out=encoder_out,
                      full_context_alignment=True)


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
    model = tiny_model(task, attention="sdpa").train()
    assert count_host_reads(monkeypatch, lambda: model(**sample["net_input"])) == 1


def test_sdpa_refuses_left_padded_decoder_inputs(task):
    task.cfg.left_pad_target = True
    with pytest.raises(ValueError, match="--attention sdpa .* padded on the right"):
        tiny_model(task, attention="sdpa")
