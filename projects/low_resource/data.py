"""The data of projects/low_resource/curve.py, in its work directory:

    raw/NAME/mono.LANG, mono.valid.LANG   each monolingual corpus, with
                                          --valid-lines lines held out
    spm.model                             ONE sentencepiece model over all of
                                          the corpora's training text
    bin/NAME/                             each corpus, binarized with ONE
                                          dictionary (bin/dict.txt) for
                                          masked_s2s
    bin/para-N/                           the first N training pairs, the
                                          valid and test pairs
    bin/test-NAME/                        each extra test set, as split "test"

Every model of the curve therefore shares one vocabulary, whatever text it
was pre-trained on. Each step is skipped when its output exists."""

import shutil
import sys
from pathlib import Path


class CurveData:
    def __init__(self, runner, args):
        self.runner, self.args = runner, args
        self.work = runner.work
        self.spm_model = self.work / "spm.model"
        self.dict = self.work / "bin" / "dict.txt"

    def prep(self, tool, log_name, *args):
        """Run ``python -m mass_tools.TOOL ARGS``, its output in logs/LOG_NAME.log."""
        self.runner.run([sys.executable, "-m", f"mass_tools.{tool}", *map(str, args)],
                        self.work / "logs" / f"{log_name}.log", f"mass_tools.{tool}")

    def mono_bin(self, name):
        return self.work / "bin" / name

    def para_bin(self, n_pairs):
        return self.work / "bin" / f"para-{n_pairs}"

    def test_bin(self, name):
        return self.work / "bin" / f"test-{name}"

    def prepare(self, pairs=True):
        """Everything the runs read (without any parallel text, training or
        test, if not ``pairs``); the dictionary is written last."""
        if not self.dict.exists():
            print(f"== data: held-out lines, one sentencepiece model, one dictionary "
                  f"in {self.work}", flush=True)
            self.split_mono()
            self.learn_subwords()
            self.binarize_mono()
        if not pairs:
            return
        for n_pairs in self.args.sizes:
            self.binarize_pairs(n_pairs)
        for name, prefix in self.args.extra_tests.items():
            self.binarize_test(name, prefix)

    def split_mono(self):
        """Every k-th line held out, k = lines // --valid-lines, so that
        a corpus made by concatenating sources is held out from each."""
        valid = self.args.valid_lines
        for name, directory in self.args.mono.items():
            for lang in self.args.langs:
                path = Path(directory) / f"{lang}.txt"
                if not path.is_file():
                    raise SystemExit(f"error: --mono {name}={directory}: no {path} (one "
                                     "LANG.txt per language of --langs)")
                lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
                if len(lines) < 2 * valid:
                    raise SystemExit(f"error: {path} has {len(lines)} lines, too few to "
                                     f"hold out --valid-lines {valid}")
                step = len(lines) // valid
                held = [lines[i] for i in range(0, step * valid, step)]
                kept = [line for i, line in enumerate(lines)
                        if i % step or i >= step * valid]
                out = self.work / "raw" / name
                out.mkdir(parents=True, exist_ok=True)
                (out / f"mono.{lang}").write_text("".join(kept), encoding="utf-8")
                (out / f"mono.valid.{lang}").write_text("".join(held), encoding="utf-8")

    def learn_subwords(self):
        """One model over the training text of every corpus (concatenated per
        language; learn_subwords.py balances the languages)."""
        for lang in self.args.langs:
            concatenate([self.work / "raw" / name / f"mono.{lang}" for name in self.args.mono],
                        self.work / "raw" / f"all.{lang}")
        self.prep("learn_subwords", "learn_subwords", "--vocab-size",
                  self.args.vocab_size, "--output", self.spm_model.with_suffix(""),
                  *[self.work / "raw" / f"all.{lang}" for lang in self.args.langs])

    def segment(self, source, target):
        target.parent.mkdir(parents=True, exist_ok=True)
        self.prep("apply_subwords", "apply_subwords", "--model", self.spm_model,
                  "--input", source, "--output", target)

    def binarize_mono(self):
        """The dictionary from all corpora together, then each corpus with it."""
        langs, spm = ",".join(self.args.langs), self.work / "spm"
        for lang in self.args.langs:
            for name in self.args.mono:
                for split in ("mono", "mono.valid"):
                    self.segment(self.work / "raw" / name / f"{split}.{lang}",
                                 spm / name / f"{split}.{lang}")
            # segmentation is line by line: the union of the segmented corpora
            concatenate([spm / name / f"mono.{lang}" for name in self.args.mono],
                        spm / "all" / f"mono.{lang}")
        staging = self.work / "bin" / "all"
        self.prep("binarize", "binarize", "--destdir", staging, "--langs", langs,
                  "--mono-train", self.work / "spm" / "all" / "mono.{lang}")
        for name in self.args.mono:
            self.prep("binarize", "binarize", "--destdir", self.mono_bin(name),
                      "--langs", langs, "--dict", staging / "dict.txt",
                      "--mono-train", self.work / "spm" / name / "mono.{lang}",
                      "--mono-valid", self.work / "spm" / name / "mono.valid.{lang}")
        shutil.copy(staging / "dict.txt", self.dict)
        shutil.rmtree(staging)

    def binarize_pairs(self, n_pairs):
        out = self.para_bin(n_pairs)
        if (out / "dict.txt").exists():
            return
        para = Path(self.args.para_dir)
        spm = self.work / "spm" / "para"
        for lang in self.args.langs:
            for split in ("valid", "test"):
                if not (spm / f"{split}.{lang}").exists():
                    self.segment(para / f"{split}.{lang}", spm / f"{split}.{lang}")
            lines = (para / f"train.{lang}").read_text(encoding="utf-8").splitlines(True)
            if len(lines) < n_pairs:
                raise SystemExit(f"error: {para}/train.{lang} has {len(lines)} pairs, "
                                 f"fewer than --sizes asks for ({n_pairs})")
            raw = self.work / "raw" / "para" / f"train.{n_pairs}.{lang}"
            raw.parent.mkdir(parents=True, exist_ok=True)
            raw.write_text("".join(lines[:n_pairs]), encoding="utf-8")
            self.segment(raw, spm / f"train.{n_pairs}.{lang}")
        self.prep("binarize", "binarize", "--destdir", out, "--langs",
                  ",".join(self.args.langs), "--dict", self.dict, "--pair",
                  "-".join(self.args.langs), "--train", spm / f"train.{n_pairs}",
                  "--valid", spm / "valid", "--test", spm / "test")

    def binarize_test(self, name, prefix):
        out = self.test_bin(name)
        if (out / "dict.txt").exists():
            return
        spm = self.work / "spm" / "extra" / name
        for lang in self.args.langs:
            self.segment(f"{prefix}.{lang}", spm.with_name(f"{name}.{lang}"))
        self.prep("binarize", "binarize", "--destdir", out, "--langs",
                  ",".join(self.args.langs), "--dict", self.dict, "--pair",
                  "-".join(self.args.langs), "--test", spm)


def concatenate(sources, target):
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        for source in sources:
            with open(source, "rb") as text:
                shutil.copyfileobj(text, out)
