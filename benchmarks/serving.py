#!/usr/bin/env python3
"""Serving speed and BLEU side by side: fairseq-generate on the fine-tuned
checkpoint, and CTranslate2 (float32, int8) on its export, in one run.

    python benchmarks/serving.py --checkpoint ft/checkpoint_best.pt \\
        --data-bin work/demo/data-bin --spm work/demo/spm.model \\
        --source examples/data/test.en --reference examples/data/test.fr

The same test set, beam, batch size, length limit and number of threads for
every system. fairseq's speed is the one fairseq-generate reports for its
generation loop (model loading and data loading excluded); CTranslate2's
is the wall time of translating the raw lines, sentencepiece encoding and
decoding included (model loading excluded). BLEU and chrF are sacreBLEU on
the detokenised output against the raw reference.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import sacrebleu

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="fine-tuned transformer_mass")
    parser.add_argument("--data-bin", required=True, help="its binarized data directory")
    parser.add_argument("--spm", required=True, help="the sentencepiece model of training")
    parser.add_argument("--source", required=True, help="raw source text of the test set")
    parser.add_argument("--reference", required=True, help="raw reference translations")
    parser.add_argument("-s", "--source-lang", default="en")
    parser.add_argument("-t", "--target-lang", default="fr")
    parser.add_argument("--gen-subset", default="test",
                        help="the binarized split that holds --source (default: test)")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for every system")
    parser.add_argument("--work-dir", default=os.path.join(REPO, "work", "serving"))
    return parser.parse_args(argv)


def export(args):
    """The export and its CTranslate2 conversion, made once per work dir."""
    ct2_dir = os.path.join(args.work_dir, "ct2")
    if not os.path.isfile(os.path.join(ct2_dir, "model.bin")):
        subprocess.run([sys.executable, "-m", "mass_tools.export", "--checkpoint",
                        args.checkpoint, "--data-bin", args.data_bin, "--output",
                        os.path.join(args.work_dir, "export", "model.pt"),
                        "--ctranslate2", ct2_dir, "--force"], check=True)
    return ct2_dir


# fairseq-generate, with its INFO log (which holds its speed) on stdout: an
# import inside fairseq can install a root log handler first, and then
# fairseq-generate's own logging set-up does nothing and the line is lost
_GENERATE_WITH_LOG = (
    "import logging, sys\n"
    "logging.basicConfig(format='%(message)s', level=logging.INFO, stream=sys.stdout,"
    " force=True)\n"
    "from fairseq_cli.generate import cli_main\n"
    "sys.argv[0] = 'fairseq-generate'\n"
    "cli_main()\n"
)


def fairseq_generate(args):
    """(hypotheses in test-set order, sentences/s reported by fairseq)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads))
    proc = subprocess.run(
        [sys.executable, "-c", _GENERATE_WITH_LOG, args.data_bin,
         "--user-dir", os.path.join(REPO, "mass_plugin"), "--path", args.checkpoint,
         "--task", "translation", "-s", args.source_lang,
         "-t", args.target_lang, "--gen-subset", args.gen_subset, "--beam", str(args.beam),
         "--batch-size", str(args.batch_size), "--required-batch-size-multiple", "1",
         "--max-len-a", "1.5", "--max-len-b", "10", "--post-process", "sentencepiece",
         "--cpu"], env=env, capture_output=True, text=True, check=True)
    hyps = dict((int(i), text) for i, text in
                re.findall(r"^D-(\d+)\t[^\t]*\t(.*)$", proc.stdout, flags=re.M))
    speed = re.search(r"Translated .* \(([\d.]+) sentences/s", proc.stdout + proc.stderr)
    return [hyps[i] for i in range(len(hyps))], float(speed.group(1))


def ctranslate2_run(args, ct2_dir, lines, compute_type):
    import ctranslate2
    import sentencepiece

    from mass_tools.translate_ct2 import translate

    translator = ctranslate2.Translator(ct2_dir, device="cpu", compute_type=compute_type,
                                        intra_threads=args.threads)
    spm = sentencepiece.SentencePieceProcessor(model_file=args.spm)
    start = time.perf_counter()
    hyps = translate(translator, spm, lines, beam=args.beam, batch_size=args.batch_size)
    return hyps, len(lines) / (time.perf_counter() - start)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    with open(args.source, encoding="utf-8") as f:
        source = f.read().splitlines()
    with open(args.reference, encoding="utf-8") as f:
        reference = f.read().splitlines()
    ct2_dir = export(args)
    rows = [("fairseq-generate", *fairseq_generate(args))]
    for compute_type in ("float32", "int8"):
        rows.append((f"CTranslate2 {compute_type}",
                     *ctranslate2_run(args, ct2_dir, source, compute_type)))
    base_speed = rows[0][2]
    base_bleu = None
    print(f"{len(source)} sentences, beam {args.beam}, batch {args.batch_size}, "
          f"{args.threads} threads")
    print(f"{'system':22} {'sent/s':>8} {'x fairseq':>9} {'BLEU':>6} {'dBLEU':>6} {'chrF':>6}")
    for name, hyps, speed in rows:
        if len(hyps) != len(reference):
            sys.exit(f"error: {name} gave {len(hyps)} lines for {len(reference)} references")
        bleu = sacrebleu.corpus_bleu(hyps, [reference]).score
        chrf = sacrebleu.corpus_chrf(hyps, [reference]).score
        base_bleu = bleu if base_bleu is None else base_bleu
        print(f"{name:22} {speed:8.2f} {speed / base_speed:9.2f} {bleu:6.2f} "
              f"{bleu - base_bleu:+6.2f} {chrf:6.2f}")


if __name__ == "__main__":
    main()
