"""Learn ONE joint subword model over the monolingual text of all languages.

    python -m mass_tools.learn_subwords --method sentencepiece --vocab-size 16000 \\
        --output data/spm mono.en mono.fr

writes data/spm.model (sentencepiece) or, with --method bpe, data/spm.codes
(subword-nmt BPE, learnt on tokenised text). Each language contributes at
most --max-lines-per-language lines, so a large corpus does not crowd out a
small one.
"""

import argparse
import os
import random
import tempfile

from mass_tools.textio import InputError, read_lines, run_main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="one text file per language")
    parser.add_argument("--method", choices=["sentencepiece", "bpe"], default="sentencepiece")
    parser.add_argument("--output", required=True,
                        help="output prefix: PREFIX.model (sentencepiece) or PREFIX.codes (bpe)")
    parser.add_argument("--vocab-size", type=int, default=16000,
                        help="sentencepiece vocabulary size, or number of BPE merges")
    parser.add_argument("--model-type", choices=["unigram", "bpe"], default="unigram",
                        help="sentencepiece model type")
    parser.add_argument("--max-lines-per-language", type=int, default=1_000_000)
    parser.add_argument("--symbols", nargs="+", default=[],
                        help="sentencepiece: symbols kept as pieces of their own wherever they "
                        "are, whether or not the text has them (translate_words.py's "
                        "--placeholder)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    return parser.parse_args(argv)


def balanced_sample(paths, max_lines, seed):
    """Up to ``max_lines`` non-empty lines of each file, sampled with ``seed``."""
    rng = random.Random(seed)
    sample = []
    for path in paths:
        if not os.path.isfile(path):
            raise InputError(f"{path}: no such file (one monolingual file per language)")
        lines = [line for line in read_lines(path) if line.strip()]
        if not lines:
            raise InputError(f"{path}: no text to learn subwords from")
        if len(lines) > max_lines:
            lines = rng.sample(lines, max_lines)
        sample.extend(lines)
    rng.shuffle(sample)
    return sample


def learn_sentencepiece(lines, args):
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=args.output,
        vocab_size=args.vocab_size, model_type=args.model_type,
        character_coverage=1.0, num_threads=args.threads, minloglevel=1,
        # fairseq adds its own <s> <pad> </s> <unk>; keep only unk here
        bos_id=-1, eos_id=-1, unk_id=0, user_defined_symbols=args.symbols,
    )
    return args.output + ".model"


def learn_bpe(lines, args):
    from subword_nmt.learn_bpe import learn_bpe as subword_nmt_learn

    with tempfile.TemporaryFile("w+", encoding="utf-8") as text:
        text.writelines(line + "\n" for line in lines)
        text.seek(0)
        path = args.output + ".codes"
        with open(path + ".tmp", "w", encoding="utf-8") as codes:
            subword_nmt_learn(text, codes, args.vocab_size, min_frequency=2)
        os.replace(path + ".tmp", path)
    return path


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    lines = balanced_sample(args.inputs, args.max_lines_per_language, args.seed)
    learn = learn_sentencepiece if args.method == "sentencepiece" else learn_bpe
    print(learn(lines, args))


if __name__ == "__main__":
    run_main(main)
