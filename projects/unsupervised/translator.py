"""One translation model per direction, trained by back-translation from the
repair recipe's pipeline (projects.unsupervised.repair, TRANSLATOR_UPDATES > 0).

The pipeline (word by word, repaired, placeholders restored) of the round
the run ends with translates each language's monolingual text into the
other language; the model of L1->L2 learns to translate that synthetic L1
back into the real L2 text (and L2->L1 the other way), starting from the
recipe's MASS pre-training where there is one (MASS_UPDATES > 0), else
from random initialisation. Its input and output are raw text: fairseq
(``fairseq-interactive --bpe sentencepiece``) and its CTranslate2 export
(``python -m mass_plugin.export``, then ``mass_tools.translate_ct2
--spm``) decode it with no word-level steps. The pipeline's translations
are in WORK_DIR/translator/roundR, made once for every start; the rest in a
folder per start, model and updates (models_folder), e.g.
WORK_DIR/translator/roundR-600updates: valid.tsv (both directions, decoded by
fairseq), results.tsv (the test set, once, by fairseq and by CTranslate2),
translator.csv (the test scores with the paired bootstrap against word by
word and against the pipeline).
"""

import shutil
import sys
from pathlib import Path

from projects.unsupervised import rounds_table
from projects.unsupervised.commands import (
    Clock,
    ct2_device,
    decode_device_args,
    hypotheses,
    progress,
    run,
    seconds,
    user_dir,
    write_lines,
)
from projects.unsupervised.pipeline import translate
from projects.unsupervised.repair_model import convert_ct2, fit, hold_out, with_arch
from projects.unsupervised.repair_start import mass_model
from projects.unsupervised.repair_text import other, pieces
from projects.unsupervised.scores import add_row, has_row, sacrebleu, start_table

HEADER = "system\tdirection\tBLEU\tchrF\tminutes\n"


def pairs(s, folder, final, src, tgt):
    """FOLDER/SRC-TGT/{train,valid}.{SRC,TGT} in pieces: TGT's monolingual
    text translated into SRC by the pipeline of round ``final`` (once, in
    WORK_DIR/translator/roundR for every start), next to
    itself; VALID_PREFIX's pairs (else the last 200 pairs held out)."""
    d = folder / f"{src}-{tgt}"
    d.mkdir(parents=True, exist_ok=True)
    # the same for every start: in roundR, whichever folder the models are in
    synthetic = s.work / f"translator/round{final}/mono.{tgt}-{src}.{src}"
    if not synthetic.is_file():
        synthetic.parent.mkdir(parents=True, exist_ok=True)
        progress(f"== translator: {s.mono_prefix}.{tgt} into {src} by round {final}'s pipeline")
        translate(s, final, tgt, f"{s.mono_prefix}.{tgt}", f"{synthetic}.tmp", "mono")
        Path(f"{synthetic}.tmp").rename(synthetic)
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


def model_args(s):
    """The translator's model options: MODEL_ARGS, as transformer_mass where
    TRANSLATOR_MASS_UPDATES gives it a MASS start of its own, with the --arch
    of TRANSLATOR_ARCH where it is set."""
    if s.translator_mass_updates:
        return with_arch(s.model_args, "transformer_mass")
    if s.translator_arch:
        return with_arch(s.model_args, s.translator_arch)
    return s.model_args


def start(s):
    """The checkpoint both directions start from (None: random
    initialisation), pre-trained first where TRANSLATOR_MASS_UPDATES asks."""
    if s.mass_updates:
        return s.work / "mass/ckpt/checkpoint_last.pt"
    if s.translator_mass_updates:
        n = s.translator_mass_updates
        return mass_model(s, s.work / f"translator/mass{n}", n, model_args(s), "the translator")
    return None


def train(s, folder, final, src, tgt):
    """The SRC->TGT model, TRANSLATOR_UPDATES updates, unless done; its checkpoint."""
    d = folder / f"{src}-{tgt}"
    last = d / "ckpt/checkpoint_last.pt"
    if (d / "ckpt/done").is_file():
        return last
    if not (d / "bin").is_dir():
        pairs(s, folder, final, src, tgt)
    restore = start(s)
    label = "MASS" if restore else "random initialisation"
    progress(f"== translator {src}->{tgt}: {s.translator_updates} updates from {label}")
    fit(s, d, ["--task", "translation", "-s", src, "-t", tgt], s.translator_updates, restore,
        model_args=model_args(s))
    return last


def decode(s, model, src, tgt, source, target, engine):
    """``target``: ``model``'s translations of the raw text ``source``, by
    fairseq-interactive (sentencepiece inside fairseq) or by its CTranslate2
    export (``engine`` "ctranslate2", int8 unless CT2_COMPUTE_TYPE)."""
    d = Path(model).parent.parent
    log = Path(f"{target}.log")
    if engine == "ctranslate2":
        ct2 = d / "ct2"
        if not (ct2 / "model.bin").is_file():
            convert_ct2(s, model, ct2, d / "bin", (src, tgt), model_args(s))
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


def score(s, folder, system, src, split, prefix, minutes):
    """A row of FOLDER/{valid,results}.tsv: SYSTEM's (translator: fairseq;
    translator_ct2: CTranslate2) SRC->TGT translation of PREFIX.SRC."""
    tgt = other(s, src)
    table = folder / ("valid.tsv" if split == "valid" else "results.tsv")
    start_table(table, HEADER)
    if has_row(table, system, f"{src}-{tgt}"):
        return
    out = folder / f"{system}.{split}.{src}-{tgt}.txt"
    engine = "ctranslate2" if system.endswith("ct2") else "fairseq"
    decode(s, folder / f"{src}-{tgt}/ckpt/checkpoint_last.pt", src, tgt, f"{prefix}.{src}",
           out, engine)
    scores = sacrebleu(f"{prefix}.{tgt}", out)
    progress(f"== {system} {src}->{tgt} {split}:")
    progress(scores)
    add_row(table, system, f"{src}-{tgt}", scores, minutes)


def csv_row(s, folder, final, minutes):
    """translator.csv: each engine's test scores, the paired bootstrap (p)
    against word by word (round 0) and the pipeline (round ``final``)."""
    rows = {}
    for line in (folder / "results.tsv").read_text(encoding="utf-8").splitlines()[1:]:
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
                ref = f"{s.reference_prefix}.{d.split('-')[1]}"
                cells.append(str(rounds_table.paired_p(
                    ref, s.work / f"round{baseline}.test.{d}.txt",
                    folder / f"{system}.test.{d}.txt")))
        lines.append(",".join(cells))
    write_lines(folder / "translator.csv", lines)
    for line in lines[1:]:
        progress(f"== translator.csv: {line}")


def models_folder(s, final):
    """The models' folder in WORK_DIR/translator: one per start, model and
    number of updates, so that no run resumes or reuses another's models
    (roundR-600updates, roundR-mass1500-600updates,
    roundR-transformer_mass-2100updates)."""
    mass = f"-mass{s.translator_mass_updates}" if s.translator_mass_updates else ""
    arch = f"-{s.translator_arch}" if s.translator_arch else ""
    return f"round{final}{mass}{arch}-{s.translator_updates}updates"


def build(s, final):
    """The two models from round ``final``'s pipeline, scored on valid and,
    with SCORE_TEST=1, on the test set once."""
    folder = s.work / f"translator/{models_folder(s, final)}"
    folder.mkdir(parents=True, exist_ok=True)
    clock = Clock(folder)
    for src in (s.l1, s.l2):
        if not (folder / f"{src}-{other(s, src)}/ckpt/done").is_file():
            began = seconds()
            train(s, folder, final, src, other(s, src))
            clock.spent(began)
    minutes = round(clock.total() / 60)
    progress(f"== translator: {minutes} minutes of back-translation and training in all")
    for src in (s.l1, s.l2):
        if s.valid_prefix:
            score(s, folder, "translator", src, "valid", s.valid_prefix, minutes)
        if s.score_test == "1":
            for system in ("translator", "translator_ct2"):
                score(s, folder, system, src, "test", s.reference_prefix, minutes)
    if s.score_test == "1" and not (folder / "translator.csv").is_file():
        csv_row(s, folder, final, minutes)
