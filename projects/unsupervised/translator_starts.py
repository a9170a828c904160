"""The translator's starts compared on one model, on the valid set: the
repair recipe's translator (TRANSLATOR_UPDATES) from random initialisation
and from MASS, both as transformer_mass in the plugin's embedding style,
from one work directory whose rounds and pipeline translations are done
(that of python -m projects.unsupervised.one_sitting with
TRANSLATOR_UPDATES, or of the recipe itself):

    python -m projects.unsupervised.translator_starts --data SHARED \\
        --work-dir work/unsup-one-sitting --jobs 3

Each start is a run of the recipe (python -m projects.unsupervised.repair)
with SCORE_TEST=0 in OUT/START, a copy of the work directory's rounds and
translations (not its checkpoints or models):
  random        TRANSLATOR_ARCH=transformer_mass, UPDATES translator updates
  random_total  the same with UPDATES + MASS_UPDATES: equal total updates
  mass          TRANSLATOR_MASS_UPDATES=MASS_UPDATES, then UPDATES
OUT/starts.csv and the table printed at the end give each start's valid
BLEU and chrF per direction and sacreBLEU's paired bootstrap against the
MASS start. --data gives the recipe one_sitting's variables for the
corpora; without it the recipe's variables come from the environment, as
for the recipe itself (MONO_PREFIX, VALID_PREFIX, ...). Any other variable
in the environment reaches every start (GEN_ENGINE=fairseq where
CTranslate2 is missing: the rounds are done). --jobs runs starts side by
side (a GPU has room for three of the recipe's models). Interrupted? Run
the same command again: each start resumes in its copy. --pack DEST copies
what the starts read (a few MiB) for another machine, a GPU's say.
"""

import argparse
import contextlib
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from fnmatch import fnmatch
from pathlib import Path
from types import SimpleNamespace

from projects.unsupervised import choose_round, one_sitting, rounds_table
from projects.unsupervised.commands import call, fail, progress, tail
from projects.unsupervised.translator import models_folder

STARTS = ("random", "random_total", "mass")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the corpora's folder, as one_sitting's --data (default: "
                        "the recipe's variables from the environment)")
    parser.add_argument("--work-dir", default=os.environ.get("WORK_DIR"),
                        help="the recipe's work directory, its rounds and translations done "
                        "(default: the WORK_DIR variable)")
    parser.add_argument("--out", help="where the starts run (default: WORK_DIR-starts)")
    parser.add_argument("--starts", default=",".join(STARTS),
                        help=f"which starts, comma-separated (default: {','.join(STARTS)})")
    parser.add_argument("--updates", type=int, default=600, help="translator updates (600)")
    parser.add_argument("--mass-updates", type=int, default=1500,
                        help="the MASS start's pre-training updates (1500)")
    parser.add_argument("--jobs", type=int, default=1, help="starts run side by side (1)")
    parser.add_argument("--report-only", action="store_true",
                        help="only the table and starts.csv, from the starts' valid.tsv and "
                        "translations in OUT (starts run elsewhere and copied back)")
    parser.add_argument("--pack", metavar="DEST",
                        help="only copy what the starts read of the work directory to DEST "
                        "(to run them on another machine, with --work-dir DEST), and stop")
    args = parser.parse_args(argv)
    if not args.work_dir:
        parser.error("give --work-dir (or set WORK_DIR): the recipe's work directory")
    args.starts = args.starts.split(",")
    for start in args.starts:
        if start not in STARTS:
            parser.error(f"--starts: {start} is not one of {', '.join(STARTS)}")
    args.out = Path(args.out or f"{args.work_dir.rstrip('/')}-starts")
    return args


def recipe_env(args, dest):
    """The recipe's variables other than the start's, for a run in ``dest``."""
    if args.data:
        return one_sitting.recipe_env(args.data, dest)
    missing = [name for name in ("MONO_PREFIX", "REFERENCE_PREFIX", "VALID_PREFIX")
               if not os.environ.get(name)]
    if missing:
        fail(f"set {', '.join(missing)} as for the recipe, or give --data (one_sitting's corpora)")
    return {"WORK_DIR": str(dest)}


def languages():
    return os.environ.get("L1") or "en", os.environ.get("L2") or "fr"


def valid_prefix(args):
    return f"{args.data}/para/en-fr/valid" if args.data else os.environ["VALID_PREFIX"]


def variables(args, start):
    """The recipe's variables for ``start``, each start's own set whatever
    the environment holds."""
    env = {"SCORE_TEST": "0", "MASS_UPDATES": "0", "TRANSLATOR_UPDATES": str(args.updates)}
    if start == "mass":
        return {**env, "TRANSLATOR_MASS_UPDATES": str(args.mass_updates), "TRANSLATOR_ARCH": ""}
    if start == "random_total":
        env["TRANSLATOR_UPDATES"] = str(args.updates + args.mass_updates)
    return {**env, "TRANSLATOR_MASS_UPDATES": "0", "TRANSLATOR_ARCH": "transformer_mass"}


def ready(work):
    """The round the translators learn from: stop unless the rounds are
    chosen and the pipeline has translated both languages' text."""
    if not (work / "valid.tsv").is_file():
        fail(f"--work-dir {work}: no valid.tsv; run the recipe (or one_sitting) with "
             "TRANSLATOR_UPDATES there first")
    final = int(call(choose_round.main, "--work-dir", work, "--langs", ",".join(languages()),
                     "--round-only").split()[0])
    for src, tgt in (languages(), languages()[::-1]):
        synthetic = work / f"translator/round{final}/mono.{tgt}-{src}.{src}"
        if not synthetic.is_file():
            fail(f"--work-dir {work}: {synthetic} is missing; run the recipe (or "
                 "one_sitting) with TRANSLATOR_UPDATES there first")
    return final


def left_out(work, folder, names):
    """Of the ``names`` in ``folder`` (within ``work``), those a resumed run
    of the recipe does not read once the rounds are done: checkpoints,
    CTranslate2 exports, the translators' models, the subword statistics,
    the pipeline's caches and n-best lists, and in each round all but its
    pairs (pairs.LANG.clean) and ckpt/done."""
    parts = Path(folder).relative_to(work).parts
    left = [n for n in names if n.endswith(".pt") or n == "ct2"]
    if parts == ():  # and the pipeline's caches of the text it translated
        left += [n for n in names if n in ("dict", "mono.spm.all", "pieces.tmp") or
                 n.endswith(".nbest") or fnmatch(n, "plain.*") or fnmatch(n, "words.*")]
    elif parts == ("translator",):
        left += [n for n in names if fnmatch(n, "round*-*") or fnmatch(n, "mass*")]
    elif parts[0] == "translator":
        left += [n for n in names if n.endswith(".nbest")]
    elif re.fullmatch(r"round\d+", parts[0]) and len(parts) == 1:
        left += [n for n in names if n != "ckpt" and not fnmatch(n, "pairs.*.clean")]
    elif re.fullmatch(r"round\d+", parts[0]) and parts[1:] == ("ckpt",):
        left += [n for n in names if n != "done"]
    return left


def copy_rounds(work, dest):
    """DEST: what the recipe reads of WORK's rounds and translations to
    resume, without checkpoints or the translators' models (made once)."""
    if dest.is_dir():
        return
    work = Path(work).resolve()
    shutil.rmtree(f"{dest}.tmp", ignore_errors=True)
    shutil.copytree(work, f"{dest}.tmp", symlinks=True,
                    ignore=lambda folder, names: left_out(work, folder, names))
    os.rename(f"{dest}.tmp", dest)


def launch(args, start):
    dest = args.out / start
    copy_rounds(Path(args.work_dir), dest)
    env = {**os.environ, **recipe_env(args, dest), **variables(args, start)}
    shown = " ".join(f"{k}={v}" for k, v in variables(args, start).items())
    progress(f"== {start}: {shown}, in {dest} (its log: {dest}/run.log)")
    log = open(dest / "run.log", "a")
    reader = open(dest / "run.log", encoding="utf-8")
    reader.seek(0, os.SEEK_END)  # a resumed start's log: from this run on
    proc = subprocess.Popen([sys.executable, "-m", "projects.unsupervised.repair"],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its group: the recipe and its commands
    return proc, log, time.monotonic(), reader


def relay(start, reader):
    """The recipe's progress lines (``== ...``) written to START's log since last time."""
    for line in reader.readlines():
        if line.startswith("== "):
            progress(f"[{start}] {line.rstrip()}")


def run_all(args):
    """Every start, ``args.jobs`` at a time, its progress shown as it goes;
    stop at the first that fails. Stopped (a signal, Ctrl-C, a failure), the
    runs still going are stopped with everything they started."""
    running = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        wait_for(args, list(args.starts), running)
    finally:
        for proc, *_ in running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)


def wait_for(args, waiting, running):
    while waiting or running:
        while waiting and len(running) < args.jobs:
            start = waiting.pop(0)
            running[start] = launch(args, start)
        time.sleep(2)
        for start, (proc, log, began, reader) in list(running.items()):
            relay(start, reader)
            if proc.poll() is None:
                continue
            relay(start, reader)
            log.close()
            reader.close()
            del running[start]
            if proc.returncode:
                tail(args.out / start / "run.log")
                fail(f"{start} failed (exit {proc.returncode}); its log: "
                     f"{args.out / start / 'run.log'}")
            progress(f"== {start}: done in {time.monotonic() - began:.0f} s")


def folder(args, start, final):
    """START's models folder: the recipe's name for its variables."""
    v = variables(args, start)
    s = SimpleNamespace(translator_updates=int(v["TRANSLATOR_UPDATES"]),
                        translator_mass_updates=int(v.get("TRANSLATOR_MASS_UPDATES", 0)),
                        translator_arch=v.get("TRANSLATOR_ARCH", ""))
    return args.out / start / "translator" / models_folder(s, final)


def row(args, start, final):
    """START's row of starts.csv; p against the MASS start (empty for itself)."""
    v, d = variables(args, start), folder(args, start, final)
    pretrain = int(v.get("TRANSLATOR_MASS_UPDATES", 0))
    with open(d / "valid.tsv", encoding="utf-8") as f:
        scores = {r["direction"]: r for r in csv.DictReader(f, delimiter="\t")}
    seconds = d / "seconds"
    cells = {"start": start, "split": "valid", "pretrain_updates": pretrain,
             "translator_updates": v["TRANSLATOR_UPDATES"],
             "train_minutes": round(int(seconds.read_text()) / 60) if seconds.is_file() else ""}
    for src, tgt in (languages(), languages()[::-1]):
        key = f"{src}_{tgt}"
        cells[f"bleu_{key}"] = scores[f"{src}-{tgt}"]["BLEU"]
        cells[f"chrf_{key}"] = scores[f"{src}-{tgt}"]["chrF"]
        p_bleu = p_chrf = ""
        if start != "mass" and "mass" in args.starts:
            p_bleu, p_chrf = rounds_table.paired_p(
                f"{valid_prefix(args)}.{tgt}",
                folder(args, "mass", final) / f"translator.valid.{src}-{tgt}.txt",
                d / f"translator.valid.{src}-{tgt}.txt", metrics=("bleu", "chrf"))
        cells[f"p_bleu_{key}"], cells[f"p_chrf_{key}"] = p_bleu, p_chrf
    return cells


def columns():
    l1, l2 = languages()
    both = (f"{l1}_{l2}", f"{l2}_{l1}")
    return ["start", "split", "pretrain_updates", "translator_updates",
            *(f"{k}_{d}" for k in ("bleu", "chrf", "p_bleu", "p_chrf") for d in both),
            "train_minutes"]


def report(args, final):
    """OUT/starts.csv, and its table on stdout."""
    rows = [row(args, start, final) for start in args.starts]
    with open(args.out / "starts.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, columns())
        writer.writeheader()
        writer.writerows(rows)
    l1, l2 = languages()
    both = (f"{l1}_{l2}", f"{l2}_{l1}")
    progress(f"== {args.out / 'starts.csv'}: valid BLEU and chrF ({l1}->{l2} / {l2}->{l1}), "
             "p: paired bootstrap against the MASS start")
    progress(f"{'start':<14} {'updates':<12} {'BLEU':<14} {'chrF':<14} {'p BLEU':<14} p chrF")
    for r in rows:
        updates = f"{r['pretrain_updates']}+{r['translator_updates']}"
        cells = [" / ".join(str(r[f"{k}_{d}"]) for d in both) for k in ("bleu", "chrf")]
        cells += [" / ".join(f"{float(r[f'p_{k}_{d}']):.3f}" if r[f"p_{k}_{d}"] != "" else "-"
                             for d in both) for k in ("bleu", "chrf")]
        progress(f"{r['start']:<14} {updates:<12} " + " ".join(f"{c:<14}" for c in cells).rstrip())


def main(argv=None):
    args = parse_args(argv)
    work = Path(args.work_dir)
    final = ready(work)
    if args.pack:
        copy_rounds(work, Path(args.pack))
        size = sum(f.stat().st_size for f in Path(args.pack).rglob("*") if f.is_file())
        progress(f"== {args.pack}: round {final}'s translations and what the recipe reads to "
                 f"resume, {size / 2**20:.1f} MiB")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        progress(f"== the translators learn from round {final}'s pipeline, in copies of {work}")
        run_all(args)
    report(args, final)


if __name__ == "__main__":
    main()
