#!/usr/bin/env python3
"""Serving speed and BLEU side by side: fairseq-generate on the fine-tuned
checkpoint, CTranslate2 (float32, int8) and Hugging Face transformers on
its exports, in one run.

    python benchmarks/serving.py --checkpoint ft/checkpoint_best.pt \\
        --data-bin work/demo/data-bin --spm work/demo/spm.model \\
        --source examples/data/test.en --reference examples/data/test.fr

The same test set, beam, batch size, length limit and number of threads for
every system. fairseq's speed is the one fairseq-generate reports for its
generation loop (model loading and data loading excluded); CTranslate2's
is the wall time of translating the raw lines, sentencepiece encoding and
decoding included (model loading excluded); so is transformers', which
batches the sentences as fairseq-generate does and gives each batch
fairseq's length limit. BLEU and chrF are sacreBLEU on the detokenised
output against the raw reference; "same" counts the lines identical to
fairseq-generate's.
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
# fairseq-generate's length limit: at most MAX_LEN_A x source length + MAX_LEN_B
MAX_LEN_A, MAX_LEN_B = 1.5, 10


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
    """The CTranslate2 and transformers exports, made once per work dir."""
    ct2_dir = os.path.join(args.work_dir, "ct2")
    hf_dir = os.path.join(args.work_dir, "hf")
    if not (os.path.isfile(os.path.join(ct2_dir, "model.bin"))
            and os.path.isfile(os.path.join(hf_dir, "config.json"))):
        subprocess.run([sys.executable, "-m", "mass_tools.export", "--checkpoint",
                        args.checkpoint, "--data-bin", args.data_bin, "--output",
                        os.path.join(args.work_dir, "export", "model.pt"),
                        "--ctranslate2", ct2_dir, "--transformers", hf_dir,
                        "--spm-model", args.spm,
                        "--direction", f"{args.source_lang}-{args.target_lang}",
                        "--beam", str(args.beam), "--max-len-a", "0",
                        "--force"], check=True)
    return ct2_dir, hf_dir


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
         "--max-len-a", str(MAX_LEN_A), "--max-len-b", str(MAX_LEN_B),
         "--post-process", "sentencepiece", "--cpu"],
        env=env, capture_output=True, text=True, check=True)
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


def transformers_run(args, hf_dir, lines, reference):
    """(hypotheses, sentences/s): fairseq-generate's batches and length limits,
    and its rule at the limit (fairseq_processors). fairseq orders a test set
    by source length, then target length, then position, and takes
    --batch-size sentences at a time; each batch's limit follows from its
    longest source."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from mass_tools.hf.generation import fairseq_processors

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(hf_dir).eval()
    start = time.perf_counter()
    ids = tokenizer(lines)["input_ids"]
    targets = tokenizer(reference)["input_ids"]
    order = sorted(range(len(lines)), key=lambda i: (len(ids[i]), len(targets[i]), i))
    hyps = [None] * len(lines)
    for first in range(0, len(order), args.batch_size):
        chosen = order[first:first + args.batch_size]
        batch = tokenizer.pad({"input_ids": [ids[i] for i in chosen]}, return_tensors="pt")
        limit = int(MAX_LEN_A * batch["input_ids"].size(1) + MAX_LEN_B) + 2
        with torch.no_grad():
            out = model.generate(**batch, num_beams=args.beam, max_length=limit,
                                 logits_processor=fairseq_processors(model, limit))
        for i, text in zip(chosen, tokenizer.batch_decode(out, skip_special_tokens=True)):
            hyps[i] = text
    return hyps, len(lines) / (time.perf_counter() - start)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    with open(args.source, encoding="utf-8") as f:
        source = f.read().splitlines()
    with open(args.reference, encoding="utf-8") as f:
        reference = f.read().splitlines()
    if len(source) != len(reference):
        sys.exit(f"error: --source has {len(source)} lines and --reference {len(reference)}: "
                 "give the two sides of one test set")
    ct2_dir, hf_dir = export(args)
    rows = [("fairseq-generate", *fairseq_generate(args))]
    for compute_type in ("float32", "int8"):
        rows.append((f"CTranslate2 {compute_type}",
                     *ctranslate2_run(args, ct2_dir, source, compute_type)))
    rows.append(("transformers", *transformers_run(args, hf_dir, source, reference)))
    base_speed = rows[0][2]
    base_bleu = None
    print(f"{len(source)} sentences, beam {args.beam}, batch {args.batch_size}, "
          f"{args.threads} threads")
    print(f"{'system':22} {'sent/s':>8} {'x fairseq':>9} {'BLEU':>6} {'dBLEU':>6} {'chrF':>6} "
          f"{'same':>5}")
    for name, hyps, speed in rows:
        if len(hyps) != len(reference):
            sys.exit(f"error: {name} gave {len(hyps)} lines for {len(reference)} references")
        bleu = sacrebleu.corpus_bleu(hyps, [reference]).score
        chrf = sacrebleu.corpus_chrf(hyps, [reference]).score
        base_bleu = bleu if base_bleu is None else base_bleu
        same = sum(a == b for a, b in zip(hyps, rows[0][1]))  # as fairseq-generate's
        print(f"{name:22} {speed:8.2f} {speed / base_speed:9.2f} {bleu:6.2f} "
              f"{bleu - base_bleu:+6.2f} {chrf:6.2f} {same:5d}")


if __name__ == "__main__":
    main()
