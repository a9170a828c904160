"""mass_plugin/patches.py: every change the plugin makes to fairseq, torch and
numpy at import is a row of one table; each row's change is in place once
the plugin is imported and does what the row says; another fairseq version
warns once, naming the rows."""

import importlib
import logging
import re

import numpy as np
import torch
from fairseq import checkpoint_utils
from fairseq.distributed import utils as distributed_utils
from fairseq.models import distributed_fairseq_model
from fairseq.ngram_repeat_block import NGramRepeatBlock

import mass_plugin  # noqa: F401  (applies the table)
from conftest import REPO
from mass_plugin import patches


def test_every_row_names_an_installer_and_a_test_that_exist():
    assert len(patches.PATCHES) == 6
    for patch in patches.PATCHES:
        module = importlib.import_module(patch.module)
        assert patch.module == patches.__name__ or callable(module.install), patch.module
        assert (REPO / patch.test).is_file(), patch.test


def test_the_table_is_the_one_place_that_installs():
    """Importing the plugin applies the table, and nothing else calls an
    installer."""
    calls = {}
    for path in sorted((REPO / "mass_plugin").rglob("*.py")):
        found = re.findall(r"(\w+)\.install\(\)", path.read_text())
        if found:
            calls[str(path.relative_to(REPO))] = found
    assert calls == {"mass_plugin/__init__.py": ["patches"]}


def test_each_row_is_in_place_after_import():
    assert getattr(checkpoint_utils.load_checkpoint_to_cpu, "mass_plugin_safe", False)
    assert getattr(checkpoint_utils.load_ema_from_checkpoint, "mass_plugin_safe", False)
    assert distributed_utils._broadcast_object_slow.__module__ == "mass_plugin.checkpoint_broadcast"
    assert distributed_utils._infer_single_node_init.__module__ == "mass_plugin.distributed_cpu"
    assert distributed_fairseq_model.DistributedDataParallel.__module__ == \
        "mass_plugin.distributed_cpu"
    assert not torch.backends.cuda.cudnn_sdp_enabled()
    assert argparse_namespace_is_allowed()


def argparse_namespace_is_allowed():
    import argparse

    return argparse.Namespace in torch.serialization.get_safe_globals()


def test_no_repeat_ngram_blocks_repeats_on_the_cpu():
    """After "5 6 7 5", a bigram blocker forbids 6 (5 6 is there already):
    fairseq's own CPU path looked at the padded end of the buffer instead."""
    blocker = NGramRepeatBlock(2, use_extension=False)
    tokens = torch.tensor([[5, 6, 7, 5, 1, 1, 1, 1]])  # step 3: four tokens so far
    lprobs = torch.zeros(1, 10)
    blocked = blocker(tokens, lprobs, bsz=1, step=3, beam_size=1)
    assert blocked[0, 6] == -float("inf")
    assert torch.isfinite(blocked[0, [i for i in range(10) if i != 6]]).all()


def test_fairseqs_blocks_of_text_work_with_this_numpy():
    """TokenBlockDataset (--task denoising) calls np.compat.long, which numpy 2
    removed: the row gives that module a numpy that has it."""
    from fairseq.data import TokenBlockDataset

    items = [torch.tensor([4, 5, 6, 2]), torch.tensor([7, 8, 2])]

    class Items(torch.utils.data.Dataset):
        sizes = np.array([4, 3])

        def __getitem__(self, index):
            return items[index]

        def __len__(self):
            return len(items)

    blocks = TokenBlockDataset(Items(), Items.sizes, block_size=None, pad=1, eos=2,
                               break_mode="eos")
    assert [blocks[i].tolist() for i in range(len(blocks))] == [[4, 5, 6, 2], [7, 8, 2]]


def test_another_fairseq_version_warns_naming_the_rows(caplog):
    with caplog.at_level(logging.WARNING):
        assert patches.check_version("0.12.3.1")
        assert not caplog.text
        assert not patches.check_version("0.13.0")
    assert "fairseq 0.13.0" in caplog.text
    assert all(patch.replaces in caplog.text for patch in patches.PATCHES)
