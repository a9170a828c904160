"""projects/low_resource/curve.py, shrunken: a tiny model, a few updates, two
sizes, on slices of the bundled real text; and its parts (which runs a curve
makes, seeds included, is checked without training)."""

import csv
import json
import os
import re
import shutil
import subprocess
import time

import pytest
from fairseq import checkpoint_utils
from helpers.scores import bleu_chrf, paired_p

from conftest import REPO, cli_env, hold_elsewhere, write
from projects.low_resource import curve

DATA = REPO / "examples" / "data"
SMALL = ["--sizes", "40,80", "--seeds", "1",
         "--directions", "en-fr", "--layers", "1", "--dim", "32", "--ffn", "64",
         "--heads", "2", "--vocab-size", "300", "--max-tokens", "512",
         "--pretrain-updates", "4", "--pretrain-warmup", "2", "--finetune-updates", "4",
         "--warmup", "2", "--validate-every", "2", "--valid-lines", "40", "--beam", "2"]


def run_curve(*args, check=True):
    env = cli_env()
    proc = subprocess.run(["python", "-m", "projects.low_resource.curve",
                           *SMALL, *map(str, args)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"low_resource_curve.py failed:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def lines(name, lang, count, start=0):
    text = (DATA / f"{name}.{lang}").read_text(encoding="utf-8").splitlines()
    return text[start:start + count]


@pytest.fixture(scope="module")
def curve_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("curve")
    for sub in ("doc", "para", "extra"):
        (root / sub).mkdir()
    for lang in ("en", "fr"):
        write(root / "doc" / f"{lang}.txt", lines("mono", lang, 400))
        write(root / "para" / f"train.{lang}", lines("train", lang, 80))
        for split in ("valid", "test"):
            write(root / "para" / f"{split}.{lang}", lines(split, lang, 30))
        write(root / "extra" / f"set.{lang}", lines("test", lang, 20, start=100))
    work = root / "work"
    common = ["--para-dir", root / "para", "--mono", f"doc={root / 'doc'}", "--work-dir", work]
    first = run_curve(*common, "--jobs", "2")  # two runs at a time
    # the same command with an extra test set: scored, nothing retrained
    second = run_curve(*common, "--extra-test", f"set={root / 'extra' / 'set'}")
    return root, work, first, second


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_every_run_gets_a_row_the_bootstrap_and_the_plot(curve_run):
    root, work, first, _ = curve_run
    rows = read_csv(work / "low-resource.csv")
    assert list(rows[0]) == ["n_pairs", "init", "seed", "direction", "bleu", "chrf",
                             "valid_nll", "minutes", "valid_bleu"]
    assert sorted((r["n_pairs"], r["init"], r["seed"]) for r in rows) == sorted(
        (n, init, "1") for n in ("40", "80") for init in ("random", "mass_doc"))
    reference = root / "para" / "test.fr"

    def hypotheses(n_pairs, init):
        return work / "runs" / f"n{n_pairs}-{init}-seed1-en-fr" / "test.txt"

    for row in rows:
        assert row["direction"] == "en-fr"
        # the scores of the translations the run wrote, against the test set
        scores = bleu_chrf(hypotheses(row["n_pairs"], row["init"]), reference)
        assert (float(row["bleu"]), float(row["chrf"])) == tuple(map(float, scores))
        assert 0 < float(row["valid_nll"]) < 20
        # the valid BLEU of the kept checkpoint: the best of the run's validations
        log = (work / "runs" / f"n{row['n_pairs']}-{row['init']}-seed1-en-fr" /
               "finetune.log").read_text()
        found = re.findall(r"valid on 'valid' subset \|.* \| bleu ([\d.]+) ", log)
        assert float(row["valid_bleu"]) == max(map(float, found))
    pairs = read_csv(work / "bootstrap.csv")
    assert len(pairs) == 2 and {p["init"] for p in pairs} == {"mass_doc"}
    for pair in pairs:
        # the bootstrap of the MASS run's translations against the random run's
        baseline, system = (hypotheses(pair["n_pairs"], init) for init in ("random", pair["init"]))
        assert float(pair["p_value"]) == round(paired_p(reference, baseline, system), 4)
        assert abs(float(pair["delta"]) - (float(pair["bleu"]) - float(pair["random_bleu"]))) < 0.02
    png = (work / "low-resource.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "[4/4] n80-mass_doc-seed1-en-fr: BLEU" in first and "== 4 of 4 runs" in first
    assert first.count("== pre-training mass_doc") == 1  # once, before the runs need it


@pytest.mark.slow
def test_mass_runs_start_from_the_pretrained_checkpoint_and_random_ones_do_not(curve_run):
    _, work, _, _ = curve_run
    assert (work / "pretrain" / "doc" / "checkpoint_best.pt").exists()
    assert (work / "pretrain" / "doc" / "done").exists()
    for run in ("n40-mass_doc-seed1-en-fr", "n80-mass_doc-seed1-en-fr"):
        assert "loading pretrained model from" in (work / "runs" / run / "finetune.log").read_text()
    assert "loading pretrained model from" not in (
        work / "runs" / "n40-random-seed1-en-fr" / "finetune.log").read_text()
    # the first N pairs of the training set, N per size
    for n in (40, 80):
        assert len((work / "raw" / "para" / f"train.{n}.en").read_text().splitlines()) == n


@pytest.mark.slow
def test_the_preset_mask_ratio_reaches_the_pretraining_and_the_option_overrides_it(curve_run):
    _, work, _, _ = curve_run
    checkpoint = checkpoint_utils.load_checkpoint_to_cpu(
        str(work / "pretrain" / "doc" / "checkpoint_best.pt"))
    # SMALL sets no --mask-ratio: the cpu preset's whole sentence was pre-trained
    assert checkpoint["cfg"]["task"]["mask_ratio"] == 1.0
    assert json.loads((work / "config.json").read_text())["mask_ratio"] == 1.0
    required = ["--para-dir", "p"]
    assert curve.parse_args(required + ["--preset", "gpu"]).mask_ratio == 0.5
    assert curve.parse_args(required + ["--mask-ratio", "0.3"]).mask_ratio == 0.3


@pytest.mark.slow
def test_a_rerun_keeps_finished_runs_and_scores_an_added_test_set(curve_run):
    _, work, _, second = curve_run
    assert second.count("done before, kept") == 0  # each run had a test set to add
    assert "fine-tuning (log" not in second
    assert "pre-training" not in second
    extra = read_csv(work / "low-resource.set.csv")
    assert len(extra) == 4
    for run in (work / "runs").iterdir():
        result = json.loads((run / "result.json").read_text())
        assert set(result["scores"]) == {"test", "set"}
        hyps = (run / "test-set.txt").read_text().splitlines()
        assert len(hyps) == 20
    assert len(read_csv(work / "bootstrap.set.csv")) == 2


@pytest.mark.slow
def test_a_changed_setting_is_refused_in_the_same_work_dir(curve_run):
    root, work, _, _ = curve_run
    out = run_curve("--para-dir", root / "para", "--mono", f"doc={root / 'doc'}",
                    "--work-dir", work, "--lr", "0.5", check=False)
    assert "holds runs made with other settings" in out and "lr: 0.001 -> 0.5" in out


@pytest.mark.slow
def test_init_from_fine_tunes_a_checkpoint_pretrained_outside_the_curve(curve_run):
    root, shared_work, _, _ = curve_run
    work = root / "work-init-from"  # a copy: the other tests read the curve's CSV files
    shutil.copytree(shared_work, work)
    outside = root / "outside.pt"
    shutil.copy(work / "pretrain" / "doc" / "checkpoint_best.pt", outside)
    out = run_curve("--para-dir", root / "para", "--mono", f"doc={root / 'doc'}",
                    "--work-dir", work, "--init-from", f"mine={outside}",
                    "--inits", "random,mass_mine", "--sizes", "40")
    assert "pre-training" not in out and out.count("done before, kept") == 1
    log = (work / "runs" / "n40-mass_mine-seed1-en-fr" / "finetune.log").read_text()
    assert f"loading pretrained model from {outside}" in log
    rows = read_csv(work / "low-resource.csv")
    assert [r["init"] for r in rows] == ["random", "mass_mine"]
    assert [p["init"] for p in read_csv(work / "bootstrap.csv")] == ["mass_mine"]
    missing = run_curve("--para-dir", root / "para", "--mono", f"doc={root / 'doc'}",
                        "--work-dir", work, "--init-from", f"gone={root / 'gone.pt'}",
                        "--inits", "mass_gone", "--sizes", "40", check=False)
    assert f"--init-from gone={root / 'gone.pt'}: no such file" in missing


@pytest.mark.slow
def test_pretrain_only_reads_no_parallel_text(tmp_path):
    (tmp_path / "doc").mkdir()
    for lang in ("en", "fr"):
        write(tmp_path / "doc" / f"{lang}.txt", lines("mono", lang, 400))
    work = tmp_path / "work"
    out = run_curve("--para-dir", tmp_path / "no-such-dir", "--mono", f"doc={tmp_path / 'doc'}",
                    "--work-dir", work, "--pretrain-only")
    assert "== pre-training mass_doc" in out
    assert (work / "pretrain" / "doc" / "done").exists()
    assert (work / "pretrain" / "doc" / "checkpoint_best.pt").exists()
    assert (work / "bin" / "dict.txt").exists() and (work / "spm.model").exists()
    assert not (work / "runs").exists() and not list((work / "bin").glob("para-*"))


class FakeCurve:
    """Records what run_all asks for; the pre-training of ``broken`` fails."""

    def __init__(self, broken):
        self.broken, self.pretrained, self.ran = broken, [], []

    def pretrain(self, name):
        if name == self.broken:
            raise RuntimeError(f"pre-training {name} failed")
        self.pretrained.append(name)

    def run_one(self, run, index, total):
        if run.init == f"mass_{self.broken}":  # a retried pre-training would land here
            raise AssertionError(f"{run.name} started without its pre-trained model")
        self.ran.append((index, run.name))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failed_pretraining_skips_its_runs_and_the_others_go_on(jobs):
    args = curve.parse_args(["--para-dir", "p", "--mono", "web=w", "--mono", "doc=d",
                             "--sizes", "1000", "--seeds", "1", "--directions", "en-fr"])
    runs = curve.runs_of(args)
    fake = FakeCurve(broken="doc")
    failures = curve.run_all(fake, runs, jobs)
    assert fake.pretrained == ["web"]
    assert sorted(fake.ran) == [(1, "n1000-random-seed1-en-fr"), (2, "n1000-mass_web-seed1-en-fr")]
    assert sorted(failures) == ["mass_doc", "n1000-mass_doc-seed1-en-fr"]


def test_run_guarded_reports_what_it_catches_and_lets_the_rest_through(capsys):
    from projects.runner import run_guarded

    done = []

    def broken():
        raise ValueError("bad point")

    tasks = [("[1/2] ", "a", broken), ("[2/2] ", "b", lambda: done.append("b"))]
    assert run_guarded(tasks, 2, catch=Exception) == ["a"] and done == ["b"]
    err = capsys.readouterr().err
    assert "[1/2] a failed: Traceback" in err and "ValueError: bad point" in err
    with pytest.raises(ValueError):  # by default only RuntimeError is a failed run
        run_guarded(tasks[:1], 1)


def test_progress_lines_of_parallel_runs_never_run_into_each_other():
    from projects.runner import progress, run_guarded

    class SlowStream:  # gives the other threads a chance inside every write
        def __init__(self):
            self.parts = []

        def write(self, text):
            time.sleep(0.001)
            self.parts.append(text)

        def flush(self):
            pass

    stream = SlowStream()
    tasks = [("", str(t), lambda t=t: [progress(f"run {t} line {i}", stream) for i in range(30)])
             for t in range(4)]
    run_guarded(tasks, 4)
    lines = "".join(stream.parts).splitlines()
    assert sorted(lines) == sorted(f"run {t} line {i}" for t in range(4) for i in range(30))


@pytest.mark.slow
def test_bad_arguments_name_the_flag(tmp_path):
    with pytest.raises(SystemExit):
        curve.parse_args(["--para-dir", "p", "--mono", "web"])
    with pytest.raises(SystemExit):
        curve.parse_args(["--para-dir", "p", "--mono", "a=x", "--inits", "mass_b"])
    with pytest.raises(SystemExit):
        curve.parse_args(["--para-dir", "p", "--jobs", "0"])
    with pytest.raises(SystemExit):
        curve.parse_args(["--para-dir", "p", "--mono", "a=x", "--init-from", "a=y.pt"])
    out = run_curve("--para-dir", tmp_path, "--mono", f"web={tmp_path / 'none'}",
                    "--work-dir", tmp_path / "w", check=False)
    assert f"--mono web={tmp_path / 'none'}: no {tmp_path / 'none' / 'en.txt'}" in out


def test_runs_go_seed_by_seed_and_larger_sizes_get_one_seed():
    args = curve.parse_args(["--para-dir", "p", "--mono", "web=w", "--mono", "doc=d",
                             "--sizes", "1000,3000,10000", "--seeds", "1,2"])
    runs = curve.runs_of(args)
    assert len(runs) == (3 + 2) * 2 * 3
    assert [r.seed for r in runs] == [1] * 18 + [2] * 12
    assert {r.n_pairs for r in runs if r.seed == 2} == {1000, 3000}
    assert {r.init for r in runs} == {"random", "mass_web", "mass_doc"}


@pytest.mark.slow
def test_a_rerun_fills_the_valid_bleu_of_a_run_finished_without_it(curve_run):
    root, work, _, _ = curve_run
    path = work / "runs" / "n40-mass_doc-seed1-en-fr" / "result.json"
    result = json.loads(path.read_text())
    old = result.pop("valid_bleu")
    path.write_text(json.dumps(result))
    out = run_curve("--para-dir", root / "para", "--mono", f"doc={root / 'doc'}",
                    "--work-dir", work)
    assert out.count("done before, kept") == 4 and "fine-tuning (log" not in out
    assert json.loads(path.read_text())["valid_bleu"] == old


def test_the_valid_nll_is_the_one_of_the_best_validation(tmp_path):
    log = tmp_path / "finetune.log"
    write(log, ["| valid on 'valid' subset | loss 9.5 | nll_loss 9.1 | ppl 1 | bleu 1.2 | wps 9",
                "| valid on 'valid' subset | loss 7.25 | nll_loss 6.5 | ppl 1 | bleu 3.1 | wps 9",
                "| valid on 'valid' subset | loss 7.5 | nll_loss 6.4 | ppl 1 | bleu 4.05 | wps 9",
                "| valid on 'valid' subset | loss 7.25 | nll_loss 6.45 | ppl 1 | bleu 2 | wps 9"])
    # a tie goes to the later validation: fairseq saves checkpoint_best.pt then
    assert curve.best_validation(log, "loss") == {"valid_nll": 6.45, "valid_bleu": None}
    assert curve.best_validation(log, "bleu") == {"valid_nll": 6.4, "valid_bleu": 4.05}


@pytest.mark.slow
def test_checkpoints_are_kept_by_validation_bleu(curve_run):
    _, work, _, _ = curve_run
    log = (work / "runs" / "n40-random-seed1-en-fr" / "finetune.log").read_text()
    # every validation decodes the valid set; checkpoint_best.pt follows its BLEU
    assert len(re.findall(r"valid on 'valid' subset \|.* \| bleu [\d.]+ ", log)) == 2
    assert re.search(r"\| best_bleu [\d.]+", log)



@pytest.mark.slow
def test_a_directory_in_use_by_another_process_is_refused_naming_it(tmp_path):
    from projects.runner import exclusive

    holder = hold_elsewhere(tmp_path / "run")
    try:
        with pytest.raises(RuntimeError, match=rf"in use by another process \(pid {holder.pid}"):
            with exclusive(tmp_path / "run"):
                pass
        with exclusive(tmp_path / "other"):  # other directories are free
            pass
    finally:
        holder.kill()
        holder.wait()
    with exclusive(tmp_path / "run"):  # free once the holder is gone
        pass


@pytest.mark.slow
def test_a_command_that_outlives_its_driver_keeps_the_directory(tmp_path):
    from projects.runner import RecipeRunner, exclusive

    runner = RecipeRunner(tmp_path / "work")
    pid_file = tmp_path / "sleeper.pid"
    with exclusive(tmp_path / "run"):
        # a command whose child goes on after the command returns
        runner.run(["bash", "-c", f"sleep 60 & echo $! > {pid_file}"], tmp_path / "log", "x")
    sleeper = int(pid_file.read_text())
    try:
        with pytest.raises(RuntimeError, match="in use by another process"):
            with exclusive(tmp_path / "run"):
                pass
    finally:
        os.kill(sleeper, 9)
    deadline = time.time() + 10
    while True:  # the lock goes with the last process that holds it
        try:
            with exclusive(tmp_path / "run"):
                break
        except RuntimeError:
            assert time.time() < deadline
            time.sleep(0.1)


@pytest.mark.slow
def test_a_run_in_use_by_another_driver_fails_and_leaves_its_directory_alone(tmp_path, capsys):
    args = curve.parse_args(["--para-dir", str(tmp_path / "p"), "--sizes", "1000",
                             "--seeds", "1", "--directions", "en-fr", "--inits", "random",
                             "--work-dir", str(tmp_path / "w")])
    run = curve.runs_of(args)[0]
    rdir = tmp_path / "w" / "runs" / run.name
    holder = hold_elsewhere(rdir)
    try:
        failures = curve.run_all(curve.Curve(args), [run], 1)
    finally:
        holder.kill()
        holder.wait()
    assert failures == [run.name]
    assert f"in use by another process (pid {holder.pid}" in capsys.readouterr().err
    assert sorted(p.name for p in rdir.iterdir()) == [".lock"]
