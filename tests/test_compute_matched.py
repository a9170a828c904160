"""The objectives at equal pre-training time (projects/paper_analysis/compute_matched.py)
without training: the cost per update read from fairseq's log, the timing's
order and resumption, the budget and the report."""

import csv
import json
import re
from types import SimpleNamespace

import pytest

from projects.paper_analysis import analysis, compute_matched

# seconds per update of each objective in the fake trainings
COST = {"mass_r0.50": 0.5, "mass_r1.00": 0.8, "whole_r0.50": 0.9, "dae": 1.0}


def fake_log(path, cost, updates=200, start=7.0):
    """A fairseq-train log whose training lines advance ``cost`` s an update."""
    lines = [f"epoch 001:  {n} / 120 loss=9.1, num_updates={n}, lr=0.0001, train_wall=1, "
             f"wall={start + cost * n:.0f}" for n in range(25, updates + 1, 25)]
    path.write_text("$ fairseq-train ...\n" + "\n".join(lines) + "\ndone training\n")


def test_seconds_per_update_runs_from_the_line_at_update_25_to_the_last(tmp_path):
    log = tmp_path / "pretrain.log"
    fake_log(log, 1.4)
    assert compute_matched.seconds_per_update(log) == pytest.approx(1.4, abs=0.01)
    log.write_text("num_updates=10, wall=5\nnum_updates=25, wall=40\n")
    with pytest.raises(ValueError, match="fewer than two training log lines"):
        compute_matched.seconds_per_update(log)


@pytest.fixture
def study(tmp_path, monkeypatch):
    """The study's options and points, with pre-training faked: each call
    writes a log at its objective's COST and is recorded."""
    args = compute_matched.parse_args(["--work-dir", str(tmp_path), "--timing-rounds", "2"])
    points = analysis.points_of(analysis.parse_args(compute_matched.POINT_ARGS))
    calls = []

    def pretrain(runner, point, pdir):
        calls.append((point.name, runner.args.pretrain_updates, pdir.parent.name))
        (pdir / "pretrain").mkdir(parents=True)
        fake_log(pdir / "pretrain.log", COST[point.name])
        (pdir / "pretrain" / "done").touch()

    monkeypatch.setattr(compute_matched, "pretrain_point", pretrain)
    runner = SimpleNamespace(args=SimpleNamespace(pretrain_updates=1200))
    return args, runner, points, calls


def test_timing_takes_the_objectives_in_turn_rotated_and_keeps_finished_trainings(study):
    args, runner, points, calls = study
    assert [p.name for p in points] == list(compute_matched.POINTS)
    rows = compute_matched.timing(args, runner, points)
    names = [name for name, _, _ in calls]
    assert names == ["mass_r0.50", "mass_r1.00", "whole_r0.50", "dae",
                     "mass_r1.00", "whole_r0.50", "dae", "mass_r0.50"]
    assert {updates for _, updates, _ in calls} == {200} and runner.args.pretrain_updates == 1200
    assert [(r["round"], r["position"], r["point"]) for r in rows][4] == (2, 1, "mass_r1.00")
    calls.clear()
    assert compute_matched.timing(args, runner, points) == rows and calls == []  # kept
    timed = compute_matched.Path(args.work_dir).resolve() / "timing"
    (timed / "round2" / "dae" / "pretrain" / "done").unlink()
    compute_matched.timing(args, runner, points)  # an unfinished training starts again
    assert calls == [("dae", 200, "round2")]


def test_the_budget_gives_each_objective_the_updates_of_denoisings_time(study, capsys):
    args, runner, points, _ = study
    cost = compute_matched.write_timing(compute_matched.Path(args.work_dir),
                                        compute_matched.timing(args, runner, points))
    assert cost["dae"] == pytest.approx(1.0, abs=0.01)
    updates = compute_matched.budget(args, cost)
    # 1,200 updates of denoising's time: about 1,200 x 1.0 / 0.5 updates of MASS 50%
    assert updates["dae"] == 1200 and 2350 <= updates["mass_r0.50"] <= 2450
    assert updates["mass_r0.50"] > updates["mass_r1.00"] > updates["whole_r0.50"] > 1200
    printed = capsys.readouterr().out
    assert re.search(r"^dae\s+1\.0\d*\s+1\.0\d*\s+1\.0\d*$", printed, re.M), printed
    # written once: a resumed command keeps the runs' updates whatever it times
    assert compute_matched.budget(args, {p: 1.0 for p in compute_matched.POINTS}) == updates
    saved = json.loads((compute_matched.Path(args.work_dir) / "budget.json").read_text())
    assert saved["updates"] == updates and saved["budget_point"] == "dae"


def test_the_report_gives_each_objectives_updates_mean_and_range(tmp_path, capsys):
    updates = {"mass_r0.50": 2400, "mass_r1.00": 1500, "whole_r0.50": 1333, "dae": 1200}
    (tmp_path / "budget.json").write_text(json.dumps({"updates": updates}))
    for seed, bleu in ((1, 14.0), (2, 15.0)):
        pdir = tmp_path / f"s{seed}" / "points" / "mass_r0.50"
        pdir.mkdir(parents=True)
        (pdir / "result.json").write_text(json.dumps(dict(
            bleu=bleu, chrf=40.0, finetune_valid_ppl=20.0, pretrain_seconds=1000)))
    compute_matched.main(["--report-only", "--seeds", "1,2", "--work-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    assert re.search(r"^mass_r0\.50\s+2400\s+2\s+14\.50 \(14\.00 to 15\.00\)", printed, re.M)
    assert "dae " not in printed  # no run, no row
    rows = list(csv.DictReader((tmp_path / "compute-matched.csv").open()))
    assert [(r["seed"], r["pretrain_updates"]) for r in rows] == [("1", "2400"), ("2", "2400")]


def test_report_only_before_any_run_says_what_to_do(tmp_path):
    with pytest.raises(SystemExit, match="run the command without --report-only first"):
        compute_matched.main(["--report-only", "--work-dir", str(tmp_path)])
    with pytest.raises(SystemExit):
        compute_matched.parse_args(["--timing-updates", "20"])
