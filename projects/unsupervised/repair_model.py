"""The repair recipe's model (projects.unsupervised.repair): the joint
sentencepiece model and dictionary, one model of both languages (noisy ->
clean) trained with fairseq-train, and its repairs of text with
placeholders, decoded by fairseq-generate or by CTranslate2."""

import shutil
import subprocess
import sys
from pathlib import Path

from projects.unsupervised.commands import (
    concatenate,
    ct2_device,
    decode_device_args,
    device_args,
    hypotheses,
    progress,
    run,
    show_last_validation,
    user_dir,
    write_lines,
)
from projects.unsupervised.repair_text import PLACEHOLDER, pieces


def subwords(s):
    """WORK_DIR/spm.model, the joint sentencepiece model, and dict.txt, its
    fairseq dictionary, unless they are there."""
    w = s.work
    if (w / "dict.txt").is_file():
        return
    progress(f"== subwords: {s.spm_vocab} pieces over {s.mono_prefix}.{{{s.l1},{s.l2}}}")
    # the placeholder is a piece of its own, and in the dictionary, text or no text
    run([sys.executable, "-m", "mass_tools.learn_subwords", f"{s.mono_prefix}.{s.l1}",
         f"{s.mono_prefix}.{s.l2}", "--output", w / "spm", "--vocab-size", s.spm_vocab,
         "--symbols", PLACEHOLDER, "--threads", "2"], stdout=w / "spm.log",
        stderr=subprocess.STDOUT)
    (w / "placeholder.txt").write_text(PLACEHOLDER + "\n", encoding="utf-8")
    together = w / "mono.spm.all.tmp"
    together.unlink(missing_ok=True)
    for name in (f"{s.mono_prefix}.{s.l1}", f"{s.mono_prefix}.{s.l2}", w / "placeholder.txt"):
        pieces(s, name, w / "pieces.tmp")
        with open(together, "ab") as out:
            out.write((w / "pieces.tmp").read_bytes())
    shutil.move(w / "mono.spm.all.tmp", w / "mono.spm.all")
    run(["fairseq-preprocess", "--only-source", "--trainpref", w / "mono.spm.all",
         "--destdir", w / "dict", "--workers", "2"], stdout=w / "dict.log")
    shutil.move(w / "dict/dict.txt", w / "dict.txt")


def repair(s, model, lang, source, target, nbest=1, beam=None):
    """``target``: the ``model``'s ``nbest`` repairs (beam ``beam``, else
    BEAM) into ``lang`` of each line of ``source`` (text with placeholders),
    best first, with fairseq-generate or (GEN_ENGINE=ctranslate2) CTranslate2."""
    if s.gen_engine == "ctranslate2":
        return repair_ct2(s, model, source, target, nbest, beam)
    gen = Path(f"{target}.gen")
    shutil.rmtree(gen, ignore_errors=True)
    gen.mkdir(parents=True)
    pieces(s, source, gen / f"in.n{lang}")
    shutil.copyfile(gen / f"in.n{lang}", gen / f"in.{lang}")  # preprocess needs a target side
    dictionary = s.work / "dict.txt"
    run(["fairseq-preprocess", "-s", f"n{lang}", "-t", lang, "--testpref", gen / "in",
         "--srcdict", dictionary, "--tgtdict", dictionary, "--destdir", gen / "bin",
         "--workers", "2"], stdout=gen / "preprocess.log")
    run(["fairseq-generate", gen / "bin", "--user-dir", user_dir(), "--task", "translation",
         "-s", f"n{lang}", "-t", lang, "--path", model, "--beam", beam or s.beam,
         "--nbest", nbest, "--batch-size", "64", "--required-batch-size-multiple", "1",
         "--post-process", "sentencepiece", "--max-len-a", "1.2", "--max-len-b", "10",
         *decode_device_args()], stdout=gen / "generate.log", stderr=gen / "generate.err",
        log=gen / "generate.err")
    write_lines(target, [text for _, text in hypotheses(gen / "generate.log")])


def newer(path, than):
    """bash's ``[ PATH -nt THAN ]``."""
    path, than = Path(path), Path(than)
    return path.exists() and (not than.exists()
                              or path.stat().st_mtime_ns > than.stat().st_mtime_ns)


def model_arch(s, model_args=None):
    """The --arch of ``model_args``, MODEL_ARGS by default ("" where it names none)."""
    words = (model_args or s.model_args).split()
    return words[words.index("--arch") + 1] if "--arch" in words[:-1] else ""


def with_arch(model_args, arch):
    """``model_args`` (fairseq-train's model options) with --arch ``arch``,
    the other options (sizes, dropout) kept."""
    words = model_args.split()
    if "--arch" in words[:-1]:
        at = words.index("--arch")
        words = words[:at] + words[at + 2:]
    return " ".join(["--arch", arch, *words])


def convert_ct2(s, model, ct2, data=None, langs=("noisy", "clean"), model_args=None):
    """``ct2``: the checkpoint ``model`` (of the binarized ``data``, by
    default its folder's ../bin, and the direction ``langs``; trained with
    ``model_args``, MODEL_ARGS by default) for CTranslate2, with
    CTranslate2's fairseq converter, or for the plugin's transformer_mass
    through ``python -m mass_plugin.export``, which writes it as fairseq's
    plain transformer first."""
    data = data or f"{Path(model).parent}/../bin"
    if model_arch(s, model_args).startswith("transformer_mass"):
        exported = Path(f"{ct2}.export")
        shutil.rmtree(exported, ignore_errors=True)
        cmd = [sys.executable, "-m", "mass_plugin.export", "--checkpoint", model,
               "--data-bin", data, "--output", exported / "model.pt", "--ctranslate2",
               f"{ct2}.tmp", "--source-lang", langs[0], "--target-lang", langs[1]]
    else:
        cmd = ["ct2-fairseq-converter", "--model_path", model, "--data_dir", data,
               "--source_lang", langs[0], "--target_lang", langs[1], "--user_dir", user_dir(),
               "--output_dir", f"{ct2}.tmp"]
    run(cmd, stdout=f"{ct2}.log", stderr=subprocess.STDOUT, log=f"{ct2}.log")
    shutil.move(f"{ct2}.tmp", ct2)


def repair_ct2(s, model, source, target, nbest=1, beam=None):
    """repair() with the model converted for CTranslate2 (once per checkpoint)."""
    ct2 = Path(model).parent / "ct2"
    if not newer(ct2 / "model.bin", model):
        shutil.rmtree(ct2, ignore_errors=True)
        shutil.rmtree(f"{ct2}.tmp", ignore_errors=True)
        convert_ct2(s, model, ct2)
    run([sys.executable, "-m", "mass_tools.translate_ct2", "--model", ct2,
         "--spm", s.work / "spm.model", "--input", source, "--output", f"{target}.tmp",
         "--beam", beam or s.beam, "--nbest", nbest, "--batch-size", "64", "--max-len-a", "1.2",
         "--max-len-b", "10", "--compute-type", s.ct2_compute_type, "--device", ct2_device()],
        stderr=f"{target}.log", log=f"{target}.log")
    shutil.move(f"{target}.tmp", target)


def hold_out(source, train, held_out, count=200):
    """The last ``count`` lines of ``source`` into ``held_out``, the others
    into ``train``; how many lines ``source`` has."""
    lines = Path(source).read_bytes().splitlines(keepends=True)
    Path(held_out).write_bytes(b"".join(lines[-count:]))
    Path(train).write_bytes(b"".join(lines[:-count]))
    return len(lines)


def split_pairs(s, folder):
    """FOLDER/bin: the pairs of both languages binarized, their last 200 held
    out for fairseq's validation loss."""
    for side in ("noisy", "clean"):
        concatenate([folder / f"pairs.{lang}.{side}" for lang in (s.l1, s.l2)],
                    folder / f"all.{side}")
        hold_out(folder / f"all.{side}", folder / f"train.{side}", folder / f"heldout.{side}")
    dictionary = s.work / "dict.txt"
    run(["fairseq-preprocess", "-s", "noisy", "-t", "clean", "--trainpref", folder / "train",
         "--validpref", folder / "heldout", "--srcdict", dictionary, "--tgtdict", dictionary,
         "--destdir", folder / "bin.tmp", "--workers", "2"], stdout=folder / "preprocess.log")
    shutil.move(folder / "bin.tmp", folder / "bin")


def fit(s, folder, task_args, updates, restore=None,
        criterion=("label_smoothed_cross_entropy", "--label-smoothing", "0.1"), model_args=None):
    """fairseq-train of ``model_args`` (MODEL_ARGS by default) on FOLDER/bin
    (``task_args``: --task and its options; ``criterion``: --criterion and
    its options): Adam at LR,
    ``updates`` updates, the last checkpoint in FOLDER/ckpt, from the weights
    of ``restore`` (a checkpoint, or None: random initialisation) unless
    FOLDER/ckpt has a checkpoint to resume from. Its log FOLDER/train.log,
    whose last validation is shown; FOLDER/ckpt/done at the end."""
    save_dir = folder / "ckpt"
    options = []
    if restore and not (save_dir / "checkpoint_last.pt").is_file():
        options = ["--restore-file", restore, "--reset-optimizer", "--reset-dataloader",
                   "--reset-meters", "--reset-lr-scheduler"]
    log = folder / "train.log"
    run(["fairseq-train", folder / "bin", "--user-dir", user_dir(), *task_args,
         *(model_args or s.model_args).split(), "--criterion", *criterion,
         "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", s.lr,
         "--lr-scheduler", "inverse_sqrt",
         "--warmup-updates", updates // 2 if updates < 2000 else 500,
         "--max-tokens", s.max_tokens, "--max-update", updates, "--save-dir", save_dir,
         "--no-epoch-checkpoints", "--save-interval-updates", updates,
         "--keep-interval-updates", "1", "--log-interval", "50", "--num-workers", "0",
         "--seed", "1", *options, *device_args(s.max_tokens, s.tokens_per_update)],
        stdout=log, stderr=subprocess.STDOUT, log=log)
    show_last_validation(log)
    (save_dir / "done").touch()


def train(s, folder, updates, restore, label):
    """One model of both languages, noisy -> clean, on FOLDER/pairs.{L1,L2}.*
    for ``updates`` updates, from ``restore`` (a checkpoint, or None: from
    scratch), unless FOLDER/ckpt/done says it was; ``label`` names it."""
    if (folder / "ckpt/done").is_file():
        return
    if not (folder / "bin").is_dir():
        split_pairs(s, folder)
    count = (folder / "train.noisy").read_bytes().count(b"\n")
    progress(f"== {label}: training on {count} pairs, {updates} updates")
    fit(s, folder, ["--task", "translation", "-s", "noisy", "-t", "clean"], updates, restore)
