"""Loading a checkpoint into transformer_mass: what may differ, what may not.

Fine-tuning (--finetune-from-model) takes the checkpoint's model: its
architecture and sizes, embedding style and language embeddings, unless
they are given; a given size that differs stops before training, naming
both. The checkpoint's options are read once, when the model is built,
without its tensors. Positions: a checkpoint made with other
--max-source/target-positions loads (learned tables are cut or extended).
Vocabulary and architecture: a mismatch is an error that says what differs
and what to do, instead of fairseq's "please ensure that the architectures
match" or, worse, a dictionary of the same size whose symbols differ
loading silently.
"""

import logging
import zlib

import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager
from fairseq.modules import LearnedPositionalEmbedding

from ..checkpoint_safety import check_before_loading
from .options import EMBEDDING_STYLES, LEGACY_STYLE

logger = logging.getLogger(__name__)


# the model options fine-tuning takes from the checkpoint unless given: what
# makes its weights, and how it computes with them
SIZES = ("encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers",
         "encoder_attention_heads", "decoder_embed_dim", "decoder_ffn_embed_dim",
         "decoder_layers", "decoder_attention_heads", "decoder_output_dim", "decoder_input_dim")
ADOPTED = SIZES + (
    "embedding_style", "no_scale_embedding", "layernorm_embedding", "encoder_learned_pos",
    "decoder_learned_pos", "activation_fn", "encoder_normalize_before",
    "decoder_normalize_before", "share_all_embeddings", "share_decoder_input_output_embed",
    "no_token_positional_embeddings")


def missing_options(args) -> str:
    """The ADOPTED options (and --language-embeddings) ``args`` does not
    set, comma-separated: what fine-tuning may take from the checkpoint.
    Read by the architecture function before it sets any default."""
    return ",".join(name for name in ADOPTED + ("language_embeddings",)
                    if getattr(args, name, None) is None)


def pretrained_options(path) -> dict:
    """The model options saved in the checkpoint at ``path``, read without
    its tensors ({} without such a file: fairseq reports it itself)."""
    if not path or not PathManager.isfile(path):
        return {}
    local = check_before_loading(path)
    try:  # only the configuration is needed: the tensors stay on disk
        state = torch.load(local, map_location="cpu", mmap=True, weights_only=True)
    except (RuntimeError, ValueError):  # a legacy (non-zip) file cannot be mapped
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    cfg = state.get("cfg") or {"model": state.get("args")}
    model = cfg.get("model") if hasattr(cfg, "get") else None
    options = dict(model) if hasattr(model, "keys") else dict(vars(model or {}))
    options.setdefault("embedding_style", None)
    if options["embedding_style"] is None:
        options["embedding_style"] = LEGACY_STYLE
    return options


def _size(options):
    return (f"{options.get('encoder_layers')}+{options.get('decoder_layers')} layers, "
            f"{options.get('encoder_embed_dim')} dims")


def adopt_pretrained(args, saved, path) -> None:
    """Set on ``args`` the options of ``saved`` (a checkpoint's, see
    pretrained_options) that it does not give (``args.pretrained_options``);
    a ValueError for a given size that differs from the checkpoint's."""
    missing = set(filter(None, (getattr(args, "pretrained_options", None) or "").split(",")))
    for name in SIZES:
        if name in saved and name not in missing and getattr(args, name, None) != saved[name]:
            given = f"--{name.replace('_', '-')} {getattr(args, name)}"
            asked = (f"--arch {args.arch} asks for {given}" if args.arch != "transformer_mass"
                     else f"{given} was given")
            raise ValueError(
                f"--finetune-from-model {path} is {saved.get('arch', 'transformer_mass')} "
                f"({_size(saved)}); {asked}: leave the --arch and size options out "
                "(--arch transformer_mass takes the checkpoint's), or give the ones it was "
                "trained with")
    for name in ADOPTED:
        if name in missing and saved.get(name) is not None:
            setattr(args, name, saved[name])
    if "encoder_layers" in missing and saved.get("arch"):
        args.arch = saved["arch"]  # say what was built, in the new checkpoint too
    if "embedding_style" in missing:
        for name, value in EMBEDDING_STYLES[args.embedding_style].items():
            if name in missing and name not in saved:  # an older checkpoint's
                setattr(args, name, value)
    taken = [name for name in ADOPTED if name in missing and saved.get(name) is not None]
    if taken:
        logger.info(f"fine-tuning {saved.get('arch', 'transformer_mass')} ({_size(saved)}, "
                    f"--embedding-style {args.embedding_style}) from {path}: "
                    f"{', '.join(taken)} as it has them")
    args.pretrained_options = ""  # taken: a checkpoint of this run need not read it again


def fit_position_tables(model, state_dict) -> None:
    """Let a checkpoint with a different --max-source/target-positions load.

    A learned position table holds one row per position (after fairseq's
    padding offset); a model built for more positions keeps its own
    initialisation for the rows the checkpoint lacks, one built for fewer
    drops the checkpoint's last rows.
    """
    for side in ("encoder", "decoder"):
        key = f"{side}.embed_positions.weight"
        module = getattr(getattr(model, side), "embed_positions", None)
        if key not in state_dict or not isinstance(module, LearnedPositionalEmbedding):
            continue
        saved, own = state_dict[key], module.weight
        if saved.shape == own.shape or saved.size(1) != own.size(1):
            continue  # same table, or a different model: strict loading reports it
        rows = min(saved.size(0), own.size(0))
        fitted = own.detach().clone().to(saved)
        fitted[:rows] = saved[:rows]
        state_dict[key] = fitted
        offset = module.padding_idx + 1
        logger.warning(
            f"{key}: the checkpoint has {saved.size(0) - offset} positions and this "
            f"model {own.size(0) - offset}; using the first {rows - offset} of the checkpoint"
        )


def upgrade_language_embeddings(model, state_dict) -> None:
    """Let a checkpoint from before language embeddings were scaled load.

    Such a checkpoint (no ``embed_langs.version`` key) added its language
    vectors unscaled; dividing them by the model's scale keeps the function
    it computed.
    """
    for side in ("encoder", "decoder"):
        module = getattr(getattr(model, side), "embed_langs", None)
        weight, version = f"{side}.embed_langs.weight", f"{side}.embed_langs.version"
        if module is None or weight not in state_dict or version in state_dict:
            continue
        state_dict[weight] = state_dict[weight] / module.scale
        state_dict[version] = module.version.clone()
        logger.info(f"{weight}: scaled by 1/{module.scale:g} (a checkpoint from "
                    "before language embeddings were scaled like token embeddings)")


CHECKSUM_KEY = "dictionary_checksum"


def dictionary_checksum(dictionary) -> int:
    """CRC32 of the dictionary's symbols in index order."""
    return zlib.crc32("\n".join(dictionary.symbols).encode("utf-8"))


def model_checksums(model) -> list:
    """The checksums of ``model``'s source and target dictionaries, computed
    from the dictionaries themselves: the same on any device the model is on."""
    return [dictionary_checksum(model.encoder.dictionary),
            dictionary_checksum(model.decoder.dictionary)]


class IncompatibleCheckpointError(ValueError):
    """A checkpoint's weights do not fit this model (vocabulary or architecture)."""


def check_compatible(model, state_dict) -> None:
    """Raise IncompatibleCheckpointError saying what differs and what to do."""
    own = model.state_dict()
    # compared as integers: the checkpoint's tensor is on the CPU (or wherever
    # it was loaded), the model's buffer on the model's device
    if CHECKSUM_KEY in state_dict and CHECKSUM_KEY in own \
            and state_dict[CHECKSUM_KEY].tolist() != model_checksums(model):
        raise IncompatibleCheckpointError(
            "the checkpoint was trained with another dictionary (the symbols or "
            "their order differ, so its embeddings would mean other words): "
            "fine-tune with the pre-training dictionary (fairseq-preprocess "
            "--srcdict/--tgtdict PRETRAIN/dict.txt, or mass-binarize "
            "--dict PRETRAIN/dict.txt)"
        )
    vocab_key = "encoder.embed_tokens.weight"
    if vocab_key in state_dict and state_dict[vocab_key].shape[1:] == own[vocab_key].shape[1:] \
            and state_dict[vocab_key].size(0) != own[vocab_key].size(0):
        raise IncompatibleCheckpointError(
            f"the checkpoint has a vocabulary of {state_dict[vocab_key].size(0)} symbols and "
            f"this task's dictionary (with <mask>) has {own[vocab_key].size(0)}: fine-tune "
            "with the pre-training dictionary (fairseq-preprocess --srcdict/--tgtdict "
            "PRETRAIN/dict.txt, or mass-binarize --dict PRETRAIN/dict.txt)"
        )
    differences = [f"missing {k}" for k in own if k not in state_dict]
    differences += [f"unexpected {k}" for k in state_dict if k not in own]
    differences += [
        f"{k}: {tuple(v.shape)} in the checkpoint, {tuple(own[k].shape)} here"
        for k, v in state_dict.items() if k in own and v.shape != own[k].shape
    ]
    langs = [k for k in set(state_dict) ^ set(own) if k.endswith("embed_langs.weight")]
    if langs:
        has = "has" if langs[0] in state_dict else "has no"
        raise IncompatibleCheckpointError(
            f"the checkpoint {has} language embeddings and this model "
            f"{'does not' if has == 'has' else 'does'}: leave --language-embeddings out "
            "(fine-tuning takes the checkpoint's languages), or give the languages it "
            "was pre-trained with"
        )
    norm = [k for k in set(state_dict) ^ set(own) if "layernorm_embedding" in k]
    if norm:
        saved = "fairseq" if norm[0] in own else "xlm"
        raise IncompatibleCheckpointError(
            f"the checkpoint was trained with --embedding-style {saved} (its embeddings "
            f"{'have no' if saved == 'fairseq' else 'have a'} LayerNorm) and this model "
            f"is built with the other: give --embedding-style {saved} (the default is "
            "xlm; checkpoints saved before the option existed are fairseq's), or fine-tune "
            "with --finetune-from-model, which takes the checkpoint's style"
        )
    if differences:
        raise IncompatibleCheckpointError(
            f"the checkpoint was trained with another architecture ({len(differences)} "
            f"differences, e.g. {'; '.join(differences[:4])}). Use the --arch and size "
            "options (--encoder-layers, --encoder-embed-dim, ...) it was trained with"
        )
