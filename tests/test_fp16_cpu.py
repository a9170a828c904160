"""fp16 training through fairseq's own Trainer on the CPU, with both of
fairseq's fp16 optimizers: ``FP16Optimizer`` (--fp16, an fp32 copy of the
weights) and ``MemoryEfficientFP16Optimizer`` (--memory-efficient-fp16, no
copy), for masked_s2s and transformer_mass_tiny.

fairseq's Trainer turns the model and the criterion to fp16 itself and runs
fp16 on the CPU with ``--cpu --fp16 --fp16-no-flatten-grads``
(FP16Optimizer flattens its fp32 copy on the current CUDA device otherwise)
or ``--cpu --memory-efficient-fp16``. One step of its overflow path calls
``.cuda()`` (see ``cpu_overflow``). The same steps on CUDA: test_gpu.py."""

import pytest
import torch
from fairseq.optim import FP16Optimizer, MemoryEfficientFP16Optimizer

from conftest import (
    NO_DROPOUT,
    assert_training_curves_match,
    binarize_bilingual,
    build_trainer,
    train_batches,
    trainer_weights,
    training_curve,
)

FP16 = ["fp16", "memory-efficient-fp16"]
OPTIMIZERS = {"fp16": FP16Optimizer, "memory-efficient-fp16": MemoryEfficientFP16Optimizer}
UPDATES = 12
# the largest per-update gap between fp16's training loss and fp32's on the
# same batches from the same weights (measured on the CPU: 0.001 to 0.002 with
# Adam and SGD, the 3 decimals fairseq logs), and between their logged
# gradient norms, relative (measured: 0.0008)
FP16_LOSS_GAP = 0.01
FP16_GNORM_GAP = 0.01
# SGD, whose update is proportional to the gradient: a loss scale left in the
# gradients changes the loss curve too (Adam's hardly)
OPTIMIZERS_OF = {"adam": ["--optimizer", "adam"], "sgd": ["--optimizer", "sgd", "--lr", "0.3"]}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return binarize_bilingual(tmp_path_factory.mktemp("fp16") / "bin")


@pytest.fixture(scope="module")
def fp32_curves(data):
    return {name: training_curve(data, "cpu", "fp32", UPDATES, *args)
            for name, args in OPTIMIZERS_OF.items()}


@pytest.fixture
def cpu_overflow(monkeypatch):
    """fairseq's Trainer makes the gradient norm of an update it skips for an
    overflow with ``torch.tensor(0.0).cuda()`` (trainer.py, ``except
    OverflowError``), which a torch without CUDA refuses: without CUDA
    ``.cuda()`` returns the tensor itself in these tests, and the rest of
    fairseq's path runs."""
    if not torch.cuda.is_available():
        monkeypatch.setattr(torch.Tensor, "cuda", lambda tensor, *args, **kwargs: tensor)


# fairseq's SGD cannot run under MemoryEfficientFP16Optimizer
@pytest.mark.parametrize("precision,optimizer", [("fp16", "adam"), ("fp16", "sgd"),
                                                 ("memory-efficient-fp16", "adam")])
def test_fp16_training_on_the_cpu_follows_fp32(data, fp32_curves, precision, optimizer):
    """fp16 through fairseq's fp16 optimizer tracks fp32's loss curve and
    logged gradient norms update by update, every dropout off, no update
    skipped."""
    full = fp32_curves[optimizer]
    half = training_curve(data, "cpu", precision, UPDATES, "--fp16-init-scale", "16",
                          *OPTIMIZERS_OF[optimizer])
    assert_training_curves_match(half, full, FP16_LOSS_GAP, FP16_GNORM_GAP)
    assert full["loss"][-1] < full["loss"][0] - 0.5  # the curves went somewhere


@pytest.mark.parametrize("precision", FP16)
def test_an_fp16_overflow_skips_the_update_and_halves_the_loss_scale(data, precision,
                                                                     cpu_overflow):
    """A loss scale of 2**40 overflows every fp16 gradient: fairseq's Trainer
    returns None, leaves the weights and the update count alone and halves
    the scale. The skipped update leaves nothing behind: at a scale that
    fits, the next step is the first update of a fresh trainer."""
    args = ["--task", "masked_s2s", *NO_DROPOUT]
    trainer = build_trainer(data, "cpu", precision, *args, "--fp16-init-scale", str(2**40))
    assert type(trainer.optimizer) is OPTIMIZERS[precision]
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float16}
    batch = train_batches(trainer, 1)
    before = trainer_weights(trainer)
    assert trainer.train_step(batch) is None
    assert trainer.get_num_updates() == 0
    assert trainer.optimizer.scaler.loss_scale == 2**39
    after = trainer_weights(trainer)
    assert all(torch.equal(before[k], after[k]) for k in before)

    trainer.optimizer.scaler.loss_scale = 16
    fresh = build_trainer(data, "cpu", precision, *args, "--fp16-init-scale", "16")
    log, fresh_log = trainer.train_step(batch), fresh.train_step(batch)
    assert log is not None and log["loss"] == fresh_log["loss"]
    assert trainer.get_num_updates() == 1
    after, fresh_weights = trainer_weights(trainer), trainer_weights(fresh)
    assert all(torch.equal(after[k], fresh_weights[k]) for k in after)
    assert any(not torch.equal(before[k], after[k]) for k in before)


# fairseq saves the model's fp16 weights, not FP16Optimizer's fp32 copy: the
# resumed copy starts rounded to fp16, one fp16 step (2**-10) at most apart
RESUME_TOLERANCE = {"fp16": dict(rtol=2**-10, atol=1e-5),
                    "memory-efficient-fp16": dict(rtol=0, atol=0)}


@pytest.mark.parametrize("precision", FP16)
def test_an_fp16_run_resumed_from_its_checkpoint_ends_as_a_straight_run(data, tmp_path,
                                                                        precision):
    """Two updates, the Trainer's checkpoint, then two more updates, end as
    a fresh Trainer loading that checkpoint and making the same two updates:
    the same loss scale and weights. The scale doubles every 2 updates (16
    to 64): fairseq saves the scale, not the scaler's window counters, which
    start again at 0, so resuming at a multiple of the window keeps the
    schedule. Adam's eps of 1e-4 keeps it from blowing the rounding noise of
    a gradient that is 0 in exact arithmetic (the attention's key bias) up
    to steps of lr."""
    args = ["--task", "masked_s2s", *NO_DROPOUT, "--fp16-init-scale", "16",
            "--fp16-scale-window", "2", "--adam-eps", "1e-4"]
    straight = build_trainer(data, "cpu", precision, *args)
    batches = [[batch] for batch in train_batches(straight, 4)]
    assert all(straight.train_step(batch) is not None for batch in batches[:2])
    straight.consolidate_optimizer()  # as fairseq's checkpoint_utils does first
    straight.save_checkpoint(str(tmp_path / "checkpoint.pt"), {})
    assert all(straight.train_step(batch) is not None for batch in batches[2:])

    resumed = build_trainer(data, "cpu", precision, *args)
    resumed.load_checkpoint(str(tmp_path / "checkpoint.pt"))
    assert resumed.get_num_updates() == 2 and resumed.optimizer.scaler.loss_scale == 32
    assert all(resumed.train_step(batch) is not None for batch in batches[2:])
    assert resumed.optimizer.scaler.loss_scale == straight.optimizer.scaler.loss_scale == 64
    expected, actual = trainer_weights(straight), trainer_weights(resumed)
    for name, weight in expected.items():
        assert torch.allclose(actual[name], weight, **RESUME_TOLERANCE[precision]), name
