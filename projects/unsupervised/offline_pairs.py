"""The offline recipe's synthetic pairs of a round (projects.unsupervised.offline_bt):
a new slice of each language's monolingual text, translated into the other
language by the last round's model of that direction (fairseq-generate, or
from round 2 with GEN_ENGINE=ctranslate2 its CTranslate2 export), or in
round 1 with LEXICON word by word; the pairs with a translation kept as
WORK_DIR/roundR/gen-SRC-TGT/pairs.{SRC,TGT}."""

import itertools
import os
import shutil
import sys
from pathlib import Path

from projects.unsupervised import translate_words
from projects.unsupervised.commands import (
    call,
    ct2_device,
    decode_device_args,
    fail,
    hypotheses,
    progress,
    run,
    user_dir,
)


def checkpoint(s, round_, direction):
    """The model of ``direction`` (SRC-TGT) after ``round_`` (0: PRETRAINED)."""
    if round_ == 0:
        return s.pretrained
    return s.work / f"round{round_}/ckpt-{direction}/checkpoint_best.pt"


def split_direction(direction):
    """(SRC, TGT) of 'SRC-TGT', as bash's ${D%-*} and ${D#*-} split it."""
    return direction.rsplit("-", 1)[0], direction.split("-", 1)[1]


def words(s, src, tgt, *options):
    """translate_words from ``src`` to ``tgt`` with LEXICON: a lexicon file
    (L1 words first, reversed from L2) or induce_lexicon.py's --one-way PREFIX."""
    lexicon = ["--lexicon", f"{s.lexicon}.{src}-{tgt}.tsv"]
    if os.path.isfile(s.lexicon):
        lexicon = ["--lexicon", s.lexicon] + (["--reverse"] if src == s.l2 else [])
    if s.min_score:
        lexicon += ["--min-score", s.min_score]
    call(translate_words.main, *lexicon, "--src-lang", src, "--tgt-lang", tgt, *options)


def records(path):
    """The lines of ``path`` as awk reads them (split at newlines alone), as bytes."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") or not data else lines


def mono_slice(s, lang, round_, output):
    """Round ``round_``'s slice of MONO_LINES lines of MONO_PREFIX.LANG,
    wrapping around at the end of the file, in the order of the file."""
    lines = records(f"{s.mono_prefix}.{lang}")
    total = len(lines)
    first = (round_ - 1) * s.mono_lines % total
    with open(output, "wb") as out:
        out.writelines(line + b"\n" for number, line in enumerate(lines)
                       if (number - first + total) % total < s.mono_lines)


def paste(output, *columns):
    """The lines of ``columns`` side by side, tab-separated (paste A B > OUTPUT)."""
    with open(output, "wb") as out:
        for fields in itertools.zip_longest(*columns, fillvalue=b""):
            out.write(b"\t".join(fields) + b"\n")


def ct2_translate(s, round_, model, src, tgt, folder):
    """FOLDER/pairs.tsv from FOLDER/mono.SRC, with ``model`` exported for CTranslate2."""
    progress(f"== round {round_}: translating {s.mono_lines} {src} sentences into {tgt} with "
             f"{model} (CTranslate2, {s.ct2_compute_type})")
    run([sys.executable, "-m", "mass_plugin.export", "--checkpoint", model,
         "--data-bin", s.data_bin, "--source-lang", src, "--target-lang", tgt,
         "--output", folder / "export/model.pt", "--ctranslate2", folder / "ct2"],
        stdout=folder / "export.log")
    # the same beam and length limit as fairseq-generate, on a GPU where there is one
    run([sys.executable, "-m", "mass_tools.translate_ct2", "--model", folder / "ct2",
         "--pieces", "--beam", s.gen_beam, "--device", ct2_device(), "--batch-size", s.gen_batch,
         "--max-len-a", "1.3", "--max-len-b", "5", "--compute-type", s.ct2_compute_type,
         "--input", folder / f"mono.{src}", "--output", folder / f"synthetic.{tgt}"],
        stderr=folder / "translate.log")
    # synthetic <tab> real, in the order of the slice
    paste(folder / "pairs.tsv", records(folder / f"synthetic.{tgt}"),
          records(folder / f"mono.{src}"))


def fairseq_translate(s, round_, model, src, tgt, folder):
    """FOLDER/pairs.tsv from FOLDER/mono.SRC, with ``model`` and fairseq-generate."""
    progress(f"== round {round_}: translating {s.mono_lines} {src} sentences into {tgt} "
             f"with {model}")
    run(["fairseq-preprocess", "--only-source", "-s", src, "-t", tgt,
         "--srcdict", f"{s.data_bin}/dict.txt", "--testpref", folder / "mono",
         "--destdir", folder / "bin", "--workers", "2"], stdout=folder / "preprocess.log")
    shutil.copyfile(f"{s.data_bin}/dict.txt", folder / f"bin/dict.{tgt}.txt")
    run(["fairseq-generate", folder / "bin", "--user-dir", user_dir(), "--task", "translation",
         "-s", src, "-t", tgt, "--gen-subset", "test", "--path", model, "--beam", s.gen_beam,
         "--batch-size", s.gen_batch, "--required-batch-size-multiple", "1",
         "--max-len-a", "1.3", "--max-len-b", "5", "--skip-invalid-size-inputs-valid-test",
         *decode_device_args()], stdout=folder / "generate.log")
    # each subword hypothesis next to its real sentence
    real = records(folder / f"mono.{src}")
    with open(folder / "pairs.tsv", "wb") as out:
        for number, text in hypotheses(folder / "generate.log", "H"):
            sentence = real[number] if number < len(real) else b""
            out.write(text.encode() + b"\t" + sentence + b"\n")


def keep_translated(folder, src, tgt):
    """FOLDER/pairs.{SRC,TGT} from the lines of pairs.tsv with a translation."""
    kept = []
    for line in records(folder / "pairs.tsv"):
        fields = line.split(b"\t")
        if fields[0]:
            kept.append((fields[0], fields[1] if len(fields) > 1 else b""))
    if not kept:
        fail(f"no translations in {folder}")
    for lang, side in ((src, 1), (tgt, 0)):
        with open(folder / f"pairs.tmp.{lang}", "wb") as out:
            out.writelines(pair[side] + b"\n" for pair in kept)
    for lang in (src, tgt):
        shutil.move(folder / f"pairs.tmp.{lang}", folder / f"pairs.{lang}")
    progress(f"   {len(kept)} synthetic pairs")


def back_translate(s, round_, direction):
    """Round ``round_``'s synthetic pairs from the model of ``direction``:
    synthetic TGT for real SRC, unless they are there."""
    src, tgt = split_direction(direction)
    folder = s.work / f"round{round_}/gen-{direction}"
    if (folder / f"pairs.{tgt}").is_file():
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    mono_slice(s, src, round_, folder / f"mono.{src}")
    model = checkpoint(s, round_ - 1, direction)
    if s.lexicon and round_ == 1:
        progress(f"== round {round_}: translating {s.mono_lines} {src} sentences into {tgt} "
                 "word by word")
        words(s, src, tgt, "--spm-model", s.spm_model, "--input", folder / f"mono.{src}",
              "--output", folder / f"words.{tgt}")
        # synthetic <tab> real, in the order of the slice
        paste(folder / "pairs.tsv", records(folder / f"words.{tgt}"),
              records(folder / f"mono.{src}"))
    elif s.gen_engine == "ctranslate2" and round_ > 1:
        ct2_translate(s, round_, model, src, tgt, folder)
    else:
        fairseq_translate(s, round_, model, src, tgt, folder)
    keep_translated(folder, src, tgt)
