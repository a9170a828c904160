"""Language embeddings of ``transformer_mass``, and which languages it gets.

One learned vector per language is added to the input embeddings of the
encoder (source language) and decoder (target language), as in XLM and
MASS's unsupervised NMT. The languages come from --language-embeddings, the
task's --langs, or the checkpoint fine-tuning starts from; the ids used when
a batch names no language come from the task's -s/-t or
--embedding-lang-pair.
"""

import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class LanguageEmbedding(nn.Module):
    """One learned vector per language, shared by the encoder and decoder.
    ``default_src``/``default_tgt`` are the ids used when a batch names no
    language (fairseq's translation task).

    The vector is multiplied by ``scale``, the factor fairseq applies to token
    embeddings (sqrt(embed_dim) unless --no-scale-embedding), so a language
    weighs as much as a token in the input. Unscaled it would be about
    sqrt(embed_dim) times weaker than the tokens and learn that much more
    slowly: a decoder that barely sees its target language tends to continue
    in the language of its source, which defeats back-translation."""

    VERSION = 2  # 1: the vector was added unscaled

    def __init__(self, langs, dim, scale=1.0):
        super().__init__()
        self.langs = list(langs)
        self.weight = nn.Parameter(torch.empty(len(self.langs), dim))
        nn.init.normal_(self.weight, mean=0.0, std=dim ** -0.5)
        self.scale = float(scale)
        # saved with the weights; checkpoint_compat upgrades checkpoints without it
        self.register_buffer("version", torch.tensor([float(self.VERSION)]))
        self.default_src = None
        self.default_tgt = None

    def ids(self, lang_id, default, batch_size, device, role):
        if lang_id is None:
            if default is None:
                raise ValueError(
                    f"this model has language embeddings ({','.join(self.langs)}) but "
                    f"the batch does not say its {role} language: use --task "
                    "unsupervised_translation or masked_s2s --langs, or --task "
                    "translation with -s/-t among these languages"
                )
            lang_id = default
        if not torch.is_tensor(lang_id):
            lang_id = torch.full((batch_size,), int(lang_id), dtype=torch.long)
        return lang_id.to(device=device, dtype=torch.long)

    def forward(self, lang_id):
        return self.scale * self.weight.index_select(0, lang_id).unsqueeze(1)


def model_languages(args, task, pretrained=None):
    """The languages that get an embedding: --language-embeddings, else the
    task's languages when there are two or more, else those of the
    --finetune-from-model checkpoint (``pretrained``: its options), else none."""
    given = getattr(args, "language_embeddings", None)
    if given == "none":
        return []
    if given:
        langs = [lang for lang in given.split(",") if lang]
    elif len(getattr(task, "langs", None) or []) >= 2:
        langs = list(task.langs)
    else:
        saved = (pretrained or {}).get("language_embeddings")
        langs = [] if not saved or saved == "none" else [x for x in saved.split(",") if x]
        if langs:
            logger.info(f"language embeddings {saved} (from {args.finetune_from_model})")
    if len(set(langs)) != len(langs):
        raise ValueError(f"--language-embeddings lists a language twice: {given}")
    if given and len(langs) < 1:
        raise ValueError(f"--language-embeddings {given!r}: expected e.g. 'en,fr' or 'none'")
    return langs


def build_language_embedding(args, task, langs, dim, scale) -> LanguageEmbedding:
    """A :class:`LanguageEmbedding` for ``langs`` with the task's default ids."""
    embed_langs = LanguageEmbedding(langs, dim, scale=scale)
    pair = _embedding_lang_pair(args, langs)
    embed_langs.default_src = _default_lang_id(langs, task, "source_lang", pair[0])
    embed_langs.default_tgt = _default_lang_id(langs, task, "target_lang", pair[1])
    return embed_langs


def _embedding_lang_pair(args, langs):
    given = getattr(args, "embedding_lang_pair", None)
    if not given:
        return None, None
    pair = given.split("-")
    if len(pair) != 2 or any(lang not in langs for lang in pair):
        raise ValueError(
            f"--embedding-lang-pair {given}: expected SRC-TGT with languages among the "
            f"model's language embeddings {','.join(langs)}, e.g. {langs[0]}-{langs[0]}"
        )
    return pair


def _default_lang_id(langs, task, name, override=None):
    """The id of the task's -s/-t language (fairseq's translation task), or
    of --embedding-lang-pair's."""
    if override is not None:
        return langs.index(override)
    cfg = getattr(task, "cfg", None) or getattr(task, "args", None)
    lang = getattr(cfg, name, None)
    if lang is None:
        return None
    if lang not in langs:
        flag = "-s" if name == "source_lang" else "-t"
        raise ValueError(
            f"the model has language embeddings for {','.join(langs)}, but the "
            f"task's {flag} is '{lang}': use {flag} among these languages, or say "
            "which embeddings to use with --embedding-lang-pair (e.g. "
            f"--embedding-lang-pair {langs[0]}-{langs[0]})"
        )
    return langs.index(lang)
