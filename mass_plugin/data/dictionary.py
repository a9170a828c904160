"""The ``<mask>`` symbol in a fairseq dictionary.

Pre-training, fine-tuning and generation must see one vocabulary: the task
adds ``<mask>`` when it loads the dictionary, and so does the model when it
is built (a fine-tuning task reads the pre-training ``dict.txt``, which
fairseq-preprocess wrote without it), so that both give the embedding table
the same size.
"""

MASK_SYMBOL = "<mask>"


def add_mask_symbol(dictionary) -> int:
    """The index of ``<mask>`` in ``dictionary``, added the way fairseq's
    masked LM adds it (once, after the other symbols) when it is missing."""
    if MASK_SYMBOL in dictionary.indices:
        return dictionary.index(MASK_SYMBOL)
    return dictionary.add_symbol(MASK_SYMBOL)
