"""The low-resource curve as one resumable command: BLEU against the number
of training pairs, from random initialisation and from MASS pre-trained on
each monolingual corpus you give.

For each corpus NAME of ``--mono NAME=DIR`` (DIR holds one ``LANG.txt`` per
language, not translations of each other) the same model is MASS-pre-trained
for the same number of updates (initialisation ``mass_NAME``; the checkpoint
with the best masked-span loss on the corpus's held-out lines). Then, for
each N of ``--sizes``, each seed and each direction, the same fine-tuning
budget on the first N pairs of ``--para-dir/train`` from each
initialisation and from none (``random``), the checkpoint with the best
validation BLEU (``--select-by loss`` for the lowest validation loss),
translation of the test set with beam search, sacreBLEU. ``--init-from
NAME=CHECKPOINT`` adds an initialisation ``mass_NAME`` pre-trained outside
the curve (e.g. with other settings, on the curve's own binarized corpora).

All models share one sentencepiece model and one dictionary, learned on the
monolingual text of all corpora. Outputs in ``--work-dir``:

    low-resource.csv            n_pairs,init,seed,direction,bleu,chrf,valid_nll,minutes,
                                valid_bleu (the valid BLEU of the checkpoint kept;
                                empty with --select-by loss)
    low-resource.png            BLEU against N, one line per initialisation
    bootstrap.csv               each MASS run against random at the same N,
                                seed and direction (sacreBLEU's paired bootstrap)
    low-resource.NAME.csv, bootstrap.NAME.csv   the same on --extra-test NAME

``--jobs J`` trains J runs at a time (the pre-trainings first), each with its
share of the CPU threads. Run the same command again after an interruption:
finished runs are kept, an interrupted training resumes from its last
checkpoint. Add an ``--extra-test`` later and the finished models are
scored on it, not retrained.

  python -m projects.low_resource.curve --para-dir SHARED/para/en-fr \\
      --mono web=SHARED/mono --mono doc=work/in-domain --work-dir work/curve
"""

import argparse
import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from projects.low_resource.data import CurveData
from projects.low_resource.report import write_reports
from projects.runner import RecipeRunner, exclusive, finished, progress, run_guarded, size_args

PRESETS = {
    # a 2+2-layer, 128-dimension model: minutes per run on 2 CPU cores; the
    # pre-training measured in docs/results.md section 8 (recipe search 4):
    # the whole sentence masked (k = m), 9,000 updates, led the paper's 50%
    # span after 18,000 at every point of the curve
    "cpu": dict(layers=2, dim=128, ffn=512, heads=4, vocab_size=4000, max_tokens=2048,
                mask_ratio=1.0, pretrain_updates=9000, pretrain_lr=0.001,
                pretrain_warmup=300, finetune_updates=1000, lr=0.001, warmup=100,
                dropout=0.1, validate_every=100, patience=3),
    # the paper's base Transformer and its 50% span on one GPU (not measured
    # here: k = m won with a 2+2-layer model, the paper's 50% with 6+6)
    "gpu": dict(layers=6, dim=512, ffn=2048, heads=8, vocab_size=32000, max_tokens=8192,
                mask_ratio=0.5, pretrain_updates=50000, pretrain_lr=0.0005,
                pretrain_warmup=4000, finetune_updates=5000, lr=0.0005, warmup=1000,
                dropout=0.1, validate_every=250, patience=10),
}
# validate and save every --validate-every updates, not at the end of each
# epoch too: --patience then counts the same span of training at every N
EVERY_N_UPDATES_ONLY = ["--validate-interval", "1000000", "--save-interval", "1000000"]
# which validation checkpoint_best.pt (and early stopping) follows: BLEU of
# greedy decoding of the valid set, or the label-smoothed loss
SELECT_BY = {
    "bleu": ["--eval-bleu", "--eval-bleu-args", '{"beam":1,"max_len_a":1.5,"max_len_b":10}',
             "--eval-bleu-remove-bpe", "sentencepiece", "--best-checkpoint-metric", "bleu",
             "--maximize-best-checkpoint-metric"],
    "loss": [],
}
# what makes two runs comparable: a work dir keeps one of each
SIGNATURE = ("layers", "dim", "ffn", "heads", "vocab_size", "max_tokens",
             "pretrain_updates", "pretrain_lr", "pretrain_warmup", "mask_ratio",
             "finetune_updates", "lr", "warmup", "dropout", "validate_every", "patience",
             "beam", "langs", "mono", "para_dir", "valid_lines", "select_by",
             "embedding_style")
# what a work dir made before a setting existed holds
LEGACY = {"embedding_style": "fairseq"}


@dataclass(frozen=True)
class Run:
    n_pairs: int
    init: str  # random | mass_NAME
    seed: int
    direction: str  # SRC-TGT

    @property
    def name(self):
        return f"n{self.n_pairs}-{self.init}-seed{self.seed}-{self.direction}"


def named_paths(parser, flag, values):
    """NAME=PATH options as a dict, or the parser's error naming the flag."""
    paths = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9_]+", name) or not path:
            parser.error(f"{flag} {value!r}: expected NAME=PATH with NAME in [a-z0-9_]")
        if name in paths:
            parser.error(f"{flag}: {name} given twice")
        paths[name] = path
    return paths


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--para-dir", required=True,
                        help="train/valid/test.LANG pairs (the first N train pairs are used)")
    parser.add_argument("--mono", action="append", metavar="NAME=DIR",
                        help="a monolingual corpus (DIR/LANG.txt per language); its MASS "
                        "initialisation is called mass_NAME; repeat for more")
    parser.add_argument("--init-from", action="append", metavar="NAME=CHECKPOINT",
                        help="an initialisation mass_NAME from a checkpoint pre-trained "
                        "outside the curve (its dictionary must be WORK_DIR/bin/dict.txt, "
                        "e.g. pre-trained on WORK_DIR/bin/CORPUS); repeat for more")
    parser.add_argument("--extra-test", action="append", default=[], metavar="NAME=PREFIX",
                        help="also score every run on PREFIX.SRC -> PREFIX.TGT (raw text)")
    parser.add_argument("--work-dir", default="work/low-resource-curve")
    parser.add_argument("--langs", default="en,fr", help="the two languages")
    parser.add_argument("--sizes", default="1000,3000,10000", help="numbers of pairs N")
    parser.add_argument("--seeds", default="1,2", help="fine-tuning seeds")
    parser.add_argument("--max-seeded-size", type=int, default=3000,
                        help="sizes above this run with the first seed only")
    parser.add_argument("--directions", default=None,
                        help="comma-separated SRC-TGT (default: both ways)")
    parser.add_argument("--inits", default=None,
                        help="a subset of random,mass_NAME... to run (default: all)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                        help="model size and budgets; the options below override it")
    for name, kind in (("layers", int), ("dim", int), ("ffn", int), ("heads", int),
                       ("vocab-size", int), ("max-tokens", int), ("pretrain-updates", int),
                       ("pretrain-lr", float), ("pretrain-warmup", int),
                       ("finetune-updates", int), ("lr", float), ("warmup", int),
                       ("dropout", float), ("validate-every", int), ("patience", int)):
        parser.add_argument(f"--{name}", type=kind, default=None)
    parser.add_argument("--mask-ratio", type=float, default=None,
                        help="share of each sentence masked in pre-training (cpu preset: "
                        "1.0, the whole sentence; gpu preset: 0.5, the paper's)")
    parser.add_argument("--embedding-style", choices=("fairseq", "xlm"), default="xlm",
                        help="transformer_mass's --embedding-style for the pre-trainings and "
                        "the fine-tunings from random initialisation (from a checkpoint, "
                        "its style). Default xlm, the plugin's; fairseq reruns the tables "
                        "made before xlm became the default")
    parser.add_argument("--valid-lines", type=int, default=1000,
                        help="lines of each monolingual corpus held out for validation")
    parser.add_argument("--select-by", choices=sorted(SELECT_BY), default="bleu",
                        help="the fine-tuning checkpoint kept, and early stopping: by the "
                        "BLEU of greedy decoding of the valid set (default), or by valid loss")
    parser.add_argument("--beam", type=int, default=5, help="beam of the test translation")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs trained at the same time, each with its share of the "
                        "CPU threads (e.g. 2 on 2 cores, one thread each; keep 1 on "
                        "one GPU)")
    parser.add_argument("--plot-only", action="store_true",
                        help="only rewrite the CSV files and the plot")
    parser.add_argument("--pretrain-only", action="store_true",
                        help="only the sentencepiece model, the dictionary and the MASS "
                        "pre-trainings (pretrain/NAME/checkpoint_best.pt), e.g. to start "
                        "unsupervised training from them: no parallel text is read")
    return parser


def int_list(parser, flag, text):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        parser.error(f"{flag} must be comma-separated integers, got {text!r}")
    if not values or min(values) <= 0:
        parser.error(f"{flag} needs positive integers, got {text!r}")
    return values


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.mono = named_paths(parser, "--mono", args.mono)
    args.extra_tests = named_paths(parser, "--extra-test", args.extra_test)
    args.init_from = named_paths(parser, "--init-from", args.init_from)
    both = sorted(set(args.mono) & set(args.init_from))
    if both:
        parser.error(f"--init-from and --mono both name {', '.join(both)}")
    args.langs = [lang for lang in args.langs.split(",") if lang]
    if len(args.langs) != 2:
        parser.error(f"--langs needs two languages, got {args.langs}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    args.sizes = int_list(parser, "--sizes", args.sizes)
    args.seeds = int_list(parser, "--seeds", args.seeds)
    a, b = args.langs
    args.directions = (args.directions or f"{a}-{b},{b}-{a}").split(",")
    for direction in args.directions:
        if sorted(direction.split("-")) != sorted(args.langs):
            parser.error(f"--directions: {direction} is not {a}-{b} or {b}-{a}")
    known = ["random"] + [f"mass_{name}" for name in [*args.mono, *args.init_from]]
    args.inits = args.inits.split(",") if args.inits else known
    if set(args.inits) - set(known):
        parser.error(f"--inits: unknown {sorted(set(args.inits) - set(known))} (known: "
                     f"{', '.join(known)}; each --mono NAME gives mass_NAME)")
    return args


def runs_of(args):
    """Seed by seed, so that a partial curve is already a whole one."""
    return [Run(n, init, seed, direction)
            for i, seed in enumerate(args.seeds)
            for n in args.sizes if i == 0 or n <= args.max_seeded_size
            for direction in args.directions for init in args.inits]


class Curve(RecipeRunner):
    def __init__(self, args):
        super().__init__(args.work_dir, args.jobs)
        self.args = args
        self.data = CurveData(self, args)

    def model_args(self):
        return size_args(self.args) + ["--dropout", str(self.args.dropout),
                                        "--num-workers", "0"]

    def style_args(self):
        """The embedding style of a model not initialised from a checkpoint."""
        return ["--embedding-style", self.args.embedding_style]

    def pretrain(self, name):
        """MASS on corpus ``name``; its best checkpoint (or the --init-from
        checkpoint called ``name``)."""
        if name in self.args.init_from:
            checkpoint = Path(self.args.init_from[name])
            if not checkpoint.is_file():
                raise RuntimeError(f"--init-from {name}={checkpoint}: no such file")
            return checkpoint.resolve()
        save_dir = self.work / "pretrain" / name
        if not (save_dir / "done").exists():
            with exclusive(save_dir):
                self.pretrain_once(name, save_dir)
        return save_dir / "checkpoint_best.pt"

    def pretrain_once(self, name, save_dir):
        """MASS on corpus ``name`` into ``save_dir`` (unless another process
        has just finished it)."""
        a = self.args
        if (save_dir / "done").exists():
            return
        progress(f"== pre-training mass_{name}: {a.pretrain_updates} updates "
                 f"(log: {save_dir}.log)")
        start = time.time()
        self.recipe("pretrain.sh", save_dir.with_suffix(".log"), f"pre-training {name}",
                    DATA_BIN=self.data.mono_bin(name), SAVE_DIR=save_dir,
                    LANGS=",".join(a.langs), MASK_RATIO=a.mask_ratio,
                    MAX_TOKENS=a.max_tokens, TOKENS_PER_UPDATE=a.max_tokens,
                    LR=a.pretrain_lr, WARMUP=a.pretrain_warmup,
                    MAX_UPDATE=a.pretrain_updates,
                    VALIDATE_EVERY=max(1, a.pretrain_updates // 6),
                    EXTRA_ARGS=" ".join(self.model_args() + self.style_args() + [
                        "--seed", "1"]))
        (save_dir / "minutes").write_text(f"{(time.time() - start) / 60:.1f}\n")
        finished(save_dir)

    def finetune(self, run, rdir):
        a = self.args
        src, tgt = run.direction.split("-")
        save_dir, log = rdir / "checkpoints", rdir / "finetune.log"
        if (save_dir / "done").exists():
            return log
        pretrained = "" if run.init == "random" else self.pretrain(run.init[len("mass_"):])
        self.recipe(
            "finetune_nmt.sh", log, f"fine-tuning {run.name}",
            DATA_BIN=self.data.para_bin(run.n_pairs), PRETRAINED=pretrained,
            SAVE_DIR=save_dir, SRC=src, TGT=tgt, MAX_TOKENS=a.max_tokens,
            TOKENS_PER_UPDATE=a.max_tokens, LR=a.lr, WARMUP=a.warmup,
            MAX_UPDATE=a.finetune_updates, PATIENCE=a.patience, LOG_INTERVAL=50,
            EXTRA_ARGS=" ".join(self.model_args() + (
                [] if pretrained else self.style_args()) + [
                "--seed", str(run.seed), "--validate-interval-updates", str(a.validate_every),
                "--save-interval-updates", str(a.validate_every),
                "--keep-interval-updates", "1", *EVERY_N_UPDATES_ONLY,
                *SELECT_BY[a.select_by]]))
        finished(save_dir)
        return log

    def score(self, run, rdir, test):
        """BLEU and chrF of the best checkpoint on test set ``test`` (None:
        the para test set, else an --extra-test name)."""
        src, tgt = run.direction.split("-")
        if test is None:
            data_bin, stem = self.data.para_bin(run.n_pairs), "test"
            reference = f"{self.args.para_dir}/test.{tgt}"
        else:
            data_bin, stem = self.data.test_bin(test), f"test-{test}"
            reference = f"{self.args.extra_tests[test]}.{tgt}"
        scores = rdir / f"{stem}.scores"
        self.recipe("generate.sh", rdir / f"{stem}.log", f"translating {stem} ({run.name})",
                    DATA_BIN=data_bin, CHECKPOINT=rdir / "checkpoints" / "checkpoint_best.pt",
                    SRC=src, TGT=tgt, SUBSET="test", REFERENCE=reference,
                    OUTPUT=rdir / f"{stem}.txt", BEAM=self.args.beam, SCORES=scores,
                    EXTRA_ARGS="--num-workers 0")
        bleu, chrf = scores.read_text().split()
        return {"bleu": float(bleu), "chrf": float(chrf), "reference": str(reference)}

    def run_one(self, run, index, total):
        """Fine-tune and score ``run``, or only what it lacks (a test set
        added since), in its directory, which no other process may use
        meanwhile."""
        rdir = self.work / "runs" / run.name
        with exclusive(rdir):
            self.run_in(run, rdir, f"[{index}/{total}] {run.name}")

    def run_in(self, run, rdir, label):
        path = rdir / "result.json"
        result = json.loads(path.read_text()) if path.exists() else None
        tests = [None] + list(self.args.extra_tests)
        missing = [t for t in tests if result is None or (t or "test") not in result["scores"]]
        log = rdir / "finetune.log"
        if result is not None and "valid_bleu" not in result and log.exists():
            # a run finished before the column was added
            result.update(best_validation(log, self.args.select_by))
            path.write_text(json.dumps(result, indent=1) + "\n")
        if not missing:
            progress(f"{label}: done before, kept")
            return
        if result is None and run.init != "random":
            self.pretrain(run.init[len("mass_"):])  # timed apart, once per corpus
        start = time.time()
        if result is None:
            progress(f"{label}: fine-tuning (log: {rdir}/finetune.log)")
            log = self.finetune(run, rdir)
            result = dict(vars(run), **best_validation(log, self.args.select_by), scores={})
        for test in missing:
            result["scores"][test or "test"] = self.score(run, rdir, test)
        if "minutes" not in result:  # fine-tuning and scoring, as first run
            result["minutes"] = round((time.time() - start) / 60, 1)
        path.write_text(json.dumps(result, indent=1) + "\n")
        test = result["scores"]["test"]
        valid_bleu = result.get("valid_bleu")
        progress(f"{label}: BLEU {test['bleu']}, chrF {test['chrf']}, "
                 f"valid nll {result['valid_nll']}"
                 + ("" if valid_bleu is None else f", valid BLEU {valid_bleu}")
                 + f" ({result['minutes']} min)")


def best_validation(log, select_by="loss"):
    """The validation that checkpoint_best.pt was saved at (the lowest loss,
    or the highest BLEU): its nll (bits per token) and, when BLEU chose it,
    its BLEU (else None)."""
    found = []
    for line in re.findall(r"valid on 'valid' subset (\|.*)", log.read_text(errors="replace")):
        fields = dict(re.findall(r"\| (\w+) ([-\d.]+)", line))
        if "nll_loss" in fields and select_by in fields:
            found.append((float(fields[select_by]), float(fields["nll_loss"])))
    if not found:
        raise RuntimeError(f"no validation {select_by} in {log}")
    sign = 1 if select_by == "bleu" else -1
    best = found[0]
    for value, nll in found[1:]:  # a tie goes to the later one, as in fairseq
        if sign * value >= sign * best[0]:
            best = (value, nll)
    return {"valid_nll": best[1], "valid_bleu": best[0] if select_by == "bleu" else None}


def run_all(curve, runs, jobs, pretrain_only=False):
    """The pre-trainings the runs need, then (unless ``pretrain_only``) the
    runs, ``jobs`` at a time; the names of those that failed (the others go on)."""
    corpora = sorted({r.init[len("mass_"):] for r in runs if r.init != "random"})
    failures = run_guarded([("", f"mass_{c}", partial(curve.pretrain, c)) for c in corpora], jobs)
    if pretrain_only:
        return failures
    # a run whose pre-training failed is not started (nor its pre-training retried)
    skipped = [r.name for r in runs if r.init in failures]
    todo = [(f"[{i}/{len(runs)}] ", r.name, partial(curve.run_one, r, i, len(runs)))
            for i, r in enumerate(runs, 1) if r.init not in failures]
    return failures + skipped + run_guarded(todo, jobs)


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)
    args = parse_args(argv)
    curve = Curve(args)
    runs = runs_of(args)
    failures = []
    if not args.plot_only:
        if not args.mono and any(r.init != "random" for r in runs):
            sys.exit("error: no --mono corpus: give at least one for a MASS initialisation")
        curve.check_signature({key: getattr(args, key) for key in SIGNATURE}, LEGACY)
        curve.data.prepare(pairs=not args.pretrain_only)
        failures = run_all(curve, runs, args.jobs, args.pretrain_only)
    if not args.pretrain_only:
        write_reports(curve.work, runs, [None] + list(args.extra_tests))
    if failures:
        sys.exit(f"error: {len(failures)} run(s) failed: {', '.join(failures)}; fix the "
                 "cause and run the same command again")


if __name__ == "__main__":
    main()
