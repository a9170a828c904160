"""Fine-tuning takes the checkpoint's model (checkpoint_compat.adopt_pretrained):
with --finetune-from-model, --arch transformer_mass builds the checkpoint's
architecture, sizes and embedding style unless they are given; a given
architecture or size that differs stops before training with one line that
names both; the checkpoint's options are read once, when the model is built,
and not again when the fine-tuned checkpoint is loaded."""

from argparse import Namespace

import pytest
import torch
from fairseq.models import ARCH_CONFIG_REGISTRY

from conftest import make_task
from mass_plugin.models import checkpoint_compat


@pytest.fixture
def task(mono_data):
    return make_task(mono_data[0])


def build(task, arch, **given):
    """A model as fairseq-train builds it: the architecture function on the
    options given (fairseq's parser leaves the others out), then build_model."""
    args = Namespace(arch=arch, max_source_positions=64, max_target_positions=64, **given)
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    return task.build_model(args), args


@pytest.fixture
def pretrained(task, tmp_path):
    """A checkpoint of a 1+1-layer model of 48 dimensions, fairseq's style."""
    model, args = build(task, "transformer_mass_tiny", encoder_layers=1, decoder_layers=1,
                        encoder_embed_dim=48, decoder_embed_dim=48,
                        embedding_style="fairseq")
    path = tmp_path / "pretrained.pt"
    torch.save({"cfg": {"model": vars(args)}, "model": model.state_dict()}, path)
    return path


def shape(model):
    return (len(model.encoder.layers), len(model.decoder.layers),
            model.encoder.embed_tokens.embedding_dim)


def test_transformer_mass_takes_the_checkpoints_architecture_and_style(task, pretrained):
    model, args = build(task, "transformer_mass", finetune_from_model=str(pretrained))
    assert shape(model) == (1, 1, 48)
    assert args.arch == "transformer_mass_tiny" and args.embedding_style == "fairseq"
    assert model.encoder.layernorm_embedding is None and model.encoder.embed_scale != 1.0
    state = torch.load(pretrained)["model"]
    model.load_state_dict(state)  # the weights fit


def test_options_given_are_kept_and_a_conflicting_size_is_refused(task, pretrained):
    model, args = build(task, "transformer_mass", finetune_from_model=str(pretrained),
                        dropout=0.3, activation_fn="relu")
    assert args.dropout == 0.3 and args.activation_fn == "relu"
    with pytest.raises(ValueError) as error:
        build(task, "transformer_mass", finetune_from_model=str(pretrained),
              encoder_embed_dim=64)
    message = str(error.value)
    assert "is transformer_mass_tiny (1+1 layers, 48 dims)" in message
    assert "; --encoder-embed-dim 64 was given: leave the --arch and size options out" in message
    assert "\n" not in message


def test_a_named_size_that_differs_is_refused(task, pretrained):
    with pytest.raises(ValueError, match=r"is transformer_mass_tiny \(1\+1 layers, 48 dims\); "
                       r"--arch transformer_mass_base asks for --encoder-embed-dim 768: "):
        build(task, "transformer_mass_base", finetune_from_model=str(pretrained))


def test_the_checkpoint_is_read_once_and_not_when_its_fine_tuned_model_loads(
        task, pretrained, monkeypatch):
    reads = []
    read = checkpoint_compat.pretrained_options
    monkeypatch.setattr(checkpoint_compat, "pretrained_options",
                        lambda path: reads.append(path) or read(path))
    # the module that builds the model holds its own reference
    from mass_plugin.models import transformer_mass
    monkeypatch.setattr(transformer_mass, "pretrained_options",
                        checkpoint_compat.pretrained_options)
    model, args = build(task, "transformer_mass", finetune_from_model=str(pretrained))
    assert reads == [str(pretrained)]
    # generation rebuilds from the fine-tuned checkpoint's options, now complete
    saved = Namespace(**vars(args))
    ARCH_CONFIG_REGISTRY[saved.arch](saved)
    task.build_model(saved)
    assert reads == [str(pretrained)]
