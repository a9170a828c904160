"""--compile-layers: each layer through torch.compile in training, with no
graph break, the same loss and gradients as eager over batch shapes that
change from step to step; evaluation runs eager; a failure to compile falls
back to eager with a warning. On the CPU the layers compile with the
aot_eager backend (dynamo's graph and AOT autograd, without inductor's code
generation, which takes minutes here); on a GPU test_gpu_kernels.py runs
inductor."""

import logging

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from conftest import tiny_model
from mass_plugin.models import layers as compiled_layers
from mass_plugin.models.layers import Compiler

NO_DROPOUT = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)


@pytest.fixture
def task(mass_task):
    return mass_task


@pytest.fixture
def compiler(monkeypatch):
    """A fresh Compiler on aot_eager that counts the graphs it was given."""
    torch._dynamo.reset()
    counters.clear()
    compiler = Compiler(backend="aot_eager")
    monkeypatch.setattr(compiled_layers, "COMPILER", compiler)
    return compiler


def loss_and_grads(model, sample):
    model.zero_grad()
    out = model(**sample["net_input"])[0]
    out.float().square().mean().backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                          if p.grad is not None}


# the sdpa path only: compiling takes about a minute on 2 CPU cores (the GPU
# test compiles both paths)
@pytest.mark.parametrize("attention", ["sdpa"])
def test_compiled_layers_train_as_eager(task, compiler, attention):
    dataset = task.dataset("train")
    eager = tiny_model(task, attention=attention, **NO_DROPOUT).train()
    compiled = tiny_model(task, attention=attention, compile_layers=True, **NO_DROPOUT).train()
    assert type(compiled.encoder.layers[0]).__name__.startswith("Compiled")
    # the first batch has as many sentences as the model has dimensions (32):
    # without duck shapes off, the two sizes would be tied and the next
    # batches compiled again
    for indices in (range(32), range(3, 11), [5, 17, 40, 41, 90]):
        sample = dataset.collater([dataset[i] for i in indices])
        (out0, grads0), (out1, grads1) = (loss_and_grads(m, sample) for m in (eager, compiled))
        assert torch.allclose(out0, out1, rtol=1e-5, atol=1e-6)
        for name in grads0:
            assert torch.allclose(grads0[name], grads1[name], rtol=1e-4, atol=1e-7), name
    assert set(compiler.compiled) == {type(compiled.encoder.layers[0]),
                                      type(compiled.decoder.layers[0])}
    assert not compiler.failed
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    # two graphs per layer class (the first layer's input is a transposed view,
    # the later layers' are not): the later batches reused them
    assert counters["stats"]["unique_graphs"] == 4, dict(counters["stats"])


def test_evaluation_runs_the_layers_uncompiled(task, compiler):
    model = tiny_model(task, compile_layers=True)  # in eval mode
    dataset = task.dataset("train")
    with torch.no_grad():
        model(**dataset.collater([dataset[i] for i in range(4)])["net_input"])
    assert compiler.compiled == {}


def test_a_failure_to_compile_falls_back_to_eager(task, monkeypatch, caplog):
    def broken(graph, example_inputs):
        raise RuntimeError("no compiler here")

    torch._dynamo.reset()
    monkeypatch.setattr(compiled_layers, "COMPILER", Compiler(backend=broken))
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in range(8)])
    eager = tiny_model(task, **NO_DROPOUT).train()
    compiled = tiny_model(task, compile_layers=True, **NO_DROPOUT).train()
    with caplog.at_level(logging.WARNING):
        (out0, _), (out1, _) = (loss_and_grads(m, sample) for m in (eager, compiled))
    assert compiled_layers.COMPILER.failed
    assert "--compile-layers: compiling" in caplog.text and "no compiler here" in caplog.text
    assert torch.equal(out0, out1)
