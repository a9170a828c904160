"""Export a fine-tuned ``transformer_mass`` checkpoint as fairseq's plain
``transformer``, which stock fairseq and serving engines load.

    python -m mass_tools.export --checkpoint ft/checkpoint_best.pt \\
        --data-bin data-bin --output export/model.pt [--source-lang en --target-lang fr]

What changes, and why the translations stay the same:

* language embeddings: for a fixed direction, the source (encoder) and target
  (decoder) language vectors are constants added at every position, after
  the token embedding is scaled. Added to every row of the learned position
  tables, they give the same sums, so the plain model computes the same
  function;
* the plugin's bookkeeping (the dictionary checksum buffer) is dropped;
* the configuration names fairseq's ``transformer`` and ``translation``, with
  no plugin directory, and holds only plain containers, so torch's default
  weights-only loading accepts the file;
* the dictionaries, with the ``<mask>`` symbol the model was built with (it
  is last, so existing binarized files keep their ids), are written beside
  the output as ``dict.SRC.txt`` and ``dict.TGT.txt``.

``--transformers DIR`` writes the same model, for one direction, as a
Hugging Face ``transformers`` BART directory with its tokenizer
(:mod:`mass_tools.hf`).
"""

import argparse
import logging
import os
import shlex
import sys
import tempfile
from argparse import Namespace
from dataclasses import fields

import torch
from fairseq import checkpoint_utils
from fairseq.dataclass.utils import overwrite_args_by_name
from fairseq.tasks.translation import TranslationConfig
from omegaconf import OmegaConf

from mass_plugin.models.checkpoint_compat import CHECKSUM_KEY
from mass_plugin.models.transformer_mass import TransformerMassModel

logger = logging.getLogger("mass_tools.export")

TRANSLATION_TASKS = ("translation", "unsupervised_translation")


class ExportError(ValueError):
    """A checkpoint that cannot be exported, with what to do instead."""


def plain(value):
    """``value`` with every Namespace turned into a dict, recursively."""
    if isinstance(value, Namespace):
        value = vars(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    return value


def saved_config(state) -> dict:
    """The training configuration of a loaded checkpoint as plain containers."""
    cfg = state["cfg"]
    if OmegaConf.is_config(cfg):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    return plain(cfg)


def check_exportable(cfg, checkpoint) -> None:
    """Refuse checkpoints that are not fine-tuned transformer_mass models."""
    task = cfg["task"].get("_name")
    arch = cfg["model"].get("arch", "")
    if not arch.startswith("transformer_mass"):
        raise ExportError(
            f"{checkpoint} is a '{arch}' model, not transformer_mass: it needs no export "
            "(stock fairseq loads it as it is)")
    if task not in TRANSLATION_TASKS:
        raise ExportError(
            f"{checkpoint} was trained with --task {task}: a pre-training checkpoint does "
            "not translate. Fine-tune it first (fairseq-train --task translation "
            f"--finetune-from-model {checkpoint} ..., e.g. examples/finetune_nmt.sh) and "
            "export the fine-tuned checkpoint")


def direction(cfg, source_lang=None, target_lang=None):
    """The (source, target) suffixes of the exported translation task."""
    task = cfg["task"]
    src = source_lang or task.get("source_lang")
    tgt = target_lang or task.get("target_lang")
    if not src or not tgt:
        raise ExportError(
            f"the checkpoint's task ({task.get('_name')}, languages "
            f"{task.get('langs') or '?'}) translates in more than one direction: "
            "choose one with --source-lang and --target-lang")
    return src, tgt


def load_model(checkpoint, state, data_bin, src, tgt):
    """The model and task as fairseq-generate would build them, from the
    already loaded ``state`` of ``checkpoint``."""
    overrides = {"data": os.path.abspath(data_bin), "source_lang": src, "target_lang": tgt}
    overwrite_args_by_name(state["cfg"], overrides)  # as fairseq's loader does
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [checkpoint], state=state)
    model = models[0].eval()
    if not isinstance(model, TransformerMassModel):
        raise ExportError(f"{checkpoint} did not build a transformer_mass model")
    return model, task


def folded_state(model) -> dict:
    """The model's weights for fairseq's plain transformer: language vectors
    folded into the position tables, plugin-only entries dropped."""
    state = {key: value.clone() for key, value in model.state_dict().items()}
    state.pop(CHECKSUM_KEY, None)
    embed_langs = model.encoder.embed_langs
    for key in [k for k in state if ".embed_langs." in k]:
        del state[key]
    if embed_langs is None:
        return state
    for side, lang_id in (("encoder", embed_langs.default_src),
                          ("decoder", embed_langs.default_tgt)):
        key = f"{side}.embed_positions.weight"
        if key not in state:
            raise ExportError(
                "a model with language embeddings and sinusoidal positions cannot be "
                "exported: the language vectors can only be folded into learned "
                "position tables (--encoder-learned-pos --decoder-learned-pos, the "
                "transformer_mass default)")
        with torch.no_grad():
            vector = embed_langs(torch.tensor([lang_id])).reshape(-1)  # scaled, as added
        state[key] = state[key] + vector.to(state[key])
    return state


def plain_config(cfg, src, tgt, data_bin) -> dict:
    """The saved configuration, naming only what stock fairseq has."""
    cfg = dict(cfg)
    known = {f.name for f in fields(TranslationConfig)}
    task = {k: v for k, v in cfg["task"].items() if k in known}
    task.update(_name="translation", data=os.path.abspath(data_bin),
                source_lang=src, target_lang=tgt)
    # the plugin's own model options; --embedding-style has already set the
    # fairseq options it stands for, --hide-mask-states acts in pre-training only
    model = {k: v for k, v in cfg["model"].items()
             if k not in ("language_embeddings", "embedding_lang_pair", "hide_mask_states",
                          "embedding_style")}
    model.update(_name="transformer", arch="transformer", task="translation",
                 user_dir=None, criterion="cross_entropy", data=task["data"],
                 source_lang=src, target_lang=tgt)
    cfg.update(task=task, model=model, criterion={"_name": "cross_entropy"})
    cfg["common"] = dict(cfg.get("common") or {}, user_dir=None)
    return cfg


def write_dictionaries(task, src, tgt, out_dir) -> list:
    """``dict.SRC.txt`` and ``dict.TGT.txt`` (``<mask>`` included) in ``out_dir``."""
    paths = []
    for lang, dictionary in ((src, task.source_dictionary), (tgt, task.target_dictionary)):
        path = os.path.join(out_dir, f"dict.{lang}.txt")
        dictionary.save(path)
        paths.append(path)
    return paths


def read_checkpoint(checkpoint):
    """The loaded state of a fine-tuned transformer_mass ``checkpoint`` and its
    configuration as plain containers; other checkpoints are refused."""
    loaded = checkpoint_utils.load_checkpoint_to_cpu(checkpoint)
    cfg = saved_config(loaded)
    check_exportable(cfg, checkpoint)
    return loaded, cfg


def build_model(checkpoint, loaded, cfg, data_bin, src, tgt):
    """(model, task, data directory) for the direction ``src``->``tgt``."""
    data_bin = data_bin or cfg["task"].get("data")
    if not data_bin or not os.path.isdir(data_bin):
        raise ExportError(
            f"no data directory {data_bin!r} with the model's dictionaries: give the "
            "binarized data directory of fine-tuning with --data-bin")
    model, task = load_model(checkpoint, loaded, data_bin, src, tgt)
    if model.encoder.embed_langs is not None:
        langs = model.encoder.embed_langs.langs
        if model.encoder.embed_langs.default_src is None:
            raise ExportError(
                f"the model has language embeddings ({','.join(langs)}) but {src}->{tgt} "
                "names none of them: choose --source-lang/--target-lang among them")
    return model, task, data_bin


def export(checkpoint, output, data_bin=None, source_lang=None, target_lang=None) -> dict:
    """Write the plain checkpoint and its dictionaries; return what was written."""
    loaded, cfg = read_checkpoint(checkpoint)
    src, tgt = direction(cfg, source_lang, target_lang)
    model, task, data_bin = build_model(checkpoint, loaded, cfg, data_bin, src, tgt)
    out_dir = os.path.dirname(os.path.abspath(output))
    os.makedirs(out_dir, exist_ok=True)
    state = {
        "args": None,
        "cfg": plain_config(cfg, src, tgt, data_bin),
        "model": folded_state(model),
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion",
                               "optimizer_name": "none", "num_updates": 0,
                               "lr_scheduler_state": {"best": None}}],
        "extra_state": {"epoch": 1},
    }
    staged = output + ".tmp"
    torch.save(state, staged)
    os.replace(staged, output)
    dicts = write_dictionaries(task, src, tgt, out_dir)
    return {"checkpoint": output, "dictionaries": dicts, "direction": (src, tgt)}


def convert_to_ctranslate2(exported, output_dir, force=False) -> str:
    """Convert an exported checkpoint with CTranslate2's own fairseq converter.

    That converter reads the model arguments as an attribute namespace; the
    exported file holds plain dicts (for stock weights-only loading), so a
    temporary copy with a Namespace is made for it. The converted model is
    float32; choose int8 or float16 when loading it (``compute_type``).
    """
    try:
        from ctranslate2.converters import FairseqConverter
    except ImportError as err:
        raise ExportError(
            "CTranslate2 is not installed: pip install -e '.[serve]' (or pip install "
            "ctranslate2)") from err
    state = torch.load(exported, map_location="cpu", weights_only=True)
    task, model = state["cfg"]["task"], state["cfg"]["model"]
    args = Namespace(**{**task, **model, "task": "translation"})
    out_dir = os.path.dirname(os.path.abspath(exported))
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".ct2-") as work:
        source = os.path.join(work, "model.pt")
        torch.save(dict(state, args=args, cfg=None), source)
        converter = FairseqConverter(source, out_dir, source_lang=task["source_lang"],
                                     target_lang=task["target_lang"])
        return converter.convert(output_dir, force=force)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m mass_tools.export",
        description="Export a fine-tuned transformer_mass checkpoint as fairseq's plain "
        "transformer (loadable by stock fairseq and CTranslate2's converter) and/or as a "
        "Hugging Face transformers model directory.")
    parser.add_argument("--checkpoint", required=True, help="the fine-tuned checkpoint")
    parser.add_argument("--output",
                        help="the exported checkpoint; dict.SRC.txt and dict.TGT.txt "
                        "are written in the same directory")
    parser.add_argument("--data-bin", help="the binarized data directory of fine-tuning "
                        "(default: the one saved in the checkpoint)")
    parser.add_argument("--source-lang", help="source language (default: the checkpoint's "
                        "-s; required for unsupervised_translation models)")
    parser.add_argument("--target-lang", help="target language (default: the checkpoint's -t)")
    parser.add_argument("--direction", metavar="SRC-TGT",
                        help="the direction to export, e.g. en-fr: --source-lang and "
                        "--target-lang in one. --transformers needs it for a model with "
                        "language embeddings or a checkpoint that names no direction")
    parser.add_argument("--ctranslate2", metavar="DIR",
                        help="also convert the export for CTranslate2 into DIR, with "
                        "CTranslate2's fairseq converter (pip install -e '.[serve]'); "
                        "needs --output")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --ctranslate2 or --transformers directory")
    add_transformers_args(parser)
    args = parser.parse_args(argv)
    if not args.output and not args.transformers:
        parser.error("give --output (fairseq) or --transformers (Hugging Face), or both")
    if args.ctranslate2 and not args.output:
        parser.error("--ctranslate2 converts the fairseq export: give --output too")
    if args.direction:
        pair = args.direction.split("-")
        if len(pair) != 2 or not all(pair):
            parser.error(f"--direction {args.direction}: expected SRC-TGT, e.g. en-fr")
        for given, lang, flag in zip((args.source_lang, args.target_lang), pair,
                                     ("--source-lang", "--target-lang")):
            if given and given != lang:
                parser.error(f"--direction {args.direction} and {flag} {given} disagree")
        args.source_lang, args.target_lang = pair
    return args


def add_transformers_args(parser) -> None:
    """The options of ``--transformers`` (mass_tools.hf): where, the
    sentencepiece model, and the decoding settings for generation_config.json."""
    group = parser.add_argument_group(
        "transformers", "a Hugging Face transformers directory (BART), pip install -e '.[hf]'")
    group.add_argument("--transformers", metavar="DIR",
                       help="write a transformers model directory: weights (safetensors), "
                       "config, generation config, tokenizer and a model card (README.md)")
    group.add_argument("--spm-model", help="the sentencepiece model the data was "
                       "segmented with (prepare_data.sh's SPM_MODEL); needed by --transformers")
    defaults = "default: the checkpoint's --eval-bleu-args, else fairseq-generate's"
    group.add_argument("--beam", type=int, help=f"beam size ({defaults})")
    group.add_argument("--lenpen", type=float, help=f"length penalty ({defaults})")
    group.add_argument("--max-len-b", type=int,
                       help=f"at most this many tokens before </s> ({defaults})")
    group.add_argument("--max-len-a", type=float,
                       help="must be 0: a generation config has no limit that grows with "
                       "the source")
    group.add_argument("--min-len", type=int, help=f"at least this many tokens ({defaults})")


def setup_logging() -> None:
    """What was written, on stdout, whatever fairseq set up."""
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def write_fairseq(args) -> None:
    """--output (and --ctranslate2)."""
    written = export(args.checkpoint, args.output, args.data_bin,
                     args.source_lang, args.target_lang)
    src, tgt = written["direction"]
    logger.info(f"exported {src}->{tgt}: {written['checkpoint']}")
    for path in written["dictionaries"]:
        logger.info(f"dictionary: {path}")
    if args.ctranslate2:
        try:
            converted = convert_to_ctranslate2(args.output, args.ctranslate2, args.force)
        except RuntimeError as err:  # CTranslate2 refuses to overwrite
            raise ExportError(str(err)) from err
        logger.info(f"CTranslate2 model: {converted}")


def write_transformers(args, argv) -> None:
    """--transformers: mass_tools.hf, imported only here (an optional extra)."""
    try:
        from .hf.directory import export_transformers
    except ImportError as err:
        raise ExportError(f"--transformers needs transformers ({err}): pip install -e "
                          "'.[hf]' (or pip install transformers safetensors tokenizers)")
    decoding = {name: getattr(args, name)
                for name in ("beam", "lenpen", "max_len_a", "max_len_b", "min_len")}
    command = "python -m mass_tools.export " + shlex.join(argv)
    written = export_transformers(
        args.checkpoint, args.transformers, args.spm_model, data_bin=args.data_bin,
        direction=(args.source_lang, args.target_lang), decoding=decoding,
        command=command, force=args.force)
    logger.info(f"transformers model ({written['direction']}): {written['directory']}")
    for line in written["notes"]:
        logger.info(line)


def main(argv=None) -> int:
    setup_logging()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if not os.path.isfile(args.checkpoint):
        sys.exit(f"error: --checkpoint {args.checkpoint}: no such file")
    try:
        if args.transformers:  # first: it has more to refuse
            write_transformers(args, argv)
        if args.output:
            write_fairseq(args)
    except (ValueError, FileNotFoundError) as err:  # ExportError and fairseq's own
        sys.exit(f"error: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
