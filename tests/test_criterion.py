"""masked_s2s_loss against a hand-computed probability table."""

import math
from argparse import Namespace

import pytest
import torch
from fairseq.logging import metrics

from mass_plugin.criterions.masked_s2s_loss import MaskedS2SLoss

PAD = 1
# vocabulary of 5: probabilities of each decoder step (batch of 2, k <= 3)
PROBS = torch.tensor([
    [[0.1, 0.0, 0.6, 0.2, 0.1], [0.2, 0.0, 0.2, 0.5, 0.1], [0.5, 0.0, 0.1, 0.1, 0.3]],
    [[0.3, 0.0, 0.3, 0.3, 0.1], [0.1, 0.0, 0.1, 0.1, 0.7], [0.2, 0.2, 0.2, 0.2, 0.2]],
])
TARGET = torch.tensor([[2, 3, 4], [0, 4, PAD]])  # the last step of row 2 is padding
# -log p(target) of the 5 real span tokens, read off the table
NLL = [-math.log(0.6), -math.log(0.5), -math.log(0.3), -math.log(0.3), -math.log(0.7)]
# argmax 2, 3, 0 | 0 (first of a tie), 4 -> 4 of 5 correct
CORRECT = 4


class TableModel(torch.nn.Module):
    """Returns the logits of PROBS whatever the input."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.dtype = dtype

    def forward(self, **net_input):
        return (PROBS.clamp_min(1e-12).log().to(self.dtype), {})

    def get_normalized_probs(self, net_output, log_probs):
        # fairseq's decoder does its log-softmax in fp32
        return torch.log_softmax(net_output[0].float(), dim=-1)

    def get_targets(self, sample, net_output):
        return sample["target"]


def criterion(label_smoothing=0.0, sentence_avg=False, loss_chunk_tokens=0):
    task = Namespace(target_dictionary=Namespace(pad=lambda: PAD))
    return MaskedS2SLoss(task, sentence_avg=sentence_avg, label_smoothing=label_smoothing,
                         loss_chunk_tokens=loss_chunk_tokens)


SAMPLE = {"net_input": {}, "target": TARGET, "ntokens": 5, "nsentences": 2}


def test_loss_is_the_sum_of_span_token_nll_and_ntokens_excludes_padding():
    loss, sample_size, log = criterion()(TableModel(), SAMPLE)
    assert loss.item() == pytest.approx(sum(NLL), rel=1e-5)
    assert log["nll_loss"].item() == pytest.approx(sum(NLL), rel=1e-5)
    assert sample_size == log["ntokens"] == 5
    assert log["span_total"] == 5 and log["span_correct"] == CORRECT


def test_label_smoothing_mixes_in_the_uniform_distribution():
    eps, vocab = 0.1, 5
    loss, _, log = criterion(label_smoothing=eps)(TableModel(), SAMPLE)
    logp = PROBS.clamp_min(1e-12).log().log_softmax(-1)
    real = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    smooth = sum(-logp[b, t].sum().item() for b, t in real)
    eps_i = eps / (vocab - 1)
    expected = (1 - eps - eps_i) * sum(NLL) + eps_i * smooth
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert log["nll_loss"].item() == pytest.approx(sum(NLL), rel=1e-5)


class LogitModel(TableModel):
    """Returns the logits it holds, a leaf tensor whose gradient the test reads."""

    def __init__(self, logits):
        super().__init__(logits.dtype)
        self.logits = logits

    def forward(self, **net_input):
        return (self.logits, {})


@pytest.mark.parametrize("eps,chunk", [(0.0, 1), (0.1, 2), (0.1, 4), (0.2, 100)])
def test_the_chunked_loss_equals_fairseqs_in_value_and_gradient(eps, chunk):
    """--loss-chunk-tokens: the same loss, nll, span accuracy and gradient
    with respect to the logits (padding included), chunk after chunk."""
    torch.manual_seed(0)
    logits = torch.randn(6, 7, 11, dtype=torch.float64)
    target = torch.randint(0, 11, (6, 7))
    target[0, 4:] = PAD
    target[3, 1:] = PAD
    sample = {"net_input": {}, "target": target, "ntokens": int(target.ne(PAD).sum()),
              "nsentences": 6}
    results = []
    for chunk_tokens in (0, chunk):
        leaf = logits.clone().requires_grad_()
        loss, _, log = criterion(eps, loss_chunk_tokens=chunk_tokens)(LogitModel(leaf), sample)
        loss.backward()
        results.append((loss.item(), log["nll_loss"].item(), log["span_correct"].item(),
                        leaf.grad))
    (loss0, nll0, correct0, grad0), (loss1, nll1, correct1, grad1) = results
    assert loss1 == pytest.approx(loss0, rel=1e-6) and nll1 == pytest.approx(nll0, rel=1e-6)
    assert correct1 == correct0
    assert torch.allclose(grad1, grad0, atol=1e-6)
    assert grad1[0, 4:].abs().sum() == 0  # padding gets no gradient


def test_the_chunked_loss_keeps_the_logits_dtype_and_sums_in_fp32():
    logits = (torch.randn(4, 3, 11) * 3).half().requires_grad_()
    target = torch.randint(0, 11, (4, 3))
    sample = {"net_input": {}, "target": target, "ntokens": 12, "nsentences": 4}
    loss, _, _ = criterion(0.1, loss_chunk_tokens=5)(LogitModel(logits), sample)
    reference, _, _ = criterion(0.1)(LogitModel(logits.detach()), sample)
    assert loss.dtype == torch.float32 and loss.item() == pytest.approx(reference.item(), 1e-4)
    loss.backward()
    assert logits.grad.dtype == torch.float16 and torch.isfinite(logits.grad).all()
    with pytest.raises(ValueError, match="--loss-chunk-tokens -1"):
        criterion(loss_chunk_tokens=-1)


def test_sentence_avg_uses_the_number_of_sentences():
    _, sample_size, _ = criterion(sentence_avg=True)(TableModel(), SAMPLE)
    assert sample_size == 2


def test_half_precision_logits_give_an_fp32_loss():
    loss, _, _ = criterion()(TableModel(torch.float16), SAMPLE)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(sum(NLL), rel=1e-3)


def test_logged_metrics_are_summable_and_report_span_accuracy():
    assert MaskedS2SLoss.logging_outputs_can_be_summed()
    _, _, log = criterion()(TableModel(), SAMPLE)
    with metrics.aggregate() as agg:
        MaskedS2SLoss.reduce_metrics([log, log])  # e.g. two workers
    values = agg.get_smoothed_values()
    assert values["span_acc"] == pytest.approx(100.0 * CORRECT / 5, abs=1e-3)
    # loss per token in base 2, as fairseq reports it
    assert values["loss"] == pytest.approx(sum(NLL) / 5 / math.log(2), abs=1e-3)
    assert "_span_total" not in values  # bookkeeping is not printed


def test_metrics_accept_counts_summed_across_ranks_as_tensors():
    """Distributed training all-reduces logging outputs into tensors."""
    _, _, log = criterion()(TableModel(), SAMPLE)
    summed = {k: torch.tensor(float(v)) for k, v in log.items()}
    with metrics.aggregate() as agg:
        MaskedS2SLoss.reduce_metrics([summed])
    assert agg.get_smoothed_values()["span_acc"] == pytest.approx(100.0 * CORRECT / 5)


def test_encoder_mlm_loss_predicts_masked_tokens_from_the_encoder_alone(mono_data):
    from conftest import make_task, tiny_model
    from mass_plugin.criterions.encoder_mlm_loss import EncoderMLMLoss

    data_dir, _, _ = mono_data
    batches = {}
    for feed in (False, True):
        task = make_task(data_dir, mask_mode="discrete", mask_ratio=0.15, feed_unmasked=feed)
        task.load_dataset("valid")
        batches[feed] = next(iter(task.get_batch_iterator(
            task.dataset("valid"), max_tokens=2000).next_epoch_itr(shuffle=False)))
    model = tiny_model(task)
    mlm = EncoderMLMLoss(task)
    sample = batches[False]
    loss, sample_size, log = mlm(model, sample)

    # by hand: encoder state at each masked position -> shared output projection
    net = sample["net_input"]
    states = model.encoder(net["src_tokens"], src_lengths=net["src_lengths"])[
        "encoder_out"][0].transpose(0, 1)
    expected, count = 0.0, 0
    for row in range(states.size(0)):
        for pos, tgt in zip(net["positions"][row], sample["target"][row]):
            if pos > 0:
                logits = states[row, pos - 1] @ model.encoder.embed_tokens.weight.t()
                expected -= torch.log_softmax(logits.float(), -1)[tgt].item()
                count += 1
    assert count == sample_size == sample["ntokens"] > 0
    assert loss.item() == pytest.approx(expected, rel=1e-4)
    # the same masked tokens fed with every position (--feed-unmasked): same loss
    assert mlm(model, batches[True])[0].item() == pytest.approx(loss.item(), rel=1e-5)

    # gradients reach the encoder, not the decoder layers
    model.zero_grad()
    loss.backward()
    assert model.encoder.layers[0].fc1.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.decoder.layers.parameters())


def test_the_chunked_loss_scales_its_half_precision_gradient_as_fairseq_does():
    """Under --fp16 the backward pass gets the loss scale as its incoming
    gradient. fairseq's path multiplies its fp32 gradient by it and rounds to
    half precision once; so must the chunked loss. Rounding the unscaled
    gradient to half precision first would make every probability below
    ~6e-8 (half's smallest subnormal) a zero gradient."""
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 11)
    # token 7: probability 1e-8, a gradient half precision rounds to zero
    # unless it is scaled first
    others = torch.cat([logits[:, :, :7], logits[:, :, 8:]], dim=-1)
    logits[:, :, 7] = others.logsumexp(-1) + torch.tensor(1e-8).log()
    logits = logits.half()
    target = torch.randint(0, 7, (4, 3))
    sample = {"net_input": {}, "target": target, "ntokens": 12, "nsentences": 4}
    scale = 2.0 ** 14
    grads = []
    for chunk_tokens in (0, 5):
        leaf = logits.clone().requires_grad_()
        loss, _, _ = criterion(0.0, loss_chunk_tokens=chunk_tokens)(LogitModel(leaf), sample)
        (loss * scale).backward()
        grads.append(leaf.grad)
    fairseq, chunked = grads
    assert fairseq[:, :, 7].abs().min() > 0  # scaled first, the tiny gradients survive
    assert torch.equal(chunked[:, :, 7] != 0, fairseq[:, :, 7] != 0)
    assert torch.allclose(chunked.float(), fairseq.float(), rtol=1e-3, atol=1e-3)
