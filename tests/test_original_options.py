"""What the original MASS codes do that the defaults do not, as options:
--hide-mask-states, --span-start mass, --embedding-style xlm and the
decoder-input noise; and that the defaults still compute what they did."""

import math
from argparse import Namespace

import make_defaults_fixture as fixture
import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils, utils
from fairseq.models.transformer import TransformerModel
from fairseq.modules import LearnedPositionalEmbedding

from conftest import (
    PLUGIN_DIR,
    REPO,
    binarize_splits,
    make_task,
    run_cli,
    synthetic_sentences,
    tiny_model,
    to_french,
    valid_losses,
)
from mass_plugin.data.masking import choose_masked_offsets, noise_decoder_input
from mass_plugin.models.options import apply_embedding_style
from mass_plugin.models.transformer_mass import (
    IncompatibleCheckpointError,
    hidden_positions,
)
from mass_tools.export import export

ALL_OPTIONS = ["--hide-mask-states", "encoder", "--embedding-style", "xlm",
               "--span-start", "mass", "--decoder-mask-prob", "0.1",
               "--decoder-random-token-prob", "0.1"]


@pytest.fixture
def task(mono_data):
    task = make_task(mono_data[0])
    task.load_dataset("train")
    return task


def mass_batch(task, n=16):
    """A collated MASS batch of the task's train split (with padding)."""
    dataset = task.dataset("train")
    return dataset.collater([dataset[i] for i in range(n)])


def cross_attention(model, net_input, layer):
    """Cross-attention weights of decoder ``layer`` (B x k x T, mean of heads)."""
    with torch.no_grad():
        return model(**net_input, alignment_layer=layer)[1]["attn"][0]


def record_self_attention(encoder):
    """Make every encoder self-attention also return its weights into the
    list returned (B x T x T per layer and call, the mean of the heads)."""
    weights = []
    for layer in encoder.layers:
        def forward(*args, _forward=layer.self_attn.forward, **kwargs):
            out, w = _forward(*args, **{**kwargs, "need_weights": True})
            weights.append(w)
            return out, w
        layer.self_attn.forward = forward
    return weights


@pytest.mark.parametrize("mode", ["cross", "encoder"])
def test_hidden_mask_states_get_exactly_zero_cross_attention(task, mode):
    batch = mass_batch(task)
    hidden = batch["net_input"]["src_tokens"].eq(task.mask_idx)
    assert hidden.any() and not hidden.all()
    plain, hiding = tiny_model(task), tiny_model(task, hide_mask_states=mode)
    for layer in range(len(hiding.decoder.layers)):
        weights = cross_attention(hiding, batch["net_input"], layer)
        assert weights.masked_select(hidden.unsqueeze(1).expand_as(weights)).eq(0).all()
        assert torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-5)
        before = cross_attention(plain, batch["net_input"], layer)
        assert before.masked_select(hidden.unsqueeze(1).expand_as(before)).gt(0).all()


@pytest.mark.parametrize("mode,zero", [("cross", False), ("encoder", True)])
def test_only_the_encoder_mode_hides_them_from_the_encoders_self_attention(task, mode, zero):
    batch = mass_batch(task)
    hidden = batch["net_input"]["src_tokens"].eq(task.mask_idx)
    model = tiny_model(task, hide_mask_states=mode)
    weights = record_self_attention(model.encoder)
    with torch.no_grad():
        model(**batch["net_input"])
    assert len(weights) == len(model.encoder.layers)
    for w in weights:
        on_hidden = w.masked_select(hidden.unsqueeze(1).expand_as(w))
        assert on_hidden.eq(0).all() == zero and (zero or on_hidden.gt(0).all())


@pytest.mark.parametrize("mode,independent", [("none", False), ("cross", False),
                                              ("encoder", True)])
def test_with_encoder_hiding_the_decoder_does_not_depend_on_the_mask_embedding(
        task, mode, independent):
    net_input = mass_batch(task)["net_input"]
    model = tiny_model(task, hide_mask_states=mode)
    with torch.no_grad():
        before = model(**net_input, features_only=True)[0]
        model.encoder.embed_tokens.weight[task.mask_idx].normal_()
        after = model(**net_input, features_only=True)[0]
    assert torch.allclose(before, after, atol=1e-6) == independent


def test_hiding_leaves_other_batches_and_all_mask_sentences_alone(task):
    """No span positions (translation, denoising, generation): nothing is
    hidden; a sentence of masks only keeps them visible (and gives no NaN)."""
    batch = mass_batch(task, n=4)
    net_input = dict(batch["net_input"])
    src = net_input["src_tokens"].clone()
    src[0, :net_input["src_lengths"][0]] = task.mask_idx  # a sentence of masks only
    net_input["src_tokens"] = src
    plain, hiding = tiny_model(task), tiny_model(task, hide_mask_states="encoder")
    without_positions = {k: v for k, v in net_input.items() if k != "positions"}
    prev = without_positions.pop("prev_output_tokens")
    with torch.no_grad():
        assert torch.equal(plain(**without_positions, prev_output_tokens=prev)[0],
                           hiding(**without_positions, prev_output_tokens=prev)[0])
        first_plain, first_hiding = plain(**net_input)[0][0], hiding(**net_input)[0][0]
    assert torch.isfinite(first_hiding).all() and torch.allclose(first_plain, first_hiding)
    assert not hidden_positions(src, task.mask_idx, task.source_dictionary.pad())[0].any()


@pytest.mark.parametrize("m,k", [(20, 10), (12, 1), (6, 5), (7, 7)])
def test_mass_span_starts_follow_20_20_60_at_every_start(m, k):
    """MASS-unsupNMT's rule: 20% at the first token, 20% ending at the last,
    60% uniform over the m - k + 1 valid starts (both ends included)."""
    n, starts = 30000, m - k + 1
    rng = np.random.default_rng(2024)
    drawn = np.array([choose_masked_offsets(m, k, rng, span_start="mass")[0]
                      for _ in range(n)])
    expected = np.full(starts, 0.6 / starts)
    expected[0] += 0.2
    expected[-1] += 0.2
    observed = np.bincount(drawn, minlength=starts) / n
    assert len(observed) == starts
    # four standard errors per start
    assert np.all(np.abs(observed - expected) <= 4 * np.sqrt(expected * (1 - expected) / n))


def test_the_task_option_reaches_the_dataset_over_epochs(mono_data):
    task = make_task(mono_data[0], span_start="mass")
    task.load_dataset("train")
    dataset = task.dataset("train")
    first = last = expected_first = 0
    for epoch in range(1, 11):
        dataset.set_epoch(epoch)
        for i in range(len(dataset)):
            m, positions = len(dataset.dataset[i]), dataset[i]["positions"]
            first += int(positions[0] == 1)
            last += int(positions[-1] == m)
            expected_first += 0.2 + 0.6 / (m - len(positions) + 1)
    # both ends alike, far above uniform (about 0.2 + 0.6 / 7 for these lengths)
    n = 10 * len(dataset)
    assert abs(first - expected_first) < 4 * math.sqrt(n * 0.25)
    assert abs(last - expected_first) < 4 * math.sqrt(n * 0.25)


def test_decoder_noise_has_the_stated_rates_and_draws_ordinary_tokens():
    ids = np.arange(10, 60)
    tokens = np.full(200000, 5)
    noisy = noise_decoder_input(tokens, np.random.default_rng(0), mask_idx=3,
                                random_token_ids=ids, mask_prob=0.1, random_prob=0.1)
    assert np.array_equal(tokens, np.full(200000, 5))  # a copy
    assert abs((noisy == 3).mean() - 0.1) < 0.003
    assert abs(np.isin(noisy, ids).mean() - 0.1) < 0.003
    assert abs((noisy == 5).mean() - 0.8) < 0.003


def test_decoder_noise_changes_only_the_decoder_input(mono_data):
    clean = make_task(mono_data[0])
    noisy = make_task(mono_data[0], decoder_mask_prob=0.1, decoder_random_token_prob=0.1)
    for task in (clean, noisy):
        task.load_dataset("train")
    changed = masked = total = 0
    for i in range(len(clean.dataset("train"))):
        a, b = clean.dataset("train")[i], noisy.dataset("train")[i]
        for key in ("source", "target", "positions"):
            assert torch.equal(a[key], b[key]), key
        differs = a["prev_output_tokens"] != b["prev_output_tokens"]
        masked += int(b["prev_output_tokens"].eq(clean.mask_idx).sum())
        changed += int((differs & b["prev_output_tokens"].ne(clean.mask_idx)).sum())
        total += len(b["prev_output_tokens"])
    assert abs(masked / total - 0.1) < 0.02
    assert abs(changed / total - 0.1) < 0.02  # random tokens (a few drew the same token)


@pytest.mark.parametrize("overrides,message", [
    ({"decoder_mask_prob": -0.1}, "--decoder-mask-prob must be in"),
    ({"decoder_random_token_prob": 1.5}, "--decoder-random-token-prob must be in"),
    ({"decoder_mask_prob": 0.6, "decoder_random_token_prob": 0.5},
     "--decoder-mask-prob \\+ --decoder-random-token-prob must be at most 1"),
    ({"span_start": "mass", "mask_mode": "discrete"}, "--span-start mass places one span"),
])
def test_bad_values_name_the_flag(mono_data, overrides, message):
    with pytest.raises(ValueError, match=message):
        make_task(mono_data[0], **overrides)


@pytest.mark.parametrize("name,value,message", [
    ("embedding_style", "bert", "--embedding-style 'bert': expected one of fairseq, xlm"),
    ("hide_mask_states", "decoder", "--hide-mask-states 'decoder': expected one of none"),
])
def test_bad_model_option_values_say_what_is_expected(task, name, value, message):
    with pytest.raises(ValueError, match=message):
        tiny_model(task, **{name: value})


def test_xlm_style_adds_equal_scale_learned_positions_with_a_layernorm_and_gelu(task):
    model = tiny_model(task, embedding_style="xlm")
    gelu = torch.nn.functional.gelu  # torch's, by --gelu-precision's default
    for side in (model.encoder, model.decoder):
        assert side.embed_scale == 1.0
        assert isinstance(side.layernorm_embedding, torch.nn.LayerNorm)
        assert isinstance(side.embed_positions, LearnedPositionalEmbedding)
        assert all(layer.activation_fn is gelu for layer in side.layers)
    tokens, positions = model.encoder.embed_tokens.weight, model.encoder.embed_positions.weight
    assert 0.8 < tokens[4:].std().item() / positions[2:].std().item() < 1.25
    src = mass_batch(task, n=2)["net_input"]["src_tokens"]
    x, _ = model.encoder.forward_embedding(src)  # eval mode: no dropout
    ids = utils.make_positions(src, task.source_dictionary.pad())
    by_hand = model.encoder.layernorm_embedding(tokens[src] + positions[ids])
    assert torch.allclose(x, by_hand, atol=1e-6)
    # the default since the paper-analysis screen; fairseq's on request
    default = tiny_model(task)
    assert default.encoder.embed_scale == 1.0 and default.encoder.layernorm_embedding
    plain = tiny_model(task, embedding_style="fairseq")
    assert plain.encoder.embed_scale == math.sqrt(32)
    assert plain.encoder.layernorm_embedding is None


def test_fairseq_options_given_explicitly_override_the_style():
    args = Namespace(embedding_style="xlm", activation_fn="relu")
    apply_embedding_style(args)
    assert args.activation_fn == "relu" and args.no_scale_embedding and args.layernorm_embedding


@pytest.mark.parametrize("saved,expected", [("fairseq", "fairseq"), ("xlm", "xlm"),
                                            (None, "fairseq")])
def test_fine_tuning_takes_the_checkpoints_style_fairseqs_for_an_older_one(
        task, tmp_path, saved, expected):
    model_cfg = Namespace(arch="transformer_mass_tiny")
    if saved:
        model_cfg.embedding_style = saved
    torch.save({"cfg": {"model": model_cfg}, "model": {}}, tmp_path / "checkpoint.pt")
    model = tiny_model(task, finetune_from_model=str(tmp_path / "checkpoint.pt"))
    assert (model.encoder.layernorm_embedding is not None) == (expected == "xlm")
    assert (model.encoder.embed_scale == 1.0) == (expected == "xlm")


def test_resuming_a_fairseq_style_checkpoint_with_the_new_default_says_which_style(task):
    old = tiny_model(task, embedding_style="fairseq").state_dict()
    with pytest.raises(IncompatibleCheckpointError, match="--embedding-style fairseq"):
        tiny_model(task).load_state_dict(old)


def test_a_checkpoint_from_before_these_options_computes_what_it_did():
    """Made at commit 366993d (tests/make_defaults_fixture.py): its
    configuration has none of the new options."""
    state = torch.load(fixture.FIXTURE / "checkpoint.pt", weights_only=False)
    assert not {"hide_mask_states", "embedding_style"} & set(vars(state["cfg"]["model"]))
    assert "decoder_mask_prob" not in state["cfg"]["task"]
    expected = torch.load(fixture.FIXTURE / "expected.pt")
    model, task = fixture.load(fixture.FIXTURE)
    assert model.hide_mask_states == "none" and model.encoder.layernorm_embedding is None
    got = {**fixture.outputs(model, task, expected), **fixture.masked_items(task)}
    for key in ("span_logits", "full_logits"):
        assert torch.allclose(got[key], expected[key], atol=1e-5, rtol=0), key
    for key in ("beam_tokens", "valid_source", "valid_prev_output_tokens", "valid_target",
                "valid_positions"):
        assert torch.equal(got[key], expected[key]), key


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A few updates of masked_s2s with every option on, then of translation
    fine-tuning from it with none given again."""
    root = tmp_path_factory.mktemp("original_options")
    mono = synthetic_sentences(1, 300)
    pairs = synthetic_sentences(2, 120)
    binarize_splits(root, {"train": mono, "valid": mono[:30], "train.en-fr.en": pairs,
                           "train.en-fr.fr": [to_french(s) for s in pairs],
                           "valid.en-fr.en": pairs[:20],
                           "valid.en-fr.fr": [to_french(s) for s in pairs[:20]]})
    for lang in ("en", "fr"):
        (root / f"dict.{lang}.txt").write_text((root / "dict.txt").read_text())
    common = ["--user-dir", PLUGIN_DIR, "--arch", "transformer_mass_tiny", "--cpu",
              "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "300",
              "--num-workers", "0", "--log-format", "simple", "--no-epoch-checkpoints"]
    pretrain = run_cli(["fairseq-train", root, "--task", "masked_s2s", "--criterion",
                        "masked_s2s_loss", "--max-update", "8", "--validate-interval-updates",
                        "4", "--save-dir", root / "pretrain"] + ALL_OPTIONS + common, cwd=REPO)
    finetune = run_cli(["fairseq-train", root, "--task", "translation", "-s", "en", "-t", "fr",
                        "--criterion", "cross_entropy", "--max-update", "3",
                        "--finetune-from-model", root / "pretrain/checkpoint_last.pt",
                        "--save-dir", root / "finetune"] + common, cwd=REPO)
    return root, pretrain.stdout + pretrain.stderr, finetune.stdout + finetune.stderr


@pytest.mark.slow
def test_fairseq_train_runs_with_every_option_on(trained):
    root, log, _ = trained
    losses = valid_losses(log)
    assert len(losses) >= 2 and all(math.isfinite(loss) for loss in losses)
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task(
        [str(root / "pretrain/checkpoint_last.pt")], arg_overrides={"data": str(root)})
    model = models[0]
    assert model.hide_mask_states == "encoder"
    assert model.encoder.embed_scale == 1.0 and model.encoder.layernorm_embedding is not None


@pytest.mark.slow
def test_fine_tuning_keeps_the_pretrained_embedding_style(trained):
    root, _, log = trained
    state = torch.load(root / "finetune/checkpoint_last.pt", weights_only=False)
    model_cfg = state["cfg"]["model"]
    assert model_cfg.embedding_style == "xlm" and model_cfg.layernorm_embedding
    assert "encoder.layernorm_embedding.weight" in state["model"]


@pytest.mark.slow
def test_an_xlm_style_model_exports_as_a_plain_transformer_computing_the_same(trained, tmp_path):
    root = trained[0]
    export(str(root / "finetune/checkpoint_last.pt"), str(tmp_path / "model.pt"),
           data_bin=str(root))
    # the exported dictionaries (with <mask>) are beside the exported model
    (mass, _, task), (plain, _, _) = (checkpoint_utils.load_model_ensemble_and_task(
        [str(path)], arg_overrides={"data": str(data)})
        for path, data in ((root / "finetune/checkpoint_last.pt", root),
                           (tmp_path / "model.pt", tmp_path)))
    assert type(plain[0]) is TransformerModel and plain[0].encoder.layernorm_embedding
    src = torch.randint(4, len(task.source_dictionary) - 1, (3, 9),
                        generator=torch.Generator().manual_seed(0))
    prev = torch.randint(4, len(task.source_dictionary) - 1, (3, 7))
    lengths = torch.full((3,), 9)
    with torch.no_grad():
        expected, got = (model[0].eval()(src, lengths, prev)[0] for model in (mass, plain))
    assert torch.allclose(expected, got, atol=1e-5)
