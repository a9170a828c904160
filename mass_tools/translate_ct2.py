"""Translate raw text with a CTranslate2 model made by ``mass_tools.export``.

    python -m mass_tools.translate_ct2 --model export/ct2 --spm work/demo/spm.model \\
        --input test.en --output test.fr.hyp --compute-type int8

Raw lines in, detokenised lines out, one for one (an empty line gives an
empty line): each line is split into pieces with the sentencepiece model of
training, translated with beam search, and the pieces joined back, as
fairseq-generate --post-process sentencepiece does; ``--nbest N`` writes
each line's N best hypotheses instead, on N consecutive lines, best first
(what the unsupervised recipe's repairs read, projects/unsupervised/rounds.py). With
``--pieces`` the input and output are space-separated sentencepiece pieces
instead and ``--spm`` is not needed. Needs only ctranslate2 and sentencepiece (``pip install -e
'.[serve]'``), not fairseq.
"""

import argparse
import math
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the CTranslate2 model directory")
    parser.add_argument("--spm", help="the sentencepiece model of training (raw text)")
    parser.add_argument("--pieces", action="store_true",
                        help="input and output are sentencepiece pieces, not raw text")
    parser.add_argument("--input", default="-", help="raw source text (default: stdin)")
    parser.add_argument("--output", default="-", help="translations (default: stdout)")
    parser.add_argument("--beam", type=int, default=5, help="beam size (default: 5)")
    parser.add_argument("--nbest", type=int, default=1,
                        help="hypotheses written per line, best first, as fairseq-generate's "
                        "--nbest: NBEST consecutive output lines for each input line "
                        "(default: 1)")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="sentences per batch (default: 32)")
    parser.add_argument("--max-len-a", type=float, default=1.5,
                        help="translations of at most A * source length + B pieces, as "
                        "fairseq-generate's --max-len-a/--max-len-b (default: 1.5, 10)")
    parser.add_argument("--max-len-b", type=int, default=10)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--compute-type", default="default",
                        help="int8, int8_float32, float32, float16, bfloat16, ... "
                        "(default: the type the model was converted with)")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads for one translation (default: 0, all cores)")
    args = parser.parse_args(argv)
    for flag, value in (("--beam", args.beam), ("--batch-size", args.batch_size),
                        ("--nbest", args.nbest)):
        if value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    if args.nbest > args.beam:
        parser.error(f"--nbest {args.nbest} exceeds --beam {args.beam}: the beam keeps "
                     "at most --beam hypotheses")
    if not args.spm and not args.pieces:
        parser.error("give --spm, the sentencepiece model of training, or --pieces "
                     "if the input is already split into pieces")
    return args


def load(args):
    try:
        import ctranslate2
        import sentencepiece
    except ImportError as err:
        sys.exit(f"error: {err.name} is not installed: pip install -e '.[serve]'")
    try:
        translator = ctranslate2.Translator(args.model, device=args.device,
                                            compute_type=args.compute_type,
                                            intra_threads=args.threads)
    except (RuntimeError, ValueError) as err:
        sys.exit(f"error: cannot load the CTranslate2 model {args.model}: {err}")
    if args.pieces:
        return translator, None
    return translator, sentencepiece.SentencePieceProcessor(model_file=args.spm)


def translate(translator, spm, lines, beam=5, batch_size=32, max_len_a=1.5, max_len_b=10,
              nbest=1):
    """Translations of ``lines``, in order (pieces in and out if ``spm`` is
    None): ``nbest`` consecutive hypotheses for each line, best first.
    Batches hold sentences of similar length; each batch's length limit
    follows its longest source (with ``</s>``), as fairseq-generate's does."""
    if spm is None:
        pieces = [line.split() for line in lines]
    else:
        pieces = [spm.encode(line.strip(), out_type=str) for line in lines]
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    out = [[""] * nbest for _ in pieces]
    for start in range(0, len(order), batch_size):
        batch = [i for i in order[start:start + batch_size] if pieces[i]]
        if not batch:
            continue
        longest = max(len(pieces[i]) for i in batch) + 1
        results = translator.translate_batch(
            [pieces[i] for i in batch], beam_size=beam, length_penalty=1.0,
            max_decoding_length=int(math.floor(max_len_a * longest + max_len_b)),
            num_hypotheses=nbest)
        for i, result in zip(batch, results):
            hypotheses = list(result.hypotheses)
            hypotheses += hypotheses[-1:] * (nbest - len(hypotheses))  # a beam short of nbest
            out[i] = [" ".join(h) if spm is None else spm.decode(h) for h in hypotheses]
    return [hypothesis for line in out for hypothesis in line]


def main(argv=None):
    args = parse_args(argv)
    translator, spm = load(args)
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    with source:
        lines = source.read().splitlines()
    start = time.perf_counter()
    hypotheses = translate(translator, spm, lines, args.beam, args.batch_size,
                           args.max_len_a, args.max_len_b, args.nbest)
    seconds = time.perf_counter() - start
    target = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with target:
        for line in hypotheses:
            target.write(line + "\n")
    print(f"translated {len(lines)} sentences in {seconds:.1f} s "
          f"({len(lines) / max(seconds, 1e-9):.1f} sentences/s)", file=sys.stderr)


if __name__ == "__main__":
    main()
