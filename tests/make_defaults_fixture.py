"""Writes tests/data/defaults_checkpoint/: a tiny masked_s2s checkpoint trained
with the plugin's default options, and what that checkpoint computes.

The files there were made with the plugin of commit 366993d, before
--hide-mask-states, --embedding-style and --decoder-mask-prob /
--decoder-random-token-prob existed: the checkpoint's configuration has none
of them, and ``expected.pt`` holds its span logits, full-sentence logits and
beam search output as that code computed them, and the items of the 20-line
``valid`` split as the task's default options masked them.
tests/test_original_options.py checks that today's code still computes the
same. Run again (python tests/make_defaults_fixture.py) only to replace the
fixture on purpose.
"""

import sys
import tempfile
from pathlib import Path

import torch
from fairseq import checkpoint_utils
from fairseq.sequence_generator import SequenceGenerator

from conftest import PLUGIN_DIR, REPO, binarize_splits, run_cli, synthetic_sentences

FIXTURE = Path(__file__).resolve().parent / "data" / "defaults_checkpoint"


def train(data, save_dir):
    """20 updates of a 1+1-layer model with every masked_s2s option at its default."""
    run_cli(["fairseq-train", data, "--user-dir", PLUGIN_DIR, "--task", "masked_s2s",
             "--arch", "transformer_mass_tiny", "--encoder-layers", "1", "--decoder-layers",
             "1", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
             "--max-source-positions", "32", "--max-target-positions", "32",
             "--criterion", "masked_s2s_loss", "--cpu", "--optimizer", "adam", "--lr", "0.01",
             "--max-tokens", "400", "--max-update", "20", "--disable-validation",
             "--no-epoch-checkpoints", "--save-dir", save_dir, "--num-workers", "0",
             "--seed", "3"], cwd=REPO)


def load(directory):
    """The fixture's model (eval mode) and task, as generation would load them."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(directory / "checkpoint.pt")], arg_overrides={"data": str(directory)})
    return models[0].eval(), task


def inputs(task):
    """Four sentences of 12 tokens with a span of 5 masked at position 4."""
    d = task.source_dictionary
    tokens = torch.randint(d.nspecial, task.mask_idx, (4, 12),
                           generator=torch.Generator().manual_seed(11))
    tokens[:, -1] = d.eos()
    masked = tokens.clone()
    masked[:, 3:8] = task.mask_idx
    full_prev = torch.cat([torch.full_like(tokens[:, :1], d.eos()), tokens[:, :-1]], dim=1)
    return {"tokens": tokens, "src_tokens": masked, "src_lengths": torch.full((4,), 12),
            "prev_output_tokens": full_prev[:, 3:8].contiguous(),
            "positions": torch.arange(4, 9).expand(4, 5).contiguous(),
            "full_prev": full_prev}


def outputs(model, task, given):
    """Span logits, full-sentence logits and beam search tokens."""
    with torch.no_grad():
        span = model(given["src_tokens"], given["src_lengths"], given["prev_output_tokens"],
                     positions=given["positions"])[0]
        full = model(given["tokens"], given["src_lengths"], given["full_prev"])[0]
        generator = SequenceGenerator([model], task.target_dictionary, beam_size=2,
                                      max_len_b=14)
        hypos = generator.generate([model], {"net_input": {
            "src_tokens": given["tokens"], "src_lengths": given["src_lengths"]}})
    best = [hypo[0]["tokens"] for hypo in hypos]
    return {"span_logits": span, "full_logits": full,
            "beam_tokens": padded(best, task.target_dictionary.pad())}


def padded(rows, pad):
    out = torch.full((len(rows), max(len(row) for row in rows)), pad)
    for out_row, row in zip(out, rows):
        out_row[:len(row)] = row
    return out


def masked_items(task):
    """The valid split's items, masked as the task's defaults mask them."""
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    items = [dataset[i] for i in range(len(dataset))]
    pad = task.source_dictionary.pad()
    return {f"valid_{key}": padded([item[key] for item in items], pad)
            for key in ("source", "prev_output_tokens", "target", "positions")}


def main():
    FIXTURE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lines = synthetic_sentences(7, 200, max_len=12)
        binarize_splits(tmp, {"train": lines, "valid": lines[:20]})
        train(tmp, tmp / "checkpoints")
        state = torch.load(tmp / "checkpoints" / "checkpoint_last.pt", weights_only=False)
        state.pop("last_optimizer_state", None)  # not needed to load the model; 3x its size
        torch.save(state, FIXTURE / "checkpoint.pt")
        for name in ("dict.txt", "valid.bin", "valid.idx"):
            (FIXTURE / name).write_bytes((tmp / name).read_bytes())
    model, task = load(FIXTURE)
    given = inputs(task)
    expected = {**given, **outputs(model, task, given), **masked_items(task)}
    torch.save(expected, FIXTURE / "expected.pt")


if __name__ == "__main__":
    sys.exit(main())
