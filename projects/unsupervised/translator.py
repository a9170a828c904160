"""One translation model per direction, trained by back-translation from the
repair recipe's pipeline (python -m projects.unsupervised.repair,
TRANSLATOR_UPDATES > 0).

The pipeline of the round the run ends with has translated each language's
monolingual text into the other language (its inputs here); the model of
L1->L2 learns to translate that synthetic L1 back into the real L2 text, and
L2->L1 the other way. It is the plugin's ``transformer_mass`` with
MODEL_ARGS's sizes, in its default embedding style (XLM's), from random
initialisation or, with TRANSLATOR_MASS_UPDATES, from that many updates of
MASS pre-training of its own (``masked_s2s --langs L1,L2`` on MONO_PREFIX,
half of each sentence masked, no language embeddings): one model, two
starts, the comparison of projects/unsupervised/results.md. Its input and
output are raw text: fairseq (``fairseq-interactive --bpe sentencepiece``)
and its CTranslate2 export (``python -m mass_tools.export``, then
``mass_tools.translate_ct2 --spm``) decode it with no word-level steps.

Everything goes to WORK_DIR/translator: the pre-training in massN, the
models in a folder per start and updates (``folder``), e.g.
roundR-mass1500-600updates: valid.tsv (both directions, by fairseq),
results.tsv (the test set, once, by fairseq and by CTranslate2) and
translator.csv (the test scores with the paired bootstrap against word by
word and against the pipeline).
"""

import shutil
import subprocess
import sys
from pathlib import Path

from projects.unsupervised.commands import (
    convert_ct2,
    ct2_device,
    decode_device_args,
    fairseq_train,
    hold_out,
    hypotheses,
    pieces,
    progress,
    run,
    seconds,
    user_dir,
    with_arch,
    write_lines,
)
from projects.unsupervised.scores import add_row, has_row, paired_p, sacrebleu, start_table

HEADER = "system\tdirection\tBLEU\tchrF\tminutes\n"
HELD_OUT = 200  # lines of each language for MASS's validation loss


def folder(s, final):
    """The models' folder: one per start and number of updates, so that no
    run resumes or reuses another's models."""
    start = f"mass{s.translator_mass_updates}" if s.translator_mass_updates \
        else "transformer_mass"
    return s.work / f"translator/round{final}-{start}-{s.translator_updates}updates"


def model_args(s):
    """MODEL_ARGS's sizes as the plugin's transformer_mass."""
    return with_arch(s.model_args, "transformer_mass")


def pretrain(s):
    """WORK_DIR/translator/massN: TRANSLATOR_MASS_UPDATES updates of MASS
    pre-training on MONO_PREFIX's text of both languages (the last HELD_OUT
    lines of each for the validation loss), unless done; its last
    checkpoint. Interrupted, it resumes from that checkpoint."""
    updates = s.translator_mass_updates
    pre = s.work / f"translator/mass{updates}"
    if (pre / "ckpt/done").is_file():
        return pre / "ckpt/checkpoint_last.pt"
    pre.mkdir(parents=True, exist_ok=True)
    langs = f"{s.l1},{s.l2}"
    if not (pre / "bin").is_dir():
        for lang in (s.l1, s.l2):
            pieces(s, f"{s.mono_prefix}.{lang}", pre / f"all.{lang}")
            hold_out(pre / f"all.{lang}", pre / f"train.{lang}", pre / f"valid.{lang}",
                     HELD_OUT)
        shutil.rmtree(pre / "bin.tmp", ignore_errors=True)
        run([sys.executable, "-m", "mass_tools.binarize", "--destdir", pre / "bin.tmp",
             "--langs", langs, "--dict", s.work / "dict.txt", "--workers", "2",
             "--mono-train", pre / "train.{lang}", "--mono-valid", pre / "valid.{lang}"],
            stdout=pre / "binarize.log", stderr=subprocess.STDOUT, log=pre / "binarize.log")
        shutil.move(pre / "bin.tmp", pre / "bin")
    progress(f"== MASS pre-training before the translator: {updates} updates on "
             f"{s.mono_prefix}.{{{langs}}}")
    fairseq_train(s, pre, ["--task", "masked_s2s", "--langs", langs, "--valid-subset",
                           f"valid.{s.l1},valid.{s.l2}", "--language-embeddings", "none"],
                  updates, model_args(s), criterion=("masked_s2s_loss",))
    return pre / "ckpt/checkpoint_last.pt"


def binarize(s, d, synthetic, src, tgt):
    """D/bin: ``synthetic`` (in SRC) beside TGT's monolingual text, in
    pieces; VALID_PREFIX's pairs (else the last 200 pairs held out)."""
    pieces(s, synthetic, d / f"all.{src}")
    pieces(s, f"{s.mono_prefix}.{tgt}", d / f"all.{tgt}")
    for lang in (src, tgt):
        if s.valid_prefix:
            shutil.copyfile(d / f"all.{lang}", d / f"train.{lang}")
            pieces(s, f"{s.valid_prefix}.{lang}", d / f"valid.{lang}")
        else:
            hold_out(d / f"all.{lang}", d / f"train.{lang}", d / f"valid.{lang}")
    dictionary = s.work / "dict.txt"
    run(["fairseq-preprocess", "-s", src, "-t", tgt, "--trainpref", d / "train",
         "--validpref", d / "valid", "--srcdict", dictionary, "--tgtdict", dictionary,
         "--destdir", d / "bin.tmp", "--workers", "2"], stdout=d / "preprocess.log")
    Path(d / "bin.tmp").rename(d / "bin")


def train(s, models, synthetic, src, tgt):
    """The SRC->TGT model, TRANSLATOR_UPDATES updates, unless done."""
    d = models / f"{src}-{tgt}"
    if (d / "ckpt/done").is_file():
        return
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "bin").is_dir():
        binarize(s, d, synthetic, src, tgt)
    restore = pretrain(s) if s.translator_mass_updates else None
    label = "MASS" if restore else "random initialisation"
    progress(f"== translator {src}->{tgt}: {s.translator_updates} updates from {label}")
    fairseq_train(s, d, ["--task", "translation", "-s", src, "-t", tgt],
                  s.translator_updates, model_args(s), restore)


def decode(s, model, src, tgt, source, target, engine):
    """``target``: ``model``'s translations of the raw text ``source``, by
    fairseq-interactive (sentencepiece inside fairseq) or by its CTranslate2
    export (``engine`` "ctranslate2", int8 unless CT2_COMPUTE_TYPE)."""
    d = Path(model).parent.parent
    log = Path(f"{target}.log")
    if engine == "ctranslate2":
        ct2 = d / "ct2"
        if not (ct2 / "model.bin").is_file():
            convert_ct2(model, ct2, d / "bin", (src, tgt), model_args(s))
        run([sys.executable, "-m", "mass_tools.translate_ct2", "--model", ct2, "--spm",
             s.work / "spm.model", "--input", source, "--output", target,
             "--beam", s.score_beam, "--batch-size", "64", "--max-len-a", "1.2",
             "--max-len-b", "10", "--compute-type", s.ct2_compute_type, "--device", ct2_device()],
            stderr=log, log=log)
        return
    run(["fairseq-interactive", d / "bin", "--user-dir", user_dir(), "--task", "translation",
         "-s", src, "-t", tgt, "--path", model, "--input", source, "--bpe", "sentencepiece",
         "--sentencepiece-model", s.work / "spm.model", "--beam", s.score_beam,
         "--buffer-size", "256", "--batch-size", "64", "--max-len-a", "1.2", "--max-len-b", "10",
         *decode_device_args()], stdout=f"{target}.gen", stderr=log, log=log)
    write_lines(target, [line for _, line in hypotheses(f"{target}.gen")])


def score(s, models, system, src, tgt, split, prefix, minutes):
    """A row of MODELS/{valid,results}.tsv: SYSTEM's (translator: fairseq;
    translator_ct2: CTranslate2) SRC->TGT translation of PREFIX.SRC."""
    table = models / ("valid.tsv" if split == "valid" else "results.tsv")
    start_table(table, HEADER)
    if has_row(table, system, f"{src}-{tgt}"):
        return
    out = models / f"{system}.{split}.{src}-{tgt}.txt"
    engine = "ctranslate2" if system.endswith("ct2") else "fairseq"
    decode(s, models / f"{src}-{tgt}/ckpt/checkpoint_last.pt", src, tgt, f"{prefix}.{src}",
           out, engine)
    scores = sacrebleu(f"{prefix}.{tgt}", out)
    progress(f"== {system} {src}->{tgt} {split}:")
    progress(scores)
    add_row(table, system, f"{src}-{tgt}", scores, minutes)


def csv_rows(s, models, final, minutes):
    """translator.csv: each engine's test scores, the paired bootstrap (p)
    against word by word (round 0) and the pipeline (round ``final``)."""
    rows = {}
    for line in (models / "results.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        system, direction, bleu, chrf, _ = line.split("\t")
        rows[(system, direction)] = (bleu, chrf)
    both = (f"{s.l1}-{s.l2}", f"{s.l2}-{s.l1}")
    lines = ["system,updates,minutes," + ",".join(
        f"{k}_{d.replace('-', '_')}" for k in ("bleu", "chrf", "p_words", "p_pipeline")
        for d in both)]
    for system in ("translator", "translator_ct2"):
        cells = [system, str(s.translator_updates), str(minutes)]
        cells += [rows[(system, d)][i] for i in (0, 1) for d in both]
        for baseline in (0, final):
            for d in both:
                cells.append(str(paired_p(f"{s.reference_prefix}.{d.split('-')[1]}",
                                          s.work / f"round{baseline}.test.{d}.txt",
                                          models / f"{system}.test.{d}.txt")))
        lines.append(",".join(cells))
    write_lines(models / "translator.csv", lines)
    for line in lines[1:]:
        progress(f"== translator.csv: {line}")


def build(s, final, synthetic, clock):
    """The two models from round ``final``'s ``synthetic`` translations
    ({(SRC, TGT): the SRC file made from TGT's text}), their time on
    ``clock``, scored on valid and, with SCORE_TEST=1, on the test set once."""
    models = folder(s, final)
    for src, tgt in synthetic:
        if not (models / f"{src}-{tgt}/ckpt/done").is_file():
            began = seconds()
            train(s, models, synthetic[(src, tgt)], src, tgt)
            clock.spent(began)
    minutes = round(clock.total() / 60)
    progress(f"== translator: {minutes} minutes of back-translation and training in all")
    for src, tgt in synthetic:
        if s.valid_prefix:
            score(s, models, "translator", src, tgt, "valid", s.valid_prefix, minutes)
        if s.score_test:
            for system in ("translator", "translator_ct2"):
                score(s, models, system, src, tgt, "test", s.reference_prefix, minutes)
    if s.score_test and not (models / "translator.csv").is_file():
        csv_rows(s, models, final, minutes)

