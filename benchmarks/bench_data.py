"""Data preparation for benchmark.py: subwords and binarized data shared by
every configuration, and the fixed-length sentences of the length table."""

import os
import random
import subprocess
import sys


def run(cmd, env=None, cwd=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def fairseq_bin(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name


def prepare(args):
    """Subwords and binarized data for every configuration, with one dictionary."""
    import sentencepiece as spm

    work = args.workdir
    os.makedirs(work, exist_ok=True)
    if os.path.exists(os.path.join(work, "copy-bin", "dict.src.txt")):
        return work
    n = 2000 if args.quick else 20000
    lines = []
    for lang in ("en", "fr"):
        with open(os.path.join(args.data, f"mono.{lang}"), encoding="utf-8") as f:
            lines += [line.strip() for line in f if line.strip()][: n // 2]
    random.Random(1).shuffle(lines)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=os.path.join(work, "spm"),
        vocab_size=2000 if args.quick else 8000, character_coverage=1.0,
        bos_id=-1, eos_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(work, "spm.model"))
    pieces = [" ".join(p) for p in sp.encode(lines, out_type=str)]
    with open(os.path.join(work, "train.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    for side in ("src", "tgt"):  # sentence-copy pairs
        with open(os.path.join(work, f"copy.{side}"), "w", encoding="utf-8") as f:
            f.write("\n".join(pieces) + "\n")
    preprocess = fairseq_bin("fairseq-preprocess")
    run([preprocess, "--only-source", "--trainpref", f"{work}/train.txt",
         "--destdir", f"{work}/mono-bin", "--workers", "2"])
    run([preprocess, "-s", "src", "-t", "tgt", "--trainpref", f"{work}/copy",
         "--srcdict", f"{work}/mono-bin/dict.txt", "--tgtdict", f"{work}/mono-bin/dict.txt",
         "--destdir", f"{work}/copy-bin", "--workers", "2"])
    return work


def prepare_fixed_length(args, length):
    """Sentences of exactly ``length`` tokens (with </s>), for the length table."""
    work = os.path.join(args.workdir, f"len{length}")
    if os.path.exists(os.path.join(work, "mono-bin", "dict.txt")):
        return work
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(args.workdir, "train.txt"), encoding="utf-8") as f:
        stream = f.read().split()
    n = 64 if args.quick else 400
    rng = random.Random(length)
    with open(os.path.join(work, "train.txt"), "w", encoding="utf-8") as f:
        for _ in range(n):
            start = rng.randrange(len(stream) - length)
            f.write(" ".join(stream[start:start + length - 1]) + "\n")
    run([fairseq_bin("fairseq-preprocess"), "--only-source", "--trainpref",
         f"{work}/train.txt", "--srcdict", f"{args.workdir}/mono-bin/dict.txt",
         "--destdir", f"{work}/mono-bin", "--workers", "1"])
    return work
