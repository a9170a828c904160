"""Parallel sentence pairs whose batches name their source and target language.

The model's language embeddings (see ``--language-embeddings`` of
``transformer_mass``) read one language id per sentence from ``net_input``;
task ``unsupervised_translation`` validates and generates with these pairs.
"""

import torch
from fairseq.data import LanguagePairDataset


class LanguagePairWithIdsDataset(LanguagePairDataset):
    """fairseq's :class:`LanguagePairDataset` whose batches also name the
    source and target language (``net_input``'s ``src_lang_id``/``tgt_lang_id``,
    one id per sentence).

    The ids are kept under names of our own: fairseq's collater reads
    ``self.src_lang_id``/``self.tgt_lang_id`` and, when they are set, adds
    ``expand``-ed (B, 1) tensors whose elements share one memory location,
    which the DataLoader's ``pin_memory`` (on whenever CUDA is available)
    refuses to copy."""

    def __init__(self, *args, src_lang_id, tgt_lang_id, **kwargs):
        super().__init__(*args, **kwargs)
        self.src_lang_index = src_lang_id
        self.tgt_lang_index = tgt_lang_id

    def collater(self, samples, pad_to_length=None):
        batch = super().collater(samples, pad_to_length=pad_to_length)
        if "net_input" in batch:
            n = batch["net_input"]["src_tokens"].size(0)
            batch["net_input"]["src_lang_id"] = torch.full((n,), self.src_lang_index)
            batch["net_input"]["tgt_lang_id"] = torch.full((n,), self.tgt_lang_index)
        return batch
