"""--optimizer torch_adam makes fairseq's Adam updates through torch's fused
kernels: the same weights as fairseq's ``adam`` through fairseq's Trainer in
fp32, in fp16 and bf16 (with its fp32 master copies under fairseq's
memory-efficient wrapper), the same clipped gradients, a resumed run that
continues from the master copies, and a step whose number of operations does
not grow with the number of parameters."""

import pytest
import torch
from fairseq import utils
from torch.utils._python_dispatch import TorchDispatchMode

from conftest import (
    NO_DROPOUT,
    binarize_bilingual,
    build_trainer,
    logged_step,
    train_batches,
    trainer_weights,
)
from mass_plugin.optim.torch_adam import MasterWeightAdam, TorchAdam

# Adam's eps of 1e-4 keeps it from blowing up the rounding noise of gradients
# that are 0 in exact arithmetic (the attention's key biases) to steps of lr;
# a large eps also shows where the update adds it
ADAM = ("--weight-decay", "0.01", "--clip-norm", "0.5", "--adam-betas", "(0.9, 0.98)",
        "--adam-eps", "1e-4")
TORCH_ADAM = ("--optimizer", "torch_adam", *ADAM)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return binarize_bilingual(tmp_path_factory.mktemp("torch_adam") / "bin")


def trained(data, precision, optimizer_args, updates=6, memory_efficient_bf16=False):
    trainer = build_trainer(data, "cpu", precision, "--task", "masked_s2s", *NO_DROPOUT,
                            "--fp16-init-scale", "16", *optimizer_args)
    if memory_efficient_bf16:
        trainer.cfg.common.memory_efficient_bf16 = True
    batches = train_batches(trainer, updates)
    logs = [logged_step(trainer, [batch]) for batch in batches]
    assert all(log is not None for log in logs)
    return trainer, logs


def assert_same_weights(a, b, rtol, atol):
    wa, wb = trainer_weights(a), trainer_weights(b)
    for name in wa:
        assert torch.allclose(wa[name], wb[name], rtol=rtol, atol=atol), name


def test_torch_adam_updates_as_fairseqs_adam_in_fp32(data):
    fairseq, fairseq_logs = trained(data, "fp32", ADAM)
    ours, logs = trained(data, "fp32", TORCH_ADAM)
    assert type(ours.optimizer) is TorchAdam
    for a, b in zip(fairseq_logs, logs):
        assert abs(a["gnorm"] - b["gnorm"]) <= 1e-4 * a["gnorm"]
        assert a["clip"] == b["clip"]
    assert_same_weights(fairseq, ours, rtol=1e-5, atol=1e-7)
    start = build_trainer(data, "cpu", "fp32", "--task", "masked_s2s")
    changed = [k for k, v in trainer_weights(ours).items()
               if not torch.equal(v, trainer_weights(start)[k])]
    assert len(changed) > 10  # the updates moved the weights


@pytest.mark.parametrize("precision,flag", [("fp16", "--memory-efficient-fp16"),
                                            ("bf16", None)])
def test_torch_adam_keeps_fp32_master_weights_under_memory_efficient_half(data, precision,
                                                                          flag):
    """fairseq's FP16Optimizer (an fp32 copy of the weights, fairseq's adam)
    against torch_adam under MemoryEfficientFP16Optimizer (the fp32 copy in
    its state): the same fp32 master weights after 6 updates, but for float
    rounding (measured: 0.1% (fp16) and 0.5% (bf16) of how far the weights
    moved; fairseq's adam under the same wrapper, which keeps no copy: 37%
    and 93%), and half-precision model weights that are the masters rounded."""
    fairseq, _ = trained(data, precision, ADAM)
    if flag:
        ours, _ = trained(data, "memory-efficient-fp16", TORCH_ADAM)
    else:
        ours, _ = trained(data, "bf16", TORCH_ADAM, memory_efficient_bf16=True)
    assert type(ours.optimizer).__name__ == "MemoryEfficientFP16Optimizer"
    params = list(ours.model.parameters())
    masters = [ours.optimizer.optimizer.state[p]["master"] for p in params]
    assert {m.dtype for m in masters} == {torch.float32}
    assert_close_to(fairseq.optimizer.fp32_params, masters, data)
    half = torch.float16 if precision == "fp16" else torch.bfloat16
    assert {p.dtype for p in params} == {half}
    for p, master in zip(params, masters):
        assert torch.equal(p, master.to(half))


def assert_close_to(expected, actual, data):
    """``actual`` weights within 2% of how far ``expected`` moved from the
    start (the weights of seed 1): float rounding, which fp16's and bf16's
    forward passes amplify from update to update, and nothing more."""
    start = build_trainer(data, "cpu", "fp32", "--task", "masked_s2s")
    moved = max((e - p0).abs().max() for e, p0 in zip(expected, start.model.parameters()))
    gap = max((e - a).abs().max() for e, a in zip(expected, actual))
    assert gap <= 0.02 * moved, (gap, moved)


def test_torch_adam_clips_as_fairseq(data):
    trainer = build_trainer(data, "cpu", "fp32", "--task", "masked_s2s", *TORCH_ADAM)
    sample, _ = trainer._prepare_sample(train_batches(trainer, 1)[0])
    loss, _, _ = trainer.criterion(trainer.model, sample)
    loss.backward()
    params = [p for p in trainer.model.parameters() if p.grad is not None]
    copies = [p.grad.clone() for p in params]
    norm = trainer.optimizer.clip_grad_norm(0.5)
    reference = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for r, g in zip(reference, copies):
        r.grad = g
    expected = utils.clip_grad_norm_(reference, 0.5)
    assert norm > 0.5 and torch.allclose(norm, expected, rtol=1e-6)
    for p, r in zip(params, reference):
        assert torch.allclose(p.grad, r.grad, rtol=1e-6, atol=1e-9)


def test_a_resumed_run_continues_from_the_master_weights(data, tmp_path):
    args = ("--task", "masked_s2s", *NO_DROPOUT, "--fp16-init-scale", "16",
            "--fp16-scale-window", "2", *TORCH_ADAM)
    straight = build_trainer(data, "cpu", "memory-efficient-fp16", *args)
    batches = [[batch] for batch in train_batches(straight, 4)]
    assert all(straight.train_step(batch) is not None for batch in batches[:2])
    straight.consolidate_optimizer()
    straight.save_checkpoint(str(tmp_path / "checkpoint.pt"), {})
    assert all(straight.train_step(batch) is not None for batch in batches[2:])

    resumed = build_trainer(data, "cpu", "memory-efficient-fp16", *args)
    resumed.load_checkpoint(str(tmp_path / "checkpoint.pt"))
    state = resumed.optimizer.optimizer.state
    assert {s["master"].dtype for s in state.values()} == {torch.float32}
    assert all(resumed.train_step(batch) is not None for batch in batches[2:])
    for p, q in zip(straight.model.parameters(), resumed.model.parameters()):
        assert torch.equal(p, q)
        assert torch.equal(straight.optimizer.optimizer.state[p]["master"],
                           resumed.optimizer.optimizer.state[q]["master"])


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def ops_per_step(n_params, optimizer_cls, **options):
    params = [torch.nn.Parameter(torch.randn(8)) for _ in range(n_params)]
    for p in params:
        p.grad = torch.randn(8)
    optimizer = optimizer_cls(params, lr=1e-3, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    optimizer.step()  # the state is made in the first step
    with CountOps() as counter:
        optimizer.step()
    return counter.count


def test_a_step_does_not_loop_over_the_parameters():
    from fairseq.optim.adam import Adam

    ours = [ops_per_step(n, MasterWeightAdam) for n in (10, 100)]
    fairseqs = [ops_per_step(n, Adam) for n in (10, 100)]
    assert ours[1] == ours[0], ours
    assert fairseqs[1] >= 10 * 90 + fairseqs[0], fairseqs


def test_torch_adam_steps_fp16_optimizers_fp32_copy_as_fairseqs_adam(data):
    """Under --fp16's FP16Optimizer (an fp32 copy of the weights outside the
    optimizer) torch_adam makes fairseq's adam updates of that copy."""
    fairseq, _ = trained(data, "fp16", ADAM)
    ours, _ = trained(data, "fp16", TORCH_ADAM)
    assert type(ours.optimizer).__name__ == "FP16Optimizer"
    assert type(ours.optimizer.fp32_optimizer) is TorchAdam
    assert_close_to(fairseq.optimizer.fp32_params, ours.optimizer.fp32_params, data)
