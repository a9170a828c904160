"""``python -m mass_tools.export --transformers DIR``: one direction of a
fine-tuned ``transformer_mass`` checkpoint as a ``transformers`` directory
that ``AutoModelForSeq2SeqLM`` and ``AutoTokenizer`` load offline: the BART
weights (safetensors) and config (:mod:`.model`), a generation config with
the decoding settings (:mod:`.generation`), the tokenizer (:mod:`.tokenizer`)
and a model card (:mod:`.card`)."""

import os
import shutil

import transformers

from ..export import ExportError, build_model, direction, read_checkpoint
from .card import model_card, model_facts, training_facts
from .generation import decoding_settings, generation_config, max_new_tokens, recorded_decoding
from .model import check_mappable, to_bart
from .tokenizer import build_tokenizer


def model_languages(cfg) -> list:
    """The languages with an embedding, as the checkpoint's options say."""
    langs = cfg["model"].get("language_embeddings")
    return [] if not langs or langs == "none" else langs.split(",")


def chosen_direction(cfg, source_lang, target_lang):
    """The direction to export: the one given, else the checkpoint's -s/-t,
    which a model with language embeddings must be given explicitly."""
    given = bool(source_lang and target_lang)
    langs = model_languages(cfg)
    try:
        src, tgt = direction(cfg, source_lang, target_lang)
    except ExportError as err:
        raise ExportError(f"{err} (or --direction SRC-TGT)") from err
    if langs and not given:
        raise ExportError(
            f"the model has language embeddings ({','.join(langs)}), which the export "
            "folds in for one direction: say which with --direction, e.g. "
            f"--direction {src}-{tgt} (the checkpoint's -s/-t)")
    return src, tgt


def check_inputs(spm_model, out_dir, force) -> None:
    """Refuse before the checkpoint is read: no sentencepiece model, or an
    existing directory without --force (or, with it, one that is no export)."""
    if not spm_model:
        raise ExportError("--transformers needs the sentencepiece model the data was "
                          "segmented with: --spm-model (e.g. work/demo/spm.model)")
    if not os.path.isfile(spm_model) or not spm_model.endswith(".model"):
        raise ExportError(f"--spm-model {spm_model}: not a sentencepiece .model file")
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        if not force:
            raise ExportError(f"--transformers {out_dir} exists and is not empty: "
                              "choose another directory or add --force to replace it")
        if not os.path.isfile(os.path.join(out_dir, "config.json")):
            raise ExportError(f"--transformers {out_dir} is not a transformers model "
                              "directory (no config.json): --force replaces only those")


def save(out_dir, bart, tokenizer, card) -> None:
    """Write everything into a new directory beside ``out_dir``, then put it
    in its place: an interrupted export leaves no half-written model."""
    staging = f"{os.path.abspath(out_dir)}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        bart.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        with open(os.path.join(staging, "README.md"), "w", encoding="utf-8") as readme:
            readme.write(card)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def export_transformers(checkpoint, out_dir, spm_model, data_bin=None, direction=(None, None),
                        decoding=None, command="", force=False) -> dict:
    """Write the ``transformers`` directory ``out_dir``; return what was written.
    ``decoding`` holds the export's --beam, --lenpen, --max-len-a/b, --min-len
    (None: the checkpoint's record, else fairseq-generate's default)."""
    check_inputs(spm_model, out_dir, force)
    loaded, cfg = read_checkpoint(checkpoint)
    check_mappable(cfg["model"])
    src, tgt = chosen_direction(cfg, *direction)
    settings, sources = decoding_settings(decoding or {}, recorded_decoding(cfg["task"]))
    max_new_tokens(settings, cfg["model"].get("max_target_positions") or 1024)  # refuse early
    model, task, data_bin = build_model(checkpoint, loaded, cfg, data_bin, src, tgt)
    bart = to_bart(model, cfg["model"])
    positions = bart.config.max_position_embeddings
    bart.generation_config = generation_config(settings, task.target_dictionary, positions)
    tokenizer = build_tokenizer(spm_model, task.source_dictionary, positions)
    facts = {"direction": (src, tgt), "languages": model_languages(cfg),
             "model": model_facts(bart.config, cfg["model"]),
             "training": training_facts(cfg, loaded), "checkpoint": checkpoint,
             "command": command, "directory": out_dir,
             "settings": settings, "sources": sources, "generation": bart.generation_config,
             "transformers_version": transformers.__version__}
    save(out_dir, bart, tokenizer, model_card(facts))
    notes = [f"{name}: {settings[name]} ({sources[name]})" for name in settings]
    return {"directory": out_dir, "direction": f"{src}->{tgt}", "notes": notes}
