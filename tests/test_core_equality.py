"""The model's forward pass computes what it computed before it was rewritten
(one attention module chosen when a layer is built, the encoder's and the
decoder's own loops, fairseq's patches in one table): for each
configuration of tests/make_core_fixture.py (pre-training with each model
option, fine-tuning, unsupervised training, each with the fairseq and the
sdpa attention), the loss of every one of 6 updates with dropout on, the
weights after them and beam search's output equal those that the code of
the commit named in tests/data/core_equality.json recorded.

Bit for bit on a machine like the one that recorded them (the same torch
and CPU instruction set, one thread); elsewhere within 1e-5 relative: a
machine with other vector units sums in another order, and six updates of
Adam carry that rounding on, but a changed term or factor moves the loss by
far more."""

import json
import os

import make_core_fixture as fixture
import pytest
import torch

RECORDED = json.loads(fixture.FIXTURE.read_text())
SAME_MACHINE = (RECORDED["torch"] == torch.__version__
                and RECORDED["cpu_capability"] == torch.backends.cpu.get_cpu_capability())

pytestmark = pytest.mark.slow  # it trains: 16 runs of 6 updates


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(RECORDED["threads"])
    os.environ.setdefault("MASS_PLUGIN_COMPILE_BACKEND", "aot_eager")
    try:
        return fixture.record(tmp_path_factory.mktemp("core"))
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("name", sorted(RECORDED["results"]))
def test_training_and_decoding_compute_what_they_computed_before(computed, name):
    expected, got = RECORDED["results"][name], computed[name]
    print(f"{name}: losses {got['loss']}\nrecorded {expected['loss']}")
    if SAME_MACHINE:
        assert got["loss"] == expected["loss"]
        assert got["weights_sha256"] == expected["weights_sha256"]
    else:
        assert got["loss"] == pytest.approx(expected["loss"], rel=1e-5)
        assert got["weights_abs_sum"] == pytest.approx(expected["weights_abs_sum"], rel=1e-5)
    assert got.get("hypotheses") == expected.get("hypotheses")
