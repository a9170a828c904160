"""--gelu-precision model and --cross-attention fused compute what fairseq's
paths compute (the GPU gain is measured by benchmarks/benchmark.py); on a
GPU, so do --attention sdpa and --compile-layers (inductor), whose CPU tests
are test_sdpa_attention.py and test_compiled_layers.py."""

import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import multihead_attention

from conftest import assert_decodes_incrementally, tiny_model
from mass_plugin.models.gpu_kernels import FusedCrossAttention


@pytest.fixture
def task(mass_task):
    return mass_task


def batch(task, n=4, length=11):
    """Source and decoder input, the source padded on the left to different lengths."""
    d = task.source_dictionary
    g = torch.Generator().manual_seed(1)
    src = torch.randint(d.nspecial, task.mask_idx, (n, length), generator=g)
    src[:, -1] = d.eos()
    lengths = torch.tensor([length - 3 * i for i in range(n)])
    for i, kept in enumerate(lengths):
        src[i, :length - kept] = d.pad()
    prev = torch.randint(d.nspecial, task.mask_idx, (n, 6), generator=g)
    return src, lengths, prev


def outputs_and_grads(model, task, dtype=torch.float32, device="cpu"):
    model = model.to(device, dtype).train()
    src, lengths, prev = (t.to(device) for t in batch(task))
    out = model(src, lengths, prev)[0]
    out.float().square().mean().backward()
    grads = {n: p.grad.float().clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.detach().float(), grads


NO_DROPOUT = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 0.0), (torch.bfloat16, 0.0)])
def test_gelu_in_the_model_precision_gives_fairseqs_values(task, dtype, atol):
    models = [tiny_model(task, activation_fn="gelu", gelu_precision=p, **NO_DROPOUT)
              for p in ("fp32", "model")]
    assert models[1].decoder.layers[0].activation_fn is F.gelu
    assert models[0].decoder.layers[0].activation_fn is not F.gelu
    (out0, grads0), (out1, grads1) = (outputs_and_grads(m, task, dtype) for m in models)
    assert torch.allclose(out0, out1, rtol=0, atol=atol)
    assert grads0.keys() == grads1.keys()
    for name in grads0:
        assert torch.allclose(grads0[name], grads1[name], rtol=0, atol=atol), name


def test_gelu_runs_in_the_model_precision_by_default(task):
    model = tiny_model(task, activation_fn="gelu")
    assert all(layer.activation_fn is F.gelu for layer in model.encoder.layers)


def test_gelu_precision_leaves_other_activations_alone(task):
    model = tiny_model(task, activation_fn="relu", gelu_precision="model")
    assert model.encoder.layers[0].activation_fn is not F.gelu


def test_fused_cross_attention_equals_fairseqs_path(task, monkeypatch):
    calls = []
    fused = multihead_attention.F.multi_head_attention_forward

    def counted(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(multihead_attention.F, "multi_head_attention_forward", counted)
    results = []
    for path in ("fairseq", "fused"):
        calls.clear()
        model = tiny_model(task, cross_attention=path, **NO_DROPOUT)
        results.append(outputs_and_grads(model, task))
        results[-1] += (len(calls),)
    (out0, grads0, calls0), (out1, grads1, calls1) = results
    self_attention = len(model.encoder.layers) + len(model.decoder.layers)
    # fairseq's path fuses self-attention only; the fused one cross-attention
    # too, but for the last layer, which fairseq asks for per-head weights
    assert (calls0, calls1) == (self_attention, self_attention + len(model.decoder.layers) - 1)
    assert torch.allclose(out0, out1, rtol=0, atol=1e-5)
    for name in grads0:
        assert torch.allclose(grads0[name], grads1[name], rtol=1e-4, atol=1e-6), name


def test_fused_cross_attention_decodes_incrementally_as_before(task):
    model = tiny_model(task, cross_attention="fused")
    assert isinstance(model.decoder.layers[0].encoder_attn, FusedCrossAttention)
    assert_decodes_incrementally(model, *batch(task))


def test_an_unknown_path_is_refused(task):
    with pytest.raises(ValueError, match="--cross-attention flash"):
        tiny_model(task, cross_attention="flash")


def relative_error(results, reference):
    """The largest of the output's and every gradient's relative distance
    (in norm) from ``reference``."""
    (out, grads), (out_ref, grads_ref) = results, reference
    errors = [(out - out_ref).norm() / out_ref.norm()]
    errors += [(grads[n] - grads_ref[n]).norm() / grads_ref[n].norm().clamp(min=1e-12)
               for n in grads_ref if grads_ref[n].norm() > 1e-6 * len(grads_ref[n].view(-1))]
    return max(errors).item()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("option", [dict(gelu_precision="model"), dict(cross_attention="fused"),
                                    dict(attention="sdpa"), dict(compile_layers=True),
                                    dict(attention="sdpa", compile_layers=True)])
def test_the_fast_paths_follow_fairseqs_on_the_gpu(task, dtype, option):
    """On CUDA the fused attention kernels differ from fairseq's path: in fp16
    and bf16, each path's distance from fp32 fairseq is at most 1.5 times
    fairseq's own (plus 1e-3). (Gradients that are zero in exact arithmetic,
    such as the key projections' biases, are left out.)"""
    fairseq_path = dict(gelu_precision="fp32", cross_attention="fairseq")

    def run(dtype, **extra):
        model = tiny_model(task, activation_fn="gelu", **NO_DROPOUT, **{**fairseq_path, **extra})
        return outputs_and_grads(model, task, dtype, device="cuda")

    reference = run(torch.float32)
    fairseq_error = relative_error(run(dtype), reference)
    assert relative_error(run(dtype, **option), reference) <= 1.5 * fairseq_error + 1e-3
