"""Label-smoothed cross-entropy over the vocabulary, a chunk of rows at a time.

fairseq's path (``get_normalized_probs`` then ``label_smoothed_nll_loss``)
casts the whole ``tokens x vocabulary`` logit matrix to fp32 and keeps the
fp32 log-probabilities for the backward pass: under ``--fp16`` three times
the memory of the logits, and a full-size copy each way. Here the forward
pass casts one chunk of ``chunk`` rows at a time to fp32 and sums its loss
in fp32; the backward pass computes each chunk's gradient again in fp32,
multiplies it by the incoming gradient (under --fp16 the loss scale) and
only then writes it in the logits' own dtype, as fairseq's path rounds its
scaled fp32 gradient. No fp32 array over the whole vocabulary and all
tokens exists at any time. (Storing the gradient in half precision before
the loss scale is applied would round probabilities below ~6e-8 to zero.)

The loss is fairseq's ``label_smoothed_nll_loss`` summed over the tokens
whose target is not ``ignore_index``: with ``eps_i = eps / (V - 1)``,
``(1 - eps - eps_i) * nll + eps_i * smooth``, where ``nll`` is the target's
negative log-probability and ``smooth`` the sum of the negative
log-probabilities of the whole vocabulary.
"""

import torch


def _chunk_loss(logits, target, eps, ignore_index):
    """(summed loss, summed nll) of one chunk, in fp32."""
    lprobs = torch.log_softmax(logits.float(), dim=-1)
    keep = target.ne(ignore_index)
    safe = target.masked_fill(~keep, 0).unsqueeze(-1)
    nll = -lprobs.gather(-1, safe).squeeze(-1)
    eps_i = eps / (lprobs.size(-1) - 1)
    loss = (1.0 - eps - eps_i) * nll + eps_i * -lprobs.sum(-1)
    return (loss * keep).sum(), (nll * keep).sum()


def _chunk_grad(logits, target, eps, ignore_index):
    """d loss / d logits of one chunk, in fp32: d nll / dz is softmax -
    onehot, d smooth / dz is V * softmax - 1."""
    probs = torch.log_softmax(logits.float(), dim=-1).exp_()  # as the forward pass rounds
    keep = target.ne(ignore_index)
    safe = target.masked_fill(~keep, 0).unsqueeze(-1)
    vocab = probs.size(-1)
    eps_i = eps / (vocab - 1)
    grad = probs.mul_(1.0 - eps - eps_i + eps_i * vocab).sub_(eps_i)
    grad.scatter_add_(-1, safe, torch.full(safe.shape, -(1.0 - eps - eps_i),
                                           dtype=grad.dtype, device=grad.device))
    return grad.mul_(keep.to(grad.dtype).unsqueeze(-1))


class _ChunkedLabelSmoothedCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, eps, ignore_index, chunk):
        loss = logits.new_zeros((), dtype=torch.float32)
        nll = logits.new_zeros((), dtype=torch.float32)
        for start in range(0, logits.size(0), chunk):
            rows = slice(start, start + chunk)
            part_loss, part_nll = _chunk_loss(logits[rows], target[rows], eps, ignore_index)
            loss += part_loss
            nll += part_nll
        ctx.save_for_backward(logits, target)
        ctx.eps, ctx.ignore_index, ctx.chunk = eps, ignore_index, chunk
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        logits, target = ctx.saved_tensors
        grad = torch.empty_like(logits)
        for start in range(0, logits.size(0), ctx.chunk):
            rows = slice(start, start + ctx.chunk)
            part = _chunk_grad(logits[rows], target[rows], ctx.eps, ctx.ignore_index)
            grad[rows] = part.mul_(grad_loss.float()).to(grad.dtype)
        return grad, None, None, None, None


def chunked_label_smoothed_ce(logits, target, eps, ignore_index, chunk):
    """(summed loss, summed nll) in fp32 of ``logits`` (N x V, any float dtype)
    against ``target`` (N), ``chunk`` rows at a time; differentiable in
    ``logits`` (the loss only)."""
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of rows, not {chunk}")
    return _ChunkedLabelSmoothedCE.apply(logits, target, eps, ignore_index, chunk)
