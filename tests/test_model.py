"""transformer_mass: span-only decoding, positions, incremental decoding, registry."""

import copy

import pytest
import torch
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from conftest import make_task, tiny_model
from mass_plugin.criterions.masked_s2s_loss import MaskedS2SLoss
from mass_plugin.models.transformer_mass import IncompatibleCheckpointError, TransformerMassModel
from mass_plugin.tasks.masked_s2s import MaskedS2STask


@pytest.fixture
def task(mono_data):
    data_dir, _, _ = mono_data
    task = make_task(data_dir)
    task.load_dataset("train")
    return task


def sentences(task, n=3, length=12, seed=0):
    """n random sentences of ``length`` ordinary tokens, the last one </s>."""
    d = task.source_dictionary
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(d.nspecial, task.mask_idx, (n, length), generator=g)
    tokens[:, -1] = d.eos()
    return tokens


def decode(model, src, prev, positions=None):
    lengths = torch.full((src.size(0),), src.size(1))
    with torch.no_grad():
        return model(src, lengths, prev, positions=positions)[0]


def shifted_right(tokens, eos):
    return torch.cat([torch.full_like(tokens[:, :1], eos), tokens[:, :-1]], dim=1)


def test_registry_holds_our_classes():
    assert TASK_REGISTRY["masked_s2s"] is MaskedS2STask
    assert MODEL_REGISTRY["transformer_mass"] is TransformerMassModel
    for arch in ("transformer_mass", "transformer_mass_base", "transformer_mass_middle",
                 "transformer_mass_big", "transformer_mass_tiny"):
        assert ARCH_MODEL_REGISTRY[arch] is TransformerMassModel
    assert CRITERION_REGISTRY["masked_s2s_loss"] is MaskedS2SLoss


def test_a_span_at_the_start_decodes_like_the_full_decoder(task):
    model = tiny_model(task)
    x = sentences(task)
    src = x.clone()
    src[:, :5] = task.mask_idx
    eos = task.source_dictionary.eos()
    full = decode(model, src, shifted_right(x, eos))
    span = decode(model, src, shifted_right(x, eos)[:, :5],
                  positions=torch.arange(1, 6).expand(3, 5))
    assert torch.allclose(span, full[:, :5], atol=1e-5)


@pytest.mark.parametrize("learned", [True, False])
def test_span_steps_use_the_original_positions(task, learned):
    """Decoding tokens at positions u..v with span positions equals decoding
    them at 1..k with a position table shifted by u - 1."""
    model = tiny_model(task, encoder_learned_pos=learned, decoder_learned_pos=learned)
    x = sentences(task, length=16)
    u, k = 6, 7
    src = x.clone()
    src[:, u - 1:u - 1 + k] = task.mask_idx
    prev = x[:, u - 2:u - 2 + k]
    at_original = decode(model, src, prev, torch.arange(u, u + k).expand(3, k))

    shifted = copy.deepcopy(model)
    table = shifted.decoder.embed_positions
    pad = table.padding_idx
    if learned:
        weight = table.weight.data
        weight[pad + 1:-(u - 1)] = weight[pad + u:].clone()
    else:
        table.weights = table.weights.clone()
        table.weights[pad + 1:-(u - 1)] = table.weights[pad + u:].clone()
    at_one = decode(shifted, src, prev)  # fairseq's positions 1..k
    assert torch.allclose(at_original, at_one, atol=1e-5)
    restarting = decode(model, src, prev)
    assert not torch.allclose(at_original, restarting, atol=1e-3)


def test_padded_spans_give_the_same_outputs_as_unpadded_ones(task):
    model = tiny_model(task)
    x = sentences(task, n=2, length=12)
    pad = task.source_dictionary.pad()
    prev = torch.stack([x[0, 2:7], torch.cat([x[1, 4:7], torch.full((2,), pad)])])
    positions = torch.tensor([[4, 5, 6, 7, 8], [6, 7, 8, 0, 0]])
    batched = decode(model, x, prev, positions)
    alone = decode(model, x[1:], prev[1:, :3], positions[1:, :3])
    assert torch.allclose(batched[1, :3], alone[0], atol=1e-5)


def test_incremental_decoding_equals_full_decoding(task):
    model = tiny_model(task)
    x = sentences(task, length=10)
    lengths = torch.full((3,), 10)
    prev = shifted_right(x, task.source_dictionary.eos())
    with torch.no_grad():
        encoder_out = model.encoder(x, src_lengths=lengths)
        full = model.decoder(prev, encoder_out=encoder_out)[0]
        state = {}
        steps = [model.decoder(prev[:, :t + 1], encoder_out=encoder_out,
                               incremental_state=state)[0] for t in range(10)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def test_the_decoder_runs_over_k_span_tokens_not_the_whole_sentence(task):
    model = tiny_model(task)
    seen = {}

    def record(name):
        def hook(module, inputs, output):
            seen[name] = inputs[0].shape
        return hook

    model.encoder.layers[0].register_forward_hook(record("encoder"))
    model.decoder.layers[0].register_forward_hook(record("decoder"))
    model.decoder.output_projection.register_forward_hook(record("projection"))
    batch = task.dataset("train").collater([task.dataset("train")[i] for i in range(8)])
    m = batch["net_input"]["src_tokens"].size(1)
    k = batch["target"].size(1)
    assert k < m
    criterion = MaskedS2SLoss(task, sentence_avg=False, label_smoothing=0.0)
    loss, sample_size, _ = criterion(model.train(), batch)
    loss.backward()
    assert seen["encoder"][0] == m  # T x B x C
    assert seen["decoder"][0] == k  # T x B x C
    assert seen["projection"][:2] == (8, k)  # B x T x C: only span positions
    assert sample_size == batch["ntokens"]


def test_fine_tuning_vocabulary_matches_pre_training(task, mono_data):
    """A translation task reading the pre-training dict.txt gets <mask>
    appended by the model, so the pre-trained weights load strictly."""
    data_dir, _, _ = mono_data
    pretrained = tiny_model(task)
    src, tgt = (Dictionary.load(str(data_dir / "dict.txt")) for _ in range(2))
    translation = TranslationTask(TranslationConfig(data=str(data_dir)), src, tgt)
    model = tiny_model(translation)
    for d in (src, tgt):
        assert len(d) == len(task.source_dictionary)
        assert d.index("<mask>") == task.mask_idx
    model.load_state_dict(pretrained.state_dict(), strict=True)


@pytest.mark.parametrize("positions", [32, 100])
def test_a_checkpoint_with_another_number_of_positions_loads(task, positions):
    pretrained = tiny_model(task)  # 64 positions
    model = tiny_model(task, max_source_positions=positions, max_target_positions=positions)
    model.load_state_dict(pretrained.state_dict(), strict=True)
    rows = min(positions, 64) + task.source_dictionary.pad() + 1
    for side in ("encoder", "decoder"):
        mine = getattr(model, side).embed_positions.weight
        theirs = getattr(pretrained, side).embed_positions.weight
        assert mine.size(0) == positions + task.source_dictionary.pad() + 1
        assert torch.equal(mine[:rows], theirs[:rows])


def test_a_checkpoint_with_another_vocabulary_names_the_dictionary(task, mono_data):
    data_dir, _, _ = mono_data
    pretrained = tiny_model(task).state_dict()
    other = Dictionary.load(str(data_dir / "dict.txt"))
    for i in range(8):
        other.add_symbol(f"extra{i}")
    translation = TranslationTask(TranslationConfig(data=str(data_dir)), other, other)
    with pytest.raises(IncompatibleCheckpointError, match="pre-training dictionary"):
        tiny_model(translation).load_state_dict(pretrained)


def test_a_checkpoint_of_another_architecture_says_which_options_differ(task):
    pretrained = tiny_model(task).state_dict()
    deeper = tiny_model(task, encoder_layers=3)
    with pytest.raises(IncompatibleCheckpointError, match="missing encoder.layers.2"):
        deeper.load_state_dict(pretrained)
    wider = tiny_model(task, encoder_ffn_embed_dim=48, decoder_ffn_embed_dim=48)
    with pytest.raises(IncompatibleCheckpointError, match=r"fc1.weight: \(64, 32\)"):
        wider.load_state_dict(pretrained)


def test_a_checkpoint_with_the_same_size_but_other_symbols_is_refused(task, mono_data):
    data_dir, _, _ = mono_data
    pretrained = tiny_model(task).state_dict()
    shuffled = Dictionary.load(str(data_dir / "dict.txt"))
    a, b = shuffled.nspecial, shuffled.nspecial + 1  # swap two words
    shuffled.symbols[a], shuffled.symbols[b] = shuffled.symbols[b], shuffled.symbols[a]
    translation = TranslationTask(TranslationConfig(data=str(data_dir)), shuffled, shuffled)
    model = tiny_model(translation)
    with pytest.raises(IncompatibleCheckpointError, match="another dictionary"):
        model.load_state_dict(pretrained)
    # a checkpoint saved before the checksum existed still loads
    del pretrained["dictionary_checksum"]
    tiny_model(task).load_state_dict(pretrained)


def test_the_dictionary_check_holds_whatever_device_the_model_is_on(task, mono_data):
    """A checkpoint is loaded on the CPU while the model may already be on a
    GPU. The 'meta' device stands in for that here: its tensors, like CUDA's,
    cannot be compared with CPU tensors."""
    data_dir, _, _ = mono_data
    pretrained = tiny_model(task).state_dict()
    on_device = tiny_model(task).to("meta")
    on_device.load_state_dict(dict(pretrained))
    shuffled = Dictionary.load(str(data_dir / "dict.txt"))
    a, b = shuffled.nspecial, shuffled.nspecial + 1
    shuffled.symbols[a], shuffled.symbols[b] = shuffled.symbols[b], shuffled.symbols[a]
    translation = TranslationTask(TranslationConfig(data=str(data_dir)), shuffled, shuffled)
    with pytest.raises(IncompatibleCheckpointError, match="another dictionary"):
        tiny_model(translation).to("meta").load_state_dict(dict(pretrained))
    del pretrained["dictionary_checksum"]  # from before the checksum: still loads
    on_device.load_state_dict(pretrained)
