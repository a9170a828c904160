"""A fine-tuned ``transformer_mass`` as ``transformers``' BART.

With ``--embedding-style xlm`` (the default) the model computes what
``BartForConditionalGeneration`` computes: token plus learned position
embeddings (fairseq numbers positions from ``padding_idx + 1`` = 2, BART
offsets its table by 2), a LayerNorm on the sum, post-norm layers, exact
GELU or ReLU, and one embedding table shared by the encoder, the decoder and
the output projection. Language embeddings, constant for one direction, are
folded into the position tables as for the plain fairseq export. Options
under which fairseq computes something else are refused by
:func:`check_mappable`, in one line naming the option.
"""

import torch

from ..export import ExportError, folded_state

# fairseq --activation-fn -> transformers' activation_function, where both
# compute the same function (torch's exact GELU, ReLU)
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}
# fairseq's special symbols at the ids BART's configuration and position
# offset assume (fairseq's Dictionary puts them there unless told otherwise)
SPECIAL_IDS = {"bos": 0, "pad": 1, "eos": 2, "unk": 3}
# fairseq keys BART has no place for: bookkeeping buffers, not weights
DROPPED = ("encoder.version", "decoder.version")
# fairseq's and BART's names alike
DROPOUTS = ("dropout", "attention_dropout", "activation_dropout", "encoder_layerdrop",
            "decoder_layerdrop")


def _side_refusals(args):
    """Per-side options (encoder, decoder) that BART computes differently."""
    found = []
    for side in ("encoder", "decoder"):
        if args.get(f"{side}_normalize_before"):
            found.append((f"--{side}-normalize-before", "pre-norm layers; BART's "
                          "normalize after the residual"))
        if not args.get(f"{side}_learned_pos"):
            found.append((f"--{side}-learned-pos", f"sinusoidal {side} positions; BART "
                          "learns its position tables"))
    for name in ("input", "output"):
        dim = args.get(f"decoder_{name}_dim")
        if dim is not None and dim != args.get("decoder_embed_dim"):
            found.append((f"--decoder-{name}-dim", f"{dim}, not --decoder-embed-dim: "
                          "BART has no projection there"))
    if args.get("encoder_embed_dim") != args.get("decoder_embed_dim"):
        found.append(("--encoder-embed-dim", "differs from --decoder-embed-dim; BART has "
                      "one width"))
    return found


def refusals(args) -> list:
    """(option, why) for each option of the model configuration ``args`` (a
    dict) under which BART would not compute the same function."""
    found = []
    if not args.get("layernorm_embedding"):
        style = args.get("embedding_style") or "fairseq"
        flag = "--embedding-style fairseq" if style == "fairseq" else "--layernorm-embedding"
        found.append((flag, "no LayerNorm on the sum of token and position embeddings, "
                      "which BART has; export a model trained with --embedding-style xlm "
                      "(the default)"))
    activation = args.get("activation_fn") or "relu"
    if activation not in ACTIVATIONS:
        found.append((f"--activation-fn {activation}", "BART has no activation that "
                      f"computes the same; only {' and '.join(ACTIVATIONS)} map exactly"))
    if not args.get("share_all_embeddings"):
        found.append(("--share-all-embeddings", "missing: separate source and target "
                      "vocabularies; BART has one table for encoder, decoder and output"))
    found += _side_refusals(args)
    for name in ("no_token_positional_embeddings", "adaptive_input", "adaptive_softmax_cutoff",
                 "tie_adaptive_weights", "cross_self_attention", "no_cross_attention",
                 "base_layers"):
        if args.get(name):
            found.append((f"--{name.replace('_', '-')}", "BART has no equivalent"))
    return found


def check_mappable(args, dictionary=None) -> None:
    """Refuse, in one line, a model configuration (and dictionary) BART
    cannot compute: the first option at fault, and the others' names."""
    found = refusals(args)
    if dictionary is not None:
        for name, expected in SPECIAL_IDS.items():
            actual = getattr(dictionary, name)()
            if actual != expected:
                found.append((f"<{name}> = {actual}", f"the dictionary's <{name}> is not "
                              f"{expected}, the id BART's configuration assumes"))
    if found:
        (flag, why), others = found[0], [flag for flag, _ in found[1:]]
        also = f" (also: {', '.join(others)})" if others else ""
        raise ExportError(f"cannot export to transformers: {flag}: {why}{also}")


def max_positions(model) -> int:
    """The one position limit of both sides (fairseq's table has 2 more rows)."""
    offset = model.encoder.padding_idx + 1
    rows = {side: getattr(model, side).embed_positions.weight.size(0) - offset
            for side in ("encoder", "decoder")}
    if rows["encoder"] != rows["decoder"]:
        raise ExportError(
            f"cannot export to transformers: --max-source-positions {rows['encoder']} and "
            f"--max-target-positions {rows['decoder']} differ: BART has one limit for both")
    return rows["encoder"]


def bart_config(model, args):
    """The ``BartConfig`` of ``model`` (built with the configuration ``args``)."""
    from transformers import BartConfig

    dictionary = model.encoder.dictionary
    return BartConfig(
        vocab_size=model.encoder.embed_tokens.weight.size(0),
        max_position_embeddings=max_positions(model),
        d_model=args["encoder_embed_dim"],
        encoder_layers=len(model.encoder.layers), decoder_layers=len(model.decoder.layers),
        encoder_ffn_dim=args["encoder_ffn_embed_dim"],
        decoder_ffn_dim=args["decoder_ffn_embed_dim"],
        encoder_attention_heads=args["encoder_attention_heads"],
        decoder_attention_heads=args["decoder_attention_heads"],
        activation_function=ACTIVATIONS[args.get("activation_fn") or "relu"],
        # for further training; the config's types are strict (0 is not a float)
        **{name: float(args.get(name) or 0.0) for name in DROPOUTS},
        # fairseq scales by sqrt(embed_dim), BART by sqrt(d_model): the same width
        scale_embedding=not args.get("no_scale_embedding"),
        bos_token_id=dictionary.bos(), pad_token_id=dictionary.pad(),
        eos_token_id=dictionary.eos(), decoder_start_token_id=dictionary.eos(),
        # fairseq-generate ends at the limit with </s>'s own score: see hf.generation
        forced_eos_token_id=None, forced_bos_token_id=None,
        is_encoder_decoder=True, tie_word_embeddings=True,
        architectures=["BartForConditionalGeneration"])


def bart_weights(model) -> dict:
    """``model``'s weights under BART's names: the language vectors folded into
    the position tables, one shared table for the tokens and the output."""
    state = folded_state(model)
    for key in DROPPED:
        state.pop(key, None)
    tokens = state.pop("encoder.embed_tokens.weight")
    for key in ("decoder.embed_tokens.weight", "decoder.output_projection.weight"):
        if not torch.equal(state.pop(key), tokens):
            raise ExportError(f"cannot export to transformers: {key} is not the shared "
                              "token table (--share-all-embeddings)")
    weights = {f"model.{key}": value for key, value in state.items()}
    for key in ("model.shared.weight", "model.encoder.embed_tokens.weight",
                "model.decoder.embed_tokens.weight", "lm_head.weight"):
        weights[key] = tokens
    weights["final_logits_bias"] = torch.zeros(1, tokens.size(0))
    return weights


def to_bart(model, args):
    """A ``BartForConditionalGeneration`` (eval mode) computing what ``model``
    (a ``transformer_mass``, configuration ``args``) computes for the
    direction its language embeddings are set to."""
    from transformers import BartForConditionalGeneration

    check_mappable(args, model.encoder.dictionary)
    bart = BartForConditionalGeneration(bart_config(model, args))
    weights = bart_weights(model)
    expected = set(bart.state_dict())
    if set(weights) != expected:
        raise ExportError(
            "cannot export to transformers: weights without a place in BART "
            f"{sorted(set(weights) - expected)[:5]}, BART weights not in the model "
            f"{sorted(expected - set(weights))[:5]}")
    bart.load_state_dict(weights, strict=True)
    return bart.eval()
