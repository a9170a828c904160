"""The runs of projects/paper_analysis/__main__.py in one work directory: its settings, the
data, fairseq-train for the pre-trainings, and the recipes
examples/finetune_nmt.sh and examples/generate.sh for fine-tuning and
translation. Every run writes its output to a log file."""

from pathlib import Path

from projects.paper_analysis.eval import finetune_valid_ppl
from projects.runner import RecipeRunner, finished, size_args

ARCH = "transformer_mass"
# what makes two runs comparable: a work dir keeps one of each
SIGNATURE = ("layers", "dim", "ffn", "heads", "pretrain_updates", "finetune_updates",
             "max_tokens", "lr", "warmup", "vocab_size", "seed", "langs", "pair", "beam",
             "embedding_style", "score_on")
# what a work dir made before a setting existed holds
LEGACY = {"embedding_style": "fairseq", "score_on": "test"}


class Runner(RecipeRunner):
    def __init__(self, args):
        super().__init__(args.work_dir, args.jobs)
        self.args = args
        self.data_bin = self.work / "data-bin"
        self.mono_bin = self.work / "mono-bin"

    def check_signature(self):
        """A work dir holds one configuration: refuse to mix budgets or sizes."""
        super().check_signature({key: getattr(self.args, key) for key in SIGNATURE}, LEGACY)

    def model_args(self):
        """The model's sizes (its --arch is ARCH)."""
        return size_args(self.args)

    def style_args(self):
        """The embedding style, for a model not initialised from a checkpoint
        (fine-tuning from one keeps its style)."""
        return ["--embedding-style", self.args.embedding_style]

    def schedule_args(self, updates):
        """Seed, interval checkpoints to resume from, and data loading, for a
        training of ``updates`` updates."""
        return ["--seed", str(self.args.seed), "--save-interval-updates",
                str(max(1, updates // 4)), "--keep-interval-updates", "1",
                "--num-workers", "0"]

    # -- data -------------------------------------------------------------
    def prepare_data(self):
        done = self.work / "data.done"
        if done.exists():
            return
        print(f"== data: one sentencepiece model and binarized data in {self.work}", flush=True)
        a = self.args
        self.recipe("prepare_data.sh", self.work / "data.log", "preparing the data",
                    RAW_DIR=Path(a.raw_dir).resolve(), WORK_DIR=self.work,
                    LANGS=",".join(a.langs), PAIR=a.pair, VOCAB_SIZE=a.vocab_size)
        self.link_mono_bin()
        done.touch()

    def link_mono_bin(self):
        """All languages as one corpus, without language embeddings, so every
        point (masked_s2s or fairseq's denoising) sees the same sentences:
        fairseq reads train, train1, ... as one training set."""
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

    # -- stages -----------------------------------------------------------
    def pretrain(self, save_dir, log, extra, what):
        """fairseq-train on the monolingual text; ``extra`` sets the objective."""
        if (save_dir / "done").exists():
            return
        a = self.args
        updates = a.pretrain_updates
        cmd = ["fairseq-train", str(self.mono_bin), "--user-dir", self.user_dir,
               "--arch", ARCH, *self.model_args(), "--optimizer", "adam",
               "--adam-betas", "(0.9, 0.98)", "--clip-norm", "1.0", "--lr", str(a.lr),
               "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(a.warmup),
               "--max-tokens", str(a.max_tokens), "--max-update", str(updates),
               "--save-dir", str(save_dir), "--no-epoch-checkpoints",
               *self.schedule_args(updates), "--log-format", "simple", "--log-interval",
               "25", *self.device, "--disable-validation",
               "--skip-invalid-size-inputs-valid-test", *self.style_args(), *extra]
        self.run(cmd, log, what)
        finished(save_dir)

    def finetune(self, init, pdir):
        """Fine-tune on the parallel pairs from ``init`` (None: random
        initialisation); the checkpoint and its validation perplexity."""
        save_dir, log = pdir / "finetune", pdir / "finetune.log"
        if not (save_dir / "done").exists():
            a = self.args
            self.recipe(
                "finetune_nmt.sh", log, "fine-tuning", DATA_BIN=self.data_bin,
                PRETRAINED="" if init is None else init, SAVE_DIR=save_dir, SRC=a.src,
                TGT=a.tgt, ARCH=ARCH, MAX_TOKENS=a.max_tokens, TOKENS_PER_UPDATE=a.max_tokens,
                LR=a.lr, WARMUP=a.warmup, MAX_UPDATE=a.finetune_updates, PATIENCE=-1,
                LOG_INTERVAL=25,
                EXTRA_ARGS=" ".join(self.model_args() + self.schedule_args(a.finetune_updates)
                                    + (self.style_args() if init is None else [])))
            finished(save_dir)
        return save_dir / "checkpoint_last.pt", finetune_valid_ppl(log)

    def translate(self, checkpoint, pdir):
        """Translate the set of ``--score-on`` (test, or valid) and score it:
        BLEU and chrF."""
        a = self.args
        subset = a.score_on
        scores = pdir / f"{subset}.scores"
        log = pdir / ("generate.log" if subset == "test" else f"generate-{subset}.log")
        self.recipe(
            "generate.sh", log, f"translating the {subset} set",
            DATA_BIN=self.data_bin, CHECKPOINT=checkpoint, SRC=a.src, TGT=a.tgt,
            SUBSET=subset, REFERENCE=Path(a.raw_dir).resolve() / f"{subset}.{a.tgt}",
            OUTPUT=pdir / f"{subset}.{a.src}-{a.tgt}.txt", BEAM=a.beam, SCORES=scores,
            EXTRA_ARGS="--num-workers 0")
        bleu, chrf = scores.read_text().split()
        return float(bleu), float(chrf)
