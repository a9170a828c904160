from .masked_s2s_dataset import MaskedS2SDataset, ordinary_token_ids
from .masking import MaskedSentence, mask_sentence, span_length

__all__ = [
    "MaskedS2SDataset",
    "MaskedSentence",
    "mask_sentence",
    "ordinary_token_ids",
    "span_length",
]
