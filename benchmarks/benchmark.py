#!/usr/bin/env python3
"""MASS pre-training cost side by side with fairseq's own tasks, in one run.

    python benchmarks/benchmark.py                  # CPU: 15 rows, 2 + 12 updates each
    python benchmarks/benchmark.py --updates 4      # 21 minutes on 2 idle CPU cores
    python benchmarks/benchmark.py --quick          # smoke run, about 2 minutes
    python benchmarks/benchmark.py --device cuda --fp16

On the same batches of the same sentences, with the same model dimensions,
each configuration trains for a fixed number of updates with fairseq's own
Trainer, in a fresh process (so that peak memory is its own):

- fairseq ``denoising`` (BART span masking, ``--mask`` at the same ratio),
- fairseq ``translation`` on sentence-copy pairs (plain seq2seq cost),
- ``masked_s2s`` (ours) at ``--mask-ratio`` 0.5, then 0.15, 0.3, 0.7.

It prints sentences/s, source tokens/s (tokens of the original sentences),
peak memory (CUDA: allocated; CPU: peak RSS of the timed updates above the
process's RSS before loading data) and ratios to the first row; the share
of a step spent masking and collating; decoding speed of ``transformer_mass``
vs fairseq's ``transformer``; and cost against sentence length. Timings
exclude data loading (batches are prepared before the clock starts); the
data cost is measured on its own. ``--quick`` took 105 s on 2 idle CPU
cores (8.5 minutes while other jobs shared the cores).

The sentences are the first 10,000 non-empty lines of each of ``mono.en``
and ``mono.fr`` in ``--data`` (1,000 of each with ``--quick``), or all of
them if a file is shorter: the bundled ``examples/data`` holds 4,000 lines
of each, so the default run uses 8,000 sentences.
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(REPO, "examples", "data"),
                        help="directory with mono.en and mono.fr (raw text); the first 10,000 "
                        "non-empty lines of each are used (1,000 with --quick)")
    parser.add_argument("--workdir", default=os.path.join(REPO, "work", "benchmark"))
    parser.add_argument("--quick", action="store_true",
                        help="tiny model, few updates: checks the script, not the numbers")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--fp16", action="store_true", help="half precision (cuda only)")
    parser.add_argument("--updates", type=int, help="timed updates per configuration")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--output", help="also write the results as JSON lines here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one measurement
    args = parser.parse_args(argv)
    if args.fp16 and args.device != "cuda":
        parser.error("--fp16 needs --device cuda (fairseq's fp16 path assumes CUDA)")
    if args.updates is None:
        args.updates = 3 if args.quick else 12
    return args


# ---------------------------------------------------------------- data

def run(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
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


# ---------------------------------------------------------------- configurations

def model_args(args):
    if args.quick:
        dims = dict(layers=2, dim=64, ffn=256, heads=4)
    else:
        dims = dict(layers=6, dim=512, ffn=2048, heads=8)
    out = []
    for side in ("encoder", "decoder"):
        out += [f"--{side}-layers", dims["layers"], f"--{side}-embed-dim", dims["dim"],
                f"--{side}-ffn-embed-dim", dims["ffn"], f"--{side}-attention-heads",
                dims["heads"], f"--{side}-learned-pos"]
    return out + ["--share-all-embeddings", "--dropout", "0.1", "--attention-dropout", "0",
                  "--activation-dropout", "0", "--activation-fn", "relu",
                  "--max-source-positions", "1024", "--max-target-positions", "1024"]


def denoising(work, ratio):
    return ["--task", "denoising", f"{work}/mono-bin", "--arch", "bart_base",
            "--criterion", "cross_entropy", "--mask", ratio, "--mask-random", "0.1",
            "--mask-length", "span-poisson", "--poisson-lambda", "3.5",
            "--replace-length", "1", "--permute-sentences", "0", "--rotate", "0",
            "--insert", "0", "--sample-break-mode", "eos", "--tokens-per-sample", "1024"]


def masked_s2s(work, ratio):
    return ["--task", "masked_s2s", f"{work}/mono-bin", "--arch", "transformer_mass",
            "--criterion", "masked_s2s_loss", "--mask-ratio", ratio]


def copy_translation(work, arch="transformer"):
    return ["--task", "translation", f"{work}/copy-bin", "-s", "src", "-t", "tgt",
            "--arch", arch, "--criterion", "cross_entropy"]


# ---------------------------------------------------------------- worker

def same_batches(sentences, args):
    """``args.updates + 2`` batches of sentence indices (``--max-tokens``, sorted
    by length like fairseq's), drawn with a fixed seed from ``sentences``, and
    the sentence lengths."""
    import numpy as np
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(sentences, None)
    sizes = np.array(dataset.sizes, dtype=np.int64)  # a copy: the original is a view of
    del dataset                                    # a memory map closed with the dataset
    order = np.argsort(sizes, kind="mergesort")
    batches = data_utils.batch_by_size(order, lambda i: sizes[i], max_tokens=args.max_tokens)
    random.Random(0).shuffle(batches)
    needed = args.updates + 2
    return (batches * (needed // len(batches) + 1))[:needed], sizes


def _status_mb(field):
    """A memory field of /proc/self/status (Linux) in MB, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak_rss():
    """Restart the kernel's peak-RSS count (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(spec, args):
    """One measurement in this process; returns a dict."""
    import resource

    import numpy as np
    import torch
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    # what the process holds before any data or model: subtracted below, so
    # that the CPU memory column is what training itself needs
    baseline_mb = _status_mb("VmRSS") or 0.0
    cuda = args.device == "cuda"
    argv = spec["argv"] + ["--user-dir", os.path.join(REPO, "mass_plugin"),
                           "--optimizer", "adam", "--lr", "0.0001", "--seed", "1",
                           "--max-tokens", str(args.max_tokens), "--required-batch-size-multiple",
                           "1", "--num-workers", "0"] + model_args(args)
    argv += ["--fp16"] if args.fp16 else ([] if cuda else ["--cpu"])
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(parser, [str(a) for a in argv]))
    utils.import_user_module(cfg.common)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    dataset = task.dataset("train")
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    # every configuration of a table trains on the same batches of the same
    # sentences: batches are made from the lengths of the binarized text
    index_batches, sizes = same_batches(spec["sentences"], args)
    batch_digest = hashlib.sha1(np.concatenate(index_batches).tobytes()).hexdigest()[:12]

    start = time.perf_counter()  # the data cost: fetch (masking) and collate
    samples = [dataset.collater([dataset[i] for i in batch]) for batch in index_batches]
    data_time = (time.perf_counter() - start) / len(samples)

    for sample in samples[:2]:  # warm-up
        trainer.train_step([sample])
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    _reset_peak_rss()
    start = time.perf_counter()
    for sample in samples[2:]:
        trainer.train_step([sample])
    if cuda:
        torch.cuda.synchronize()
    step_time = (time.perf_counter() - start) / args.updates
    timed = samples[2:]
    sentences = sum(s["net_input"]["src_tokens"].size(0) for s in timed)
    # tokens of the original sentences (denoising shortens its source)
    src_tokens = sum(int(sizes[batch].sum()) for batch in index_batches[2:])
    if cuda:
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:  # the process's peak RSS during the timed updates, above its baseline
        peak = _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        peak_mb = peak - baseline_mb
    result = dict(name=spec["name"], step_s=step_time, data_s=data_time,
                  sentences_per_s=sentences / (step_time * args.updates),
                  src_tokens_per_s=src_tokens / (step_time * args.updates),
                  peak_mb=peak_mb, sentences_per_batch=sentences / args.updates,
                  batches=batch_digest)
    if spec.get("decode"):
        result.update(decode_speed(task, model, samples[2:], cuda))
    return result


def decode_speed(task, model, samples, cuda):
    """Sentences/s of beam search (beam 5) with a fixed output length."""
    import torch
    from fairseq import utils
    from fairseq.sequence_generator import SequenceGenerator

    model.eval()
    length = 32
    generator = SequenceGenerator([model], task.target_dictionary, beam_size=5,
                                  max_len_a=0, max_len_b=length, min_len=length)
    sentences, start = 0, time.perf_counter()
    with torch.no_grad():
        for sample in samples[:4]:
            sample = utils.move_to_cuda(sample) if cuda else sample
            generator.generate([model], sample)
            sentences += sample["net_input"]["src_tokens"].size(0)
    if cuda:
        torch.cuda.synchronize()
    return dict(decode_sentences_per_s=sentences / (time.perf_counter() - start))


def measure(spec, args):
    """Run ``worker`` for ``spec`` in a fresh Python process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec),
           "--device", args.device, "--updates", str(args.updates),
           "--max-tokens", str(args.max_tokens), "--workdir", args.workdir]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--fp16"] if args.fp16 else []
    out = run(cmd)
    result = json.loads(out.strip().splitlines()[-1])
    sys.stderr.write(f"  {result['name']}: {result['sentences_per_s']:.1f} sentences/s\n")
    return result


# ---------------------------------------------------------------- tables

def table(title, rows, columns):
    """Print ``rows`` (dicts) with ``columns`` [(key, header, format)], plus
    each numeric column's ratio to the first row."""
    print(f"\n{title}")
    if len({row.get("batches") for row in rows}) > 1:  # a bug, not a measurement
        raise RuntimeError(f"{title}: the rows were not measured on the same batches")
    header = ["configuration"] + [h for _, h, _ in columns] + [f"{h} x" for _, h, _ in columns]
    lines = [header]
    for row in rows:
        cells = [row["name"]] + [fmt.format(row[k]) for k, _, fmt in columns]
        cells += [f"{row[k] / rows[0][k]:.2f}" for k, _, _ in columns]
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)))


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker), args)))
        return
    started = time.perf_counter()
    work = prepare(args)
    speed = [("sentences_per_s", "sent/s", "{:.1f}"), ("src_tokens_per_s", "src tok/s",
                                                      "{:.0f}"), ("peak_mb", "peak MB", "{:.0f}")]
    results = []

    def spec(name, argv, data=work, **extra):
        result = measure(dict(name=name, argv=argv, sentences=f"{data}/mono-bin/train",
                              **extra), args)
        results.append(result)
        return result

    print(f"# device {args.device}{' fp16' if args.fp16 else ''}, {args.updates} timed "
          f"updates, --max-tokens {args.max_tokens}, {'quick' if args.quick else 'full'} mode")
    main_rows = [spec("denoising (BART) mask 0.5", denoising(work, 0.5)),
                 spec("translation copy", copy_translation(work), decode=True),
                 spec("masked_s2s 0.5", masked_s2s(work, 0.5))]
    table("Training cost, same model and batch size", main_rows, speed)
    mass_copy = spec("translation copy, transformer_mass",
                     copy_translation(work, "transformer_mass"), decode=True)
    ratios = [0.15] if args.quick else [0.15, 0.3, 0.7]
    ratio_rows = [main_rows[2]] + [spec(f"masked_s2s {r}", masked_s2s(work, r)) for r in ratios]
    table("masked_s2s by mask ratio", ratio_rows, speed)

    print("\nData cost (masking + collation) per batch vs one training step")
    for row in main_rows:
        print(f"  {row['name']}: data {1000 * row['data_s']:.1f} ms, step "
              f"{1000 * row['step_s']:.1f} ms, {100 * row['data_s'] / row['step_s']:.1f}%")

    table("Decoding (beam 5, 32 output tokens), transformer_mass vs transformer",
          [dict(name="transformer", decode=main_rows[1]["decode_sentences_per_s"]),
           dict(name="transformer_mass", decode=mass_copy["decode_sentences_per_s"])],
          [("decode", "sent/s", "{:.1f}")])

    lengths = [64] if args.quick else [64, 128, 256, 512]
    for length in lengths:
        fixed = prepare_fixed_length(args, length)
        rows = [spec(f"denoising L={length}", denoising(fixed, 0.5), data=fixed),
                spec(f"masked_s2s L={length}", masked_s2s(fixed, 0.5), data=fixed)]
        table(f"Sentences of {length} tokens", rows, speed)

    if args.output:
        with open(args.output, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in results)
    print(f"\n# total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
