"""Split text into subwords with a model from learn_subwords.py, line by line.

    python -m mass_tools.apply_subwords --model data/spm.model < mono.en > mono.spm.en

A ``.model`` file is applied with sentencepiece, a ``.codes`` file with
subword-nmt. Decode fairseq's output back with ``--post-process
sentencepiece`` or ``--post-process subword_nmt`` (``--remove-bpe``).
"""

import argparse
import os

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="PREFIX.model or PREFIX.codes")
    parser.add_argument("--input", default="-", help="input file (default: stdin)")
    parser.add_argument("--output", default="-", help="output file (default: stdout)")
    parser.add_argument("--encoding-errors", default="strict",
                        choices=["strict", "replace", "ignore"])
    return parser.parse_args(argv)


def load_segmenter(path):
    """A function from a line of text to a line of space-separated subwords."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such subword model; create it with learn_subwords.py")
    if path.endswith(".model"):
        import sentencepiece as spm

        processor = spm.SentencePieceProcessor(model_file=path)
        return lambda line: " ".join(processor.encode(line, out_type=str))
    if path.endswith(".codes"):
        from subword_nmt.apply_bpe import BPE

        with open(path, encoding="utf-8") as codes:
            bpe = BPE(codes)
        return bpe.process_line
    raise InputError(f"{path}: expected a sentencepiece .model or a subword-nmt .codes file")


def main(argv=None):
    args = parse_args(argv)
    segment = load_segmenter(args.model)
    with AtomicWriter(args.output) as out:
        for line in read_lines(args.input, args.encoding_errors):
            out.write(segment(line).strip() + "\n")


if __name__ == "__main__":
    run_main(main)
