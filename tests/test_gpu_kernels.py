"""GELU in the model's precision gives fairseq's values (on the CPU); on a
GPU, --attention sdpa and --compile-layers (inductor) follow fairseq's path
in fp16 and bf16, on sources padded and not (the flash kernel runs only on
unpadded batches), for heads of 16, 64 and 128 dimensions, and with dropout
on they train as well as fairseq's path. Their CPU tests are
test_attention.py and test_compiled_layers.py."""

import pytest
import torch
import torch.nn.functional as F
from fairseq import utils

from conftest import tiny_model

NO_DROPOUT = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)


def on_gpu(test):
    """The marks of a GPU test: skipped without one."""
    for mark in (pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
                 pytest.mark.gpu, pytest.mark.slow):
        test = mark(test)
    return test


@pytest.fixture
def task(mass_task):
    return mass_task


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_gelu_in_the_model_precision_gives_fairseqs_values(dtype):
    """torch's GELU kernel computes in fp32 inside and rounds once, as
    fairseq's fp32 GELU (which converts its input and output) does."""
    x = torch.linspace(-6, 6, 4097).to(dtype)
    assert torch.equal(F.gelu(x), utils.get_activation_fn("gelu")(x))


def test_gelu_runs_in_the_model_precision(task):
    model = tiny_model(task, activation_fn="gelu")
    assert all(layer.activation_fn is F.gelu
               for layer in list(model.encoder.layers) + list(model.decoder.layers))
    relu = tiny_model(task, activation_fn="relu")
    assert relu.encoder.layers[0].activation_fn is not F.gelu


def batch(task, padded, n=4, length=11):
    """Source and decoder input; the sources padded on the left to different
    lengths, or all of the same length."""
    d = task.source_dictionary
    g = torch.Generator().manual_seed(1)
    src = torch.randint(d.nspecial, task.mask_idx, (n, length), generator=g)
    src[:, -1] = d.eos()
    lengths = torch.tensor([length - 3 * i if padded else length for i in range(n)])
    for i, kept in enumerate(lengths):
        src[i, :length - kept] = d.pad()
    prev = torch.randint(d.nspecial, task.mask_idx, (n, 6), generator=g)
    return src, lengths, prev


def outputs_and_grads(model, task, padded, dtype=torch.float32, device="cpu"):
    model = model.to(device, dtype).train()
    src, lengths, prev = (t.to(device) for t in batch(task, padded))
    out = model(src, lengths, prev)[0]
    out.float().square().mean().backward()
    grads = {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.detach().float(), grads


def relative_error(results, reference):
    """The largest of the output's and every gradient's relative distance
    (in norm) from ``reference``."""
    (out, grads), (out_ref, grads_ref) = results, reference
    errors = [(out - out_ref).norm() / out_ref.norm()]
    errors += [(grads[n] - grads_ref[n]).norm() / grads_ref[n].norm().clamp(min=1e-12)
               for n in grads_ref if grads_ref[n].norm() > 1e-6 * len(grads_ref[n].view(-1))]
    return max(errors).item()


# heads of 16 (the tiny model), 64 and 128 dimensions: the kernels differ by head size
HEAD_DIMS = {16: {}, 64: dict(encoder_embed_dim=128, decoder_embed_dim=128),
             128: dict(encoder_embed_dim=256, decoder_embed_dim=256)}


# the attention kernels differ by head size and padding; compiling (which
# takes tens of seconds a model) is tried on the tiny model: alone on padded
# sources, with sdpa on unpadded ones (the flash kernel inside the graph)
CASES = ([(dict(attention="sdpa"), padded, head_dim) for head_dim in sorted(HEAD_DIMS)
          for padded in (True, False)]
         + [(dict(compile_layers=True), True, 16),
            (dict(attention="sdpa", compile_layers=True), False, 16)])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("option,padded,head_dim", CASES)
@on_gpu
def test_the_fast_paths_follow_fairseqs_on_the_gpu(task, dtype, option, padded, head_dim):
    """In fp16 and bf16 each path's distance from fp32 fairseq is at most 1.5
    times fairseq's own (plus 1e-3). (Gradients that are zero in exact
    arithmetic, such as the key projections' biases, are left out.)"""
    sizes = HEAD_DIMS[head_dim]

    def run(dtype, **extra):
        model = tiny_model(task, activation_fn="gelu", **NO_DROPOUT, **sizes, **extra)
        assert model.encoder.layers[0].self_attn.head_dim == head_dim
        return outputs_and_grads(model, task, padded, dtype, device="cuda")

    reference = run(torch.float32)
    fairseq_error = relative_error(run(dtype), reference)
    assert relative_error(run(dtype, **option), reference) <= 1.5 * fairseq_error + 1e-3


@on_gpu
def test_with_dropout_the_fused_path_trains_as_fairseqs(task):
    """Dropout on: the fused kernels draw other random numbers than fairseq's
    path, so the two are compared by what they learn: the same 30 updates on
    one batch lower the loss as much (within 10% of the drop)."""
    def drop(path):
        torch.manual_seed(0)
        model = tiny_model(task, attention=path, dropout=0.1, attention_dropout=0.1).cuda()
        src, lengths, prev = (t.cuda() for t in batch(task, padded=False))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        model.train()
        losses = []
        for _ in range(30):
            optimizer.zero_grad()
            logits = model(src, lengths, prev)[0]
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), prev.view(-1))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses[0] - losses[-1]

    fairseq, fused = drop("fairseq"), drop("sdpa")
    assert fairseq > 0 and abs(fused - fairseq) <= 0.1 * fairseq, (fairseq, fused)
