"""Predicted tokens per MASS pre-training update, by mask ratio, on the
batches fairseq-train would draw.

    python -m mass_tools.tokens_per_update DATA_BIN --langs en,fr --max-tokens 2048 \\
        --updates 500 --ratios 0,0.5,1

DATA_BIN is the output of examples/prepare_data.sh (``dict.txt`` and
``train.LANG.bin/.idx`` for each language). The languages are read as one
corpus, without language embeddings, as projects/paper_analysis/__main__.py pre-trains
them. For each ratio the script sets up ``masked_s2s`` as ``fairseq-train``
does (same seed, ``--max-tokens``, batch order) and averages over the first
``--updates`` updates: the predicted (span) tokens, the source tokens and the
sentences of an update. Nothing is trained; the model is built only for its
position limits, which decide which sentences are skipped.
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile

# the installed plugin's directory (what `python -m mass_plugin` prints), for --user-dir
PLUGIN = os.path.dirname(importlib.util.find_spec("mass_plugin").origin)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_bin", help="dict.txt and train.LANG.{bin,idx}")
    parser.add_argument("--langs", default="en,fr", help="languages read as one corpus")
    parser.add_argument("--ratios", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                        help="--mask-ratio values")
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--updates", type=int, default=500,
                        help="average over this many updates from the first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--update-freq", type=int, default=1)
    parser.add_argument("--mask-mode", default="span", choices=["span", "discrete"])
    parser.add_argument("--feed-unmasked", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON object per ratio")
    args = parser.parse_args(argv)
    args.langs = [lang for lang in args.langs.split(",") if lang]
    args.ratios = [float(r) for r in args.ratios.split(",") if r]
    return args


def one_corpus(data_bin, langs, directory):
    """``train``, ``train1``, ... linked to ``train.LANG``: fairseq reads them
    as one training set (the layout of projects/paper_analysis/__main__.py's mono-bin)."""
    links = {"dict.txt": "dict.txt"}
    for i, lang in enumerate(langs):
        for ext in ("bin", "idx"):
            links[f"train{i or ''}.{ext}"] = f"train.{lang}.{ext}"
    for name, target in links.items():
        source = os.path.join(os.path.abspath(data_bin), target)
        if not os.path.exists(source):
            sys.exit(f"error: {source}: no such file (run examples/prepare_data.sh)")
        os.symlink(source, os.path.join(directory, name))


def measure(data, ratio, args):
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = [data, "--user-dir", PLUGIN, "--task", "masked_s2s", "--arch",
            "transformer_mass", "--criterion", "masked_s2s_loss", "--mask-ratio",
            str(ratio), "--mask-mode", args.mask_mode, "--max-tokens", str(args.max_tokens),
            "--seed", str(args.seed), "--update-freq", str(args.update_freq),
            "--num-workers", "0", "--cpu", "--optimizer", "adam", "--lr", "0.0001",
            # no prefetching thread: it would still be filling its buffer when
            # the loop stops mid-epoch (the batches are the same either way)
            "--data-buffer-size", "0",
            # the model's size does not change the batches, only its position
            # limits do (left at the architecture's defaults, as in analysis.py)
            "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
            "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "16",
            "--decoder-ffn-embed-dim", "16", "--encoder-attention-heads", "1",
            "--decoder-attention-heads", "1"]
    argv += ["--feed-unmasked"] if args.feed_unmasked else []
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))
    utils.import_user_module(cfg.common)
    task = tasks.setup_task(cfg.task)
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    # as fairseq_cli/train.py: epoch 1, shuffled, update_freq batches an update
    predicted = source = sentences = batches = 0
    epoch = 1
    epoch_itr = trainer.get_train_iterator(epoch=epoch, load_dataset=True)
    while batches < args.updates * args.update_freq:
        itr = epoch_itr.next_epoch_itr(
            fix_batches_to_gpus=cfg.distributed_training.fix_batches_to_gpus,
            shuffle=epoch_itr.next_epoch_idx > cfg.dataset.curriculum)
        for sample in itr:
            predicted += int(sample["ntokens"])
            source += int(sample["net_input"]["src_lengths"].sum())
            sentences += int(sample["nsentences"])
            batches += 1
            if batches == args.updates * args.update_freq:
                break
        epoch += 1
        epoch_itr = trainer.get_train_iterator(epoch=epoch, load_dataset=False)
    return dict(mask_ratio=ratio, updates=args.updates,
                predicted_tokens=round(predicted / args.updates, 1),
                source_tokens=round(source / args.updates, 1),
                sentences=round(sentences / args.updates, 1))


def main(argv=None):
    args = parse_args(argv)
    import logging
    import warnings

    logging.disable(logging.WARNING)  # fairseq's setup chatter
    warnings.filterwarnings("ignore")  # and hydra's deprecation warnings
    with tempfile.TemporaryDirectory() as data:
        one_corpus(args.data_bin, args.langs, data)
        if not args.json:
            print("mask_ratio  predicted tokens / update  source tokens / update  "
                  "sentences / update")
        for ratio in args.ratios:
            row = measure(data, ratio, args)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"{ratio:<10}  {row['predicted_tokens']:>25}  "
                      f"{row['source_tokens']:>22}  {row['sentences']:>18}", flush=True)


if __name__ == "__main__":
    main()
