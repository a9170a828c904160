#!/usr/bin/env python
"""The MASS paper's analysis on your own data, as one command.

For each point, pre-train the same small Transformer for the same number of
updates on the monolingual text of all languages, fine-tune it for the same
number of updates on the parallel pairs, translate the test set and score it:

* the span length sweep: ``--mask-ratio`` r for each r of ``--ratios`` (0 is
  the end point k = 1, BERT-like; 1 is k = m, a language model);
* the ablations at ``--ablation-ratio``: ``discrete`` (k tokens anywhere, not
  one span) and ``feed`` (the decoder also sees the tokens the encoder saw);
* the baselines: ``none`` (no pre-training), ``dae`` (fairseq's ``denoising``
  task on the same architecture) and ``bert_lm`` (the encoder pre-trained as a
  masked LM, the decoder as a language model, then joined; the two get the
  same number of updates as one MASS run each).

Measured per point: the masked-span perplexity of the pre-trained model on
the held-out monolingual text (with its own masking and with a 50% span, so
that points can be compared), the fine-tuned model's validation perplexity,
and sacreBLEU / chrF on the test set. Writes ``results.csv`` and
``results.png`` in ``--work-dir``. Finished points are not recomputed: run the
same command again after an interruption (an interrupted training resumes
from its last checkpoint), or with more points to add them.

  python examples/analysis.py --raw-dir examples/data --work-dir work/analysis

``--raw-dir`` has the layout of examples/prepare_data.sh: ``mono.LANG`` and
``mono.valid.LANG`` per language, ``train|valid|test.SRC`` and ``.TGT``.
"""

import argparse
import csv
import json
import logging
import math
import os
import re
import shlex
import subprocess
import sys
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

PRESETS = {
    # about an hour on 2 CPU cores with the default points (see docs/results.md)
    "cpu": dict(layers=2, dim=128, ffn=512, heads=4, pretrain_updates=500,
                finetune_updates=250, max_tokens=2048, lr=0.001, warmup=100,
                vocab_size=4000),
    # the paper's base Transformer; MASS used far larger budgets still
    "gpu": dict(layers=6, dim=512, ffn=2048, heads=8, pretrain_updates=20000,
                finetune_updates=5000, max_tokens=8192, lr=0.0005, warmup=4000,
                vocab_size=32000),
}
# what makes two runs comparable: a work dir keeps one of each
SIGNATURE = ("layers", "dim", "ffn", "heads", "pretrain_updates", "finetune_updates",
             "max_tokens", "lr", "warmup", "vocab_size", "seed", "langs", "pair", "beam")
CSV_FIELDS = ["point", "kind", "mask_ratio", "ppl_own_masking", "ppl_span50",
              "finetune_valid_ppl", "bleu", "chrf", "pretrain_seconds", "total_seconds"]


@dataclass
class Point:
    name: str
    kind: str  # mass | discrete | feed | none | dae | bert_lm
    ratio: float = None
    stages: list = field(default_factory=list)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python examples/analysis.py --raw-dir examples/data "
        "--work-dir work/analysis",
    )
    parser.add_argument("--raw-dir", default="examples/data",
                        help="raw text in the layout of examples/prepare_data.sh")
    parser.add_argument("--work-dir", default="work/analysis",
                        help="everything goes here; rerun with the same one to resume")
    parser.add_argument("--langs", default="en,fr", help="monolingual languages")
    parser.add_argument("--pair", default="en-fr", help="SRC-TGT of the fine-tuning")
    parser.add_argument("--ratios", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                        help="--mask-ratio values of the sweep (0: k=1, 1: k=m)")
    parser.add_argument("--ablations", default="discrete,feed",
                        help="any of discrete,feed (empty for none)")
    parser.add_argument("--ablation-ratio", type=float, default=0.5)
    parser.add_argument("--baselines", default="none,dae,bert_lm",
                        help="any of none,dae,bert_lm (empty for none)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                        help="model size and budgets; the options below override it")
    for name, kind in (("layers", int), ("dim", int), ("ffn", int), ("heads", int),
                       ("pretrain-updates", int), ("finetune-updates", int),
                       ("max-tokens", int), ("lr", float), ("warmup", int),
                       ("vocab-size", int)):
        parser.add_argument(f"--{name}", type=kind, default=None)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=None,
                        help="points trained at the same time, each with its share of "
                        "the CPU threads (default: one per core, at most 4, on a CPU; "
                        "1 with a GPU)")
    parser.add_argument("--plot-only", action="store_true",
                        help="only rewrite results.csv and results.png")
    args = parser.parse_args(argv)
    if args.jobs is None:
        import torch

        args.jobs = 1 if torch.cuda.is_available() else min(4, os.cpu_count() or 1)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.langs = [lang for lang in args.langs.split(",") if lang]
    args.src, _, args.tgt = args.pair.partition("-")
    if not args.tgt or args.src not in args.langs or args.tgt not in args.langs:
        parser.error(f"--pair {args.pair} must be SRC-TGT with both in --langs")
    try:
        args.ratios = [float(r) for r in args.ratios.split(",") if r]
    except ValueError:
        parser.error(f"--ratios must be comma-separated numbers, got {args.ratios!r}")
    if any(not 0 <= r <= 1 for r in args.ratios + [args.ablation_ratio]):
        parser.error("mask ratios must be in [0, 1]")
    args.ablations = [a for a in args.ablations.split(",") if a]
    args.baselines = [b for b in args.baselines.split(",") if b]
    for flag, given, known in (("--ablations", args.ablations, ("discrete", "feed")),
                               ("--baselines", args.baselines, ("none", "dae", "bert_lm"))):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"{flag}: unknown {', '.join(unknown)} (choose from "
                         f"{', '.join(known)})")
    return args


def points_of(args):
    points = [Point(f"mass_r{r:.2f}", "mass", r) for r in args.ratios]
    points += [Point(f"{a}_r{args.ablation_ratio:.2f}", a, args.ablation_ratio)
               for a in args.ablations]
    points += [Point(b, b) for b in args.baselines]
    return points


class Runner:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work_dir).resolve()
        self.data_bin = self.work / "data-bin"
        self.mono_bin = self.work / "mono-bin"
        self.user_dir = str(HERE.parent / "mass_plugin")
        import torch

        self.cpu = [] if torch.cuda.is_available() else ["--cpu"]
        self.device = self.cpu or ["--fp16"]  # for training
        # each training process gets its share of the cores, unless the
        # environment already says how many threads to use
        threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or max(
            1, (os.cpu_count() or 1) // max(1, args.jobs))
        self.env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                        MKL_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
        torch.set_num_threads(threads)  # the evaluations run in this process

    # -- bookkeeping ------------------------------------------------------
    def check_signature(self):
        """A work dir holds one configuration: refuse to mix budgets or sizes."""
        wanted = {key: getattr(self.args, key) for key in SIGNATURE}
        path = self.work / "config.json"
        if path.exists():
            saved = json.loads(path.read_text())
            changed = {k: (saved.get(k), v) for k, v in wanted.items() if saved.get(k) != v}
            if changed:
                described = "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in changed.items())
                sys.exit(f"error: {self.work} holds points made with other settings "
                         f"({described}). Use another --work-dir, or the same settings "
                         "to resume.")
        else:
            self.work.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(wanted, indent=1) + "\n")

    def run(self, cmd, log, what, env=None):
        """Run ``cmd`` with its output in ``log``; on failure say where to look."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as out:
            out.write("$ " + shlex.join(cmd) + "\n")
            out.flush()
            code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   env=dict(self.env, **(env or {})))
        if code != 0:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError(f"{what} failed (exit {code}); the end of {log}:\n  "
                               + "\n  ".join(tail))
        return log.read_text(errors="replace")

    def model_args(self):
        a = self.args
        return ["--arch", "transformer_mass", "--encoder-layers", str(a.layers),
                "--decoder-layers", str(a.layers), "--encoder-embed-dim", str(a.dim),
                "--decoder-embed-dim", str(a.dim), "--encoder-ffn-embed-dim", str(a.ffn),
                "--decoder-ffn-embed-dim", str(a.ffn), "--encoder-attention-heads",
                str(a.heads), "--decoder-attention-heads", str(a.heads)]

    def train_args(self, updates, save_dir):
        a = self.args
        return ["--user-dir", self.user_dir, *self.model_args(), "--optimizer", "adam",
                "--adam-betas", "(0.9, 0.98)", "--clip-norm", "1.0", "--lr", str(a.lr),
                "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(a.warmup),
                "--max-tokens", str(a.max_tokens), "--max-update", str(updates),
                "--seed", str(a.seed), "--save-dir", str(save_dir), "--no-epoch-checkpoints",
                "--save-interval-updates", str(max(1, updates // 4)),
                "--keep-interval-updates", "1", "--num-workers", "0",
                "--log-format", "simple", "--log-interval", "25", *self.device]

    # -- data -------------------------------------------------------------
    def prepare_data(self):
        done = self.work / "data.done"
        if done.exists():
            return
        print(f"== data: one sentencepiece model and binarized data in {self.work}", flush=True)
        env = dict(RAW_DIR=str(Path(self.args.raw_dir).resolve()), WORK_DIR=str(self.work),
                   LANGS=",".join(self.args.langs), PAIR=self.args.pair,
                   VOCAB_SIZE=str(self.args.vocab_size), NUM_GPUS="0")
        self.run(["bash", str(HERE / "prepare_data.sh")], self.work / "data.log",
                 "preparing the data (examples/prepare_data.sh)", env)
        # all languages as one corpus, without language embeddings, so every
        # point (masked_s2s or fairseq's denoising) sees the same sentences:
        # fairseq reads train, train1, ... as one training set
        self.mono_bin.mkdir(exist_ok=True)
        links = {"dict.txt": "dict.txt"}
        for i, lang in enumerate(self.args.langs):
            for ext in ("bin", "idx"):
                links[f"train{i or ''}.{ext}"] = f"train.{lang}.{ext}"
                links[f"valid.{lang}.{ext}"] = f"valid.{lang}.{ext}"
        for name, target in links.items():
            link = self.mono_bin / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(self.data_bin / target)
        done.touch()

    # -- stages -----------------------------------------------------------
    def pretrain(self, save_dir, log, extra, what):
        if (save_dir / "done").exists():
            return
        cmd = ["fairseq-train", str(self.mono_bin), *self.train_args(
            self.args.pretrain_updates, save_dir), "--disable-validation",
            "--skip-invalid-size-inputs-valid-test", *extra]
        self.run(cmd, log, what)
        finished(save_dir)

    def pretrain_point(self, point, pdir):
        mass = ["--task", "masked_s2s", "--criterion", "masked_s2s_loss"]
        if point.kind in ("mass", "discrete", "feed"):
            extra = mass + ["--mask-ratio", str(point.ratio)]
            if point.kind == "discrete":
                extra += ["--mask-mode", "discrete"]
            if point.kind == "feed":
                extra += ["--feed-unmasked"]
            self.pretrain(pdir / "pretrain", pdir / "pretrain.log", extra,
                          f"{point.name}: MASS pre-training")
            return pdir / "pretrain" / "checkpoint_last.pt"
        if point.kind == "dae":
            # BART's text infilling: spans of Poisson(3) length, 30% of the tokens
            extra = ["--task", "denoising", "--criterion", "cross_entropy",
                     "--sample-break-mode", "eos", "--tokens-per-sample", "1024",
                     "--mask", "0.3", "--mask-random", "0.1", "--mask-length",
                     "span-poisson", "--poisson-lambda", "3", "--replace-length", "1",
                     "--permute-sentences", "0", "--rotate", "0"]
            self.pretrain(pdir / "pretrain", pdir / "pretrain.log", extra,
                          f"{point.name}: denoising pre-training")
            return pdir / "pretrain" / "checkpoint_last.pt"
        if point.kind == "bert_lm":
            # encoder: BERT's masked LM (15% of the tokens, 80/10/10)
            self.pretrain(pdir / "encoder", pdir / "encoder.log", [
                "--task", "masked_s2s", "--criterion", "encoder_mlm_loss",
                "--mask-mode", "discrete", "--mask-ratio", "0.15"],
                f"{point.name}: masked-LM pre-training of the encoder")
            # decoder: a language model (every token masked: the encoder sees
            # nothing of the sentence)
            self.pretrain(pdir / "decoder", pdir / "decoder.log", mass + [
                "--mask-ratio", "1", "--random-token-prob", "0",
                "--leave-unmasked-prob", "0"],
                f"{point.name}: language-model pre-training of the decoder")
            joined = pdir / "joined.pt"
            if not joined.exists():
                join_bert_lm(pdir / "encoder" / "checkpoint_last.pt",
                             pdir / "decoder" / "checkpoint_last.pt", joined, self.args.seed)
            return joined
        return None  # none: random initialisation

    def masked_span_ppl(self, checkpoint, overrides=None):
        """2 ** (mean over languages of the masked-span loss in bits), on the
        held-out monolingual text; ``overrides`` change the masking."""
        import torch
        from fairseq import checkpoint_utils

        import mass_plugin  # noqa: F401  (registers the task; safe checkpoint loading)

        quiet_logs()
        overrides = dict(overrides or {}, data=str(self.mono_bin))
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [str(checkpoint)], arg_overrides=overrides)
        quiet_logs()
        model = models[0].eval()
        criterion = task.build_criterion(cfg.criterion)
        bits = []
        for lang in self.args.langs:
            task.load_dataset(f"valid.{lang}", combine=False)
            batches = task.get_batch_iterator(
                task.dataset(f"valid.{lang}"), max_tokens=self.args.max_tokens,
                max_positions=task.max_positions(), ignore_invalid_inputs=True,
                seed=self.args.seed).next_epoch_itr(shuffle=False)
            nll, count = 0.0, 0
            with torch.no_grad():
                for sample in batches:
                    _, sample_size, log = task.valid_step(sample, model, criterion)
                    nll += float(log["nll_loss"])
                    count += int(sample_size)
            bits.append(nll / count / math.log(2))
        return round(2 ** (sum(bits) / len(bits)), 3)

    def finetune(self, init, pdir):
        save_dir = pdir / "finetune"
        log = pdir / "finetune.log"
        if not (save_dir / "done").exists():
            cmd = ["fairseq-train", str(self.data_bin), "--task", "translation",
                   "-s", self.args.src, "-t", self.args.tgt,
                   *self.train_args(self.args.finetune_updates, save_dir),
                   "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                   "--required-batch-size-multiple", "1",
                   "--skip-invalid-size-inputs-valid-test"]
            if init is not None:
                cmd += ["--finetune-from-model", str(init)]
            self.run(cmd, log, "fine-tuning")
            finished(save_dir)
        valid = re.findall(r"valid on 'valid' subset \| loss [\d.]+ \| nll_loss ([\d.]+)",
                           log.read_text(errors="replace"))
        if not valid:
            raise RuntimeError(f"no validation result in {log}")
        return save_dir / "checkpoint_last.pt", round(2 ** float(valid[-1]), 3)

    def translate(self, checkpoint, pdir):
        import sacrebleu

        a = self.args
        cmd = ["fairseq-generate", str(self.data_bin), "--user-dir", self.user_dir,
               "--task", "translation", "-s", a.src, "-t", a.tgt, "--gen-subset", "test",
               "--path", str(checkpoint), "--beam", str(a.beam), "--max-len-a", "1.5",
               "--max-len-b", "10", "--batch-size", "64", "--required-batch-size-multiple",
               "1", "--post-process", "sentencepiece", "--num-workers", "0",
               *self.cpu]
        text = self.run(cmd, pdir / "generate.log", "translating the test set")
        hyps = {}
        for line in text.splitlines():
            if line.startswith("D-"):
                idx, _, hyp = line[2:].split("\t", 2)
                hyps[int(idx)] = hyp
        refs = (Path(a.raw_dir) / f"test.{a.tgt}").read_text(encoding="utf-8").splitlines()
        if len(hyps) != len(refs):
            raise RuntimeError(f"{len(hyps)} translations for {len(refs)} references "
                               f"(see {pdir / 'generate.log'})")
        ordered = [hyps[i] for i in range(len(refs))]
        (pdir / f"test.{a.src}-{a.tgt}.txt").write_text("\n".join(ordered) + "\n")
        bleu = sacrebleu.corpus_bleu(ordered, [refs]).score
        chrf = sacrebleu.corpus_chrf(ordered, [refs]).score
        return round(bleu, 2), round(chrf, 2)

    def point(self, point, index, total):
        pdir = self.work / "points" / point.name
        result_path = pdir / "result.json"
        if result_path.exists():
            print(f"[{index}/{total}] {point.name}: done before, kept", flush=True)
            return json.loads(result_path.read_text())
        start = time.time()
        print(f"[{index}/{total}] {point.name}: started (logs in {pdir})", flush=True)
        init = self.pretrain_point(point, pdir)
        pretrain_seconds = round(time.time() - start)
        row = dict(point=point.name, kind=point.kind, mask_ratio=point.ratio,
                   pretrain_seconds=pretrain_seconds)
        if point.ratio is not None:
            row["ppl_own_masking"] = self.masked_span_ppl(init)
            row["ppl_span50"] = self.masked_span_ppl(init, {
                "mask_ratio": 0.5, "mask_mode": "span", "feed_unmasked": False})
        checkpoint, row["finetune_valid_ppl"] = self.finetune(init, pdir)
        row["bleu"], row["chrf"] = self.translate(checkpoint, pdir)
        row["total_seconds"] = round(time.time() - start)
        result_path.write_text(json.dumps(row, indent=1) + "\n")
        print(f"[{index}/{total}] {point.name}: BLEU {row['bleu']}, fine-tuned valid ppl "
              f"{row['finetune_valid_ppl']}, span ppl {row.get('ppl_span50', '-')} "
              f"({row['total_seconds']} s)", flush=True)
        return row


def finished(save_dir):
    """Mark a training as done; its interval checkpoints (kept for resuming)
    are no longer needed next to checkpoint_last.pt."""
    for path in save_dir.glob("checkpoint_*_*.pt"):
        path.unlink()
    (save_dir / "done").touch()


def quiet_logs():
    """fairseq sets up INFO logging when imported, and torch warns about CPU
    data loading: keep this script's own output to its progress lines."""
    for name in ("", "fairseq", "mass_plugin", "matplotlib"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning)


def join_bert_lm(encoder_checkpoint, decoder_checkpoint, output, seed=1):
    """One transformer_mass checkpoint from the masked-LM encoder and the
    language-model decoder; the decoder's attention over the encoder is
    freshly initialised (neither pre-training trained it usefully). The
    shared embeddings are the decoder's, which the output layer also uses."""
    import torch
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    import mass_plugin  # noqa: F401  (registers the task and the model)

    torch.manual_seed(seed)
    quiet_logs()
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(decoder_checkpoint)])
    model = models[0]
    for layer in model.decoder.layers:
        layer.encoder_attn.reset_parameters()
        layer.encoder_attn_layer_norm.reset_parameters()
    encoder_state = checkpoint_utils.load_checkpoint_to_cpu(str(encoder_checkpoint))["model"]
    encoder_only = {name[len("encoder."):]: value for name, value in encoder_state.items()
                    if name.startswith("encoder.") and "embed_tokens" not in name}
    missing, unexpected = model.encoder.load_state_dict(encoder_only, strict=False)
    if unexpected or [name for name in missing if "embed_tokens" not in name]:
        raise RuntimeError(f"the encoder checkpoint does not fit: missing {missing}, "
                           f"unexpected {unexpected}")
    state = checkpoint_utils.load_checkpoint_to_cpu(str(decoder_checkpoint))
    state["model"] = model.state_dict()
    state["cfg"] = OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True)
    state["last_optimizer_state"] = None
    torch.save(state, str(output) + ".tmp")
    os.replace(str(output) + ".tmp", output)


def write_csv(rows, path):
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row.get(key, "") for key in CSV_FIELDS})


def plot(rows, path, title=""):
    import matplotlib

    matplotlib.use("Agg")
    quiet_logs()
    import matplotlib.pyplot as plt

    panels = [("ppl_span50", "masked-span ppl, 50% span (pre-trained)"),
              ("ppl_own_masking", "masked-span ppl, own masking (pre-trained)"),
              ("finetune_valid_ppl", "valid ppl after fine-tuning"),
              ("bleu", "test BLEU after fine-tuning")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    axes = axes.ravel()
    sweep = sorted((r for r in rows if r["kind"] == "mass"), key=lambda r: r["mask_ratio"])
    markers = {"discrete": ("X", "tab:red"), "feed": ("^", "tab:green")}
    lines = {"none": "tab:gray", "dae": "tab:purple", "bert_lm": "tab:orange"}
    for ax, (key, label) in zip(axes, panels):
        xs = [r["mask_ratio"] for r in sweep if r.get(key) not in (None, "")]
        ys = [r[key] for r in sweep if r.get(key) not in (None, "")]
        ax.plot(xs, ys, "o-", color="tab:blue", label="MASS")
        for r in rows:
            if r["kind"] in markers and r.get(key) not in (None, ""):
                marker, color = markers[r["kind"]]
                ax.plot([r["mask_ratio"]], [r[key]], marker, color=color, markersize=9,
                        label=r["kind"])
            if r["kind"] in lines and r.get(key) not in (None, ""):
                ax.axhline(r[key], linestyle="--", color=lines[r["kind"]], label=r["kind"])
        ax.set_xlim(-0.05, 1.05)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
        ax.set_xticklabels(["k=1", "25%", "50%", "75%", "k=m"])
        ax.set_xlabel("masked span length k (share of the sentence)")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    handles, labels = axes[-1].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axes[-1].legend(unique.values(), unique.keys(), fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)  # before fairseq's imports set INFO
    args = parse_args(argv)
    runner = Runner(args)
    points = points_of(args)
    if not args.plot_only:
        runner.check_signature()
        runner.prepare_data()
        failures = []

        def one(indexed):
            index, point = indexed
            try:
                return runner.point(point, index, len(points))
            except Exception as error:  # noqa: BLE001  (the other points go on)
                failures.append(point.name)
                message = str(error) if isinstance(error, RuntimeError) else (
                    traceback.format_exc())
                print(f"[{index}/{len(points)}] {point.name} failed: {message}",
                      file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, enumerate(points, 1)))
    rows = []
    for point in points:
        path = runner.work / "points" / point.name / "result.json"
        if path.exists():
            rows.append(json.loads(path.read_text()))
    csv_path, png_path = runner.work / "results.csv", runner.work / "results.png"
    write_csv(rows, csv_path)
    title = (f"{args.layers}+{args.layers} layers, {args.dim} dim; {args.pretrain_updates} "
             f"pre-training + {args.finetune_updates} fine-tuning updates "
             f"of {args.max_tokens} tokens; {args.pair}")
    plot(rows, png_path, title)
    print(f"== {len(rows)} of {len(points)} points in {csv_path} and {png_path}")
    if not args.plot_only and failures:
        sys.exit(f"error: {len(failures)} point(s) failed: {', '.join(failures)}; "
                 "fix the cause and run the same command again")


if __name__ == "__main__":
    main()
