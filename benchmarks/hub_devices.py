#!/usr/bin/env python3
"""The hub interface on each device: the same sentences translated on the
CPU (float32) and, where CUDA is available, on the GPU in float32
(``.cuda()``) and float16 (``.half()``); how many translations equal the
CPU's, and sentences/s.

    python benchmarks/hub_devices.py --work-dir work/quickstart

reads the quickstart's layout (WORK_DIR/checkpoints/ft-en-fr/checkpoint_best.pt,
WORK_DIR/data-bin, WORK_DIR/spm.model) and the first ``-n`` lines of
``--source``. Exits 1 if a device fails to translate, returns an empty
translation, or float32 on the GPU agrees with the CPU on fewer than
``--min-fp32-agreement`` of the sentences (float16 is reported, not held to
a threshold: half precision may change a close beam-search decision).
``--output`` also keeps the sentences and the CPU's translations, to compare
with fairseq-generate's (``--max-len-a/--max-len-b`` as examples/generate.sh
gives them).
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", default="work/quickstart",
                        help="the quickstart's WORK_DIR (default work/quickstart)")
    parser.add_argument("--checkpoint", help="default WORK_DIR/checkpoints/ft-en-fr/"
                        "checkpoint_best.pt")
    parser.add_argument("--source", default=os.path.join(REPO, "examples/data/test.en"))
    parser.add_argument("-n", type=int, default=16, help="sentences (default 16)")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--max-len-a", type=float, default=None,
                        help="hypotheses of at most A * source + B subwords, as "
                        "fairseq-generate's option (default: the model's own)")
    parser.add_argument("--max-len-b", type=int, default=None)
    parser.add_argument("--min-fp32-agreement", type=float, default=0.9)
    parser.add_argument("--output", help="also write the results as JSON here")
    return parser.parse_args(argv)


def translate(model, sentences, args, cuda):
    import torch

    # the hub's generation settings are the checkpoint's, but for those given
    limits = {name: value for name, value in (("max_len_a", args.max_len_a),
                                              ("max_len_b", args.max_len_b))
              if value is not None}
    start = time.perf_counter()
    out = model.translate(sentences, beam=args.beam, **limits)
    if cuda:
        torch.cuda.synchronize()
    return out, len(sentences) / (time.perf_counter() - start)


def main(argv=None):
    args = parse_args(argv)
    checkpoint = args.checkpoint or os.path.join(args.work_dir, "checkpoints/ft-en-fr/"
                                                 "checkpoint_best.pt")
    for path in (checkpoint, os.path.join(args.work_dir, "spm.model"), args.source):
        if not os.path.isfile(path):
            sys.exit(f"error: {path}: no such file (run examples/quickstart.sh with "
                     f"WORK_DIR={args.work_dir} first, or give --checkpoint/--source)")
    import torch  # after the checks: a missing file is said before seconds of imports

    from mass_plugin.models.transformer_mass import TransformerMassModel

    with open(args.source, encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()][:args.n]
    model = TransformerMassModel.from_pretrained(
        os.path.dirname(checkpoint), checkpoint_file=os.path.basename(checkpoint),
        data_name_or_path=os.path.abspath(os.path.join(args.work_dir, "data-bin")),
        source_lang="en", target_lang="fr", bpe="sentencepiece",
        sentencepiece_model=os.path.join(args.work_dir, "spm.model")).eval()
    reference, speed = translate(model, sentences, args, cuda=False)
    rows = [dict(device="cpu", dtype="float32", agree=len(sentences), sent_per_s=speed)]
    if torch.cuda.is_available():
        for dtype, move in (("float32", lambda m: m.cuda()), ("float16", lambda m: m.half())):
            model = move(model)
            translation, speed = translate(model, sentences, args, cuda=True)
            rows.append(dict(device=torch.cuda.get_device_name(), dtype=dtype,
                             agree=sum(a == b for a, b in zip(reference, translation)),
                             empty=sum(not t.strip() for t in translation), sent_per_s=speed))
    else:
        print("no CUDA device: the CPU only")
    failures = [f"{r['device']} {r['dtype']}: {r['empty']} empty translations"
                for r in rows if r.get("empty")]
    failures += [f"{r['device']} float32: {r['agree']}/{len(sentences)} equal to the CPU's, "
                 f"below {args.min_fp32_agreement:.0%}" for r in rows[1:2]
                 if r["agree"] < args.min_fp32_agreement * len(sentences)]
    for row in rows:
        print(f"{row['device']} {row['dtype']}: {row['agree']}/{len(sentences)} equal to "
              f"the CPU's, {row['sent_per_s']:.1f} sentences/s (beam {args.beam})")
    print(f"first: {sentences[0]!r} -> {reference[0]!r}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(dict(sentences=len(sentences), source=sentences, translations=reference,
                           rows=rows, failures=failures), f)
    if failures:
        sys.exit("error: " + "; ".join(failures))


if __name__ == "__main__":
    main()
