"""Check a binarized split's ``.bin`` against its ``.idx`` before reading it.

fairseq's memory-mapped datasets trust the index: a ``.bin`` cut short (a
full disk, an interrupted copy) fails later, deep in numpy, with "offset
must be non-negative and no greater than buffer length". Comparing the
file's size with the size the index describes catches it up front, with the
file's name and the command that rebuilds it.
"""

import os
import struct

import numpy as np
from fairseq.data.indexed_dataset import MMapIndexedDataset


class BinarizedDataError(ValueError):
    """A binarized split is truncated or does not match its index."""


def _is_mmap_index(idx_path) -> bool:
    magic = MMapIndexedDataset.Index._HDR_MAGIC
    with open(idx_path, "rb") as f:
        return f.read(len(magic)) == magic


def described_size(idx_path) -> tuple:
    """(bytes of data, number of sentences) that a memory-mapped index describes."""
    index = MMapIndexedDataset.Index(idx_path)
    if len(index) == 0:
        return 0, 0
    pointer, size = index[len(index) - 1]  # byte offset and length of the last sentence
    return int(pointer) + int(size) * np.dtype(index.dtype).itemsize, len(index)


def check_binarized(prefix, rebuild: str) -> None:
    """Raise BinarizedDataError when ``prefix.bin`` is not the size that
    ``prefix.idx`` describes; ``rebuild`` says how to make both anew.

    Splits that are missing, or not in fairseq's mmap format, are left to
    fairseq's own loader and its messages.
    """
    idx_path, bin_path = f"{prefix}.idx", f"{prefix}.bin"
    if not (os.path.isfile(idx_path) and os.path.isfile(bin_path)):
        return
    if not _is_mmap_index(idx_path):
        return
    try:
        expected, sentences = described_size(idx_path)
    except (AssertionError, KeyError, ValueError, struct.error) as err:
        raise BinarizedDataError(
            f"{idx_path} is damaged ({err or type(err).__name__}). Rebuild "
            f"{prefix}.bin/.idx: {rebuild}"
        ) from err
    actual = os.path.getsize(bin_path)
    if actual != expected:
        state = "truncated" if actual < expected else "longer than its index says"
        raise BinarizedDataError(
            f"{bin_path} is {state}: it holds {actual} bytes, but {idx_path} "
            f"describes {expected} bytes ({sentences} sentences). Rebuild "
            f"{prefix}.bin/.idx: {rebuild}"
        )
