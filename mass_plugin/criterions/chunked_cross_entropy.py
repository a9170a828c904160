"""Label-smoothed cross-entropy over the vocabulary, a chunk of rows at a time.

fairseq's path (``get_normalized_probs`` then ``label_smoothed_nll_loss``)
casts the whole ``tokens x vocabulary`` logit matrix to fp32 and keeps the
fp32 log-probabilities for the backward pass: under ``--fp16`` three times
the memory of the logits, and a full-size copy each way. Here each chunk of
``chunk`` rows is cast to fp32, its loss summed in fp32, and its gradient
with respect to the logits written at once into one tensor of the logits'
own dtype; the backward pass only scales that tensor. No fp32 array over the
whole vocabulary and all tokens exists at any time.

The loss is fairseq's ``label_smoothed_nll_loss`` summed over the tokens
whose target is not ``ignore_index``: with ``eps_i = eps / (V - 1)``,
``(1 - eps - eps_i) * nll + eps_i * smooth``, where ``nll`` is the target's
negative log-probability and ``smooth`` the sum of the negative
log-probabilities of the whole vocabulary.
"""

import torch


def _chunk_loss_and_grad(logits, target, eps, ignore_index):
    """(summed loss, summed nll, d loss / d logits) of one chunk, in fp32."""
    lprobs = torch.log_softmax(logits.float(), dim=-1)
    keep = target.ne(ignore_index)
    safe = target.masked_fill(~keep, 0).unsqueeze(-1)
    nll = -lprobs.gather(-1, safe).squeeze(-1)
    smooth = -lprobs.sum(-1)
    vocab = lprobs.size(-1)
    eps_i = eps / (vocab - 1)
    loss = (1.0 - eps - eps_i) * nll + eps_i * smooth
    keep_f = keep.to(lprobs.dtype).unsqueeze(-1)
    # d/dz of nll is softmax - onehot; of smooth, V * softmax - 1
    probs = lprobs.exp_()
    grad = probs.mul_(1.0 - eps - eps_i + eps_i * vocab).sub_(eps_i)
    grad.scatter_add_(-1, safe, torch.full_like(nll, -(1.0 - eps - eps_i)).unsqueeze(-1))
    grad.mul_(keep_f)
    return (loss * keep).sum(), (nll * keep).sum(), grad


class _ChunkedLabelSmoothedCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, eps, ignore_index, chunk):
        grad = torch.empty_like(logits)
        loss = logits.new_zeros((), dtype=torch.float32)
        nll = logits.new_zeros((), dtype=torch.float32)
        for start in range(0, logits.size(0), chunk):
            rows = slice(start, start + chunk)
            part_loss, part_nll, part_grad = _chunk_loss_and_grad(
                logits[rows], target[rows], eps, ignore_index)
            loss += part_loss
            nll += part_nll
            grad[rows] = part_grad.to(grad.dtype)
        ctx.save_for_backward(grad)
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        (grad,) = ctx.saved_tensors
        return grad * grad_loss.to(grad.dtype), None, None, None, None


def chunked_label_smoothed_ce(logits, target, eps, ignore_index, chunk):
    """(summed loss, summed nll) in fp32 of ``logits`` (N x V, any float dtype)
    against ``target`` (N), ``chunk`` rows at a time; differentiable in
    ``logits`` (the loss only)."""
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of rows, not {chunk}")
    return _ChunkedLabelSmoothedCE.apply(logits, target, eps, ignore_index, chunk)
