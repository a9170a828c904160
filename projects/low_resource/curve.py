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

import json
import logging
import re
import sys
import time
from functools import partial
from pathlib import Path

from projects.low_resource.data import CurveData
from projects.low_resource.options import LEGACY, SELECT_BY, SIGNATURE, parse_args, runs_of
from projects.low_resource.report import write_reports
from projects.runner import RecipeRunner, exclusive, finished, progress, run_guarded, size_args

# validate and save every --validate-every updates, not at the end of each
# epoch too: --patience then counts the same span of training at every N
EVERY_N_UPDATES_ONLY = ["--validate-interval", "1000000", "--save-interval", "1000000"]


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
    args = parse_args(argv, __doc__.split("\n\n")[0])
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
