"""The scorer's time window (issue 12, part 3): identical ground truth always gives an identical S_gt,
whatever the estimate; windows from run.yaml, a manifest entry, ``--window``, else the truth's span."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml
from test_score_bags import FAST, T0_NS, write_run_bag

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.metrics import ScoreOptions, score_run
from sim2real_eval.metrics.inputs import RunSpec, parse_window, series_from_arrays

GT_NS = T0_NS + np.arange(0, 400) * 20_000_000  # 8 s of truth at 50 Hz


def truth_speed(t):
    return 1.4 * (1 - np.exp(-t)) + 0.3 * np.sin(1.3 * t)


def run_with_estimate(rng, start_s, stop_s, noise=0.05):
    """Identical truth; an estimate at ~35 Hz from ``start_s`` to ``stop_s`` (relative to the truth start)."""
    est_ns = T0_NS + np.arange(int(start_s * 1e9), int(stop_s * 1e9), 28_571_429)
    te = (est_ns - T0_NS) * 1e-9
    speed = truth_speed(te) + noise * rng.standard_normal(len(te))
    est_vel = np.stack([speed, 0 * te, 0 * te], axis=1)
    gt_t = (GT_NS - T0_NS) * 1e-9
    gt_vel = np.stack([truth_speed(gt_t), 0 * gt_t, 0 * gt_t], axis=1)
    return est_ns, est_vel, GT_NS, gt_vel


# Estimates like ROS recordings of one bag: starting before the truth (with the bag), at it, after it;
# ending after or shortly before it.
ESTIMATE_SPANS = [(-0.3, 8.2), (0.0, 8.0), (0.05, 7.99), (-0.12, 7.7), (0.2, 8.3), (-0.5, 7.95)]


@pytest.fixture(scope="module")
def manifest_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("window")
    rng = np.random.default_rng(5)
    entries, runs = [], {}
    for side, variant in (("real", "real"), ("sim", "v")):
        for k, (start, stop) in enumerate(ESTIMATE_SPANS):
            run = run_with_estimate(rng, start, stop)
            path = root / f"{side}_{k}"
            write_run_bag(path, run)
            entries.append({"path": path.name, "side": side, "variant": variant, "scenario": "line", "k": k})
            runs[(side, k)] = run
    manifest = root / "runs.yaml"
    manifest.write_text(yaml.safe_dump({"runs": entries}))
    return manifest, runs


def scored_rows(manifest, out, *extra):
    assert main(["score", "--manifest", str(manifest), "--out", str(out), *FAST, *extra]) == 0
    return list(csv.DictReader(open(out / "runs.csv")))


def test_identical_truth_gives_identical_s_gt(manifest_runs, tmp_path):
    manifest, runs = manifest_runs
    rows = scored_rows(manifest, tmp_path / "rep")
    assert len(rows) == 2 * len(ESTIMATE_SPANS)
    assert len({row["S_gt"] for row in rows}) == 1  # bit for bit, every run
    # The former origin (the earliest stamp of either series) moved with the estimate's start, and
    # the timeline's end with its end: the same truth then gave different S_gt.
    old = set()
    for est_ns, est_vel, gt_ns, gt_vel in runs.values():
        origin = min(est_ns[0], gt_ns[0])
        old.add(score_run("x", (est_ns - origin) * 1e-9, est_vel[:, 0], (gt_ns - origin) * 1e-9, gt_vel[:, 0],
                          ScoreOptions()).S_gt)
    assert len(old) > 1


def test_scores_are_computed_on_the_window(manifest_runs):
    _manifest, runs = manifest_runs
    est_ns, est_vel, gt_ns, gt_vel = runs[("real", 0)]
    spec = RunSpec("real", "real", "line", 0, "x", "bag")
    arrays = {"/odometry/filtered": (est_ns, est_vel, np.empty((0, 4))),
              "/ground_truth/odom": (gt_ns, gt_vel, np.empty((0, 4)))}
    series = series_from_arrays(spec, arrays)
    inside = (est_ns >= gt_ns[0]) & (est_ns <= gt_ns[-1])
    assert np.array_equal(series.t_est, (est_ns[inside] - gt_ns[0]) * 1e-9)  # cropped, origin = truth start
    assert series.t_gt[0] == 0.0 and series.timeline_end == series.t_gt[-1]
    # An explicit window moves the origin and crops both series.
    window = (int(gt_ns[50]), int(gt_ns[300]))
    series = series_from_arrays(RunSpec("real", "real", "line", 0, "x", "bag", window_ns=window), arrays)
    assert series.t_gt[0] == 0.0 and len(series.t_gt) == 251
    assert series.t_est[0] >= 0 and series.t_est[-1] <= series.timeline_end + 1e-12


def test_window_from_the_command_line_and_the_manifest(manifest_runs, tmp_path):
    manifest, runs = manifest_runs
    window = f"{GT_NS[25]}:{GT_NS[375]}"
    rows = scored_rows(manifest, tmp_path / "a", "--window", window)
    assert len({row["S_gt"] for row in rows}) == 1
    data = yaml.safe_load(manifest.read_text())
    for entry in data["runs"]:
        entry["window_ns"] = [int(GT_NS[25]), int(GT_NS[375])]
    (manifest.parent / "windowed.yaml").write_text(yaml.safe_dump(data))
    assert scored_rows(manifest.parent / "windowed.yaml", tmp_path / "b") == rows
    assert rows != scored_rows(manifest, tmp_path / "c")  # another window, other numbers


def test_run_yaml_window_is_used(tmp_path):
    rng = np.random.default_rng(2)
    root = tmp_path / "OUT"
    window = [int(GT_NS[10]), int(GT_NS[390])]
    for side, variant in (("real", "real"), ("sim", "v")):
        for k in range(2):
            info = {"side": side, "variant": variant, "scenario": "line", "k": k, "window_ns": window}
            run = run_with_estimate(rng, -0.2, 8.1)
            write_run_bag(root / side / variant / "line" / str(k), run, run_yaml=info)
    rows = scored_dir(root, tmp_path / "rep")
    assert len({row["S_gt"] for row in rows}) == 1
    assert scored_dir(root, tmp_path / "rep2", "--window", f"{GT_NS[0]}:{GT_NS[-1]}") == rows  # recorded wins


def scored_dir(root, out, *extra):
    assert main(["score", str(root), "--out", str(out), *FAST, *extra]) == 0
    return list(csv.DictReader(open(out / "runs.csv")))


@pytest.mark.parametrize("text", ["5", "5:", "x:9", "9:5", "-1:5"])
def test_bad_window_is_a_one_line_error(text, manifest_runs, tmp_path, capsys):
    manifest, _runs = manifest_runs
    assert main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "r"), f"--window={text}"]) == 2
    err = capsys.readouterr().err
    assert "--window" in err and "START:END" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
    with pytest.raises(UserError, match="START:END"):
        parse_window(text)


def test_estimate_outside_the_window_or_stopping_early_is_a_run_defect():
    rng = np.random.default_rng(3)
    spec = RunSpec("real", "real", "line", 0, "x", "bag", window_ns=(int(GT_NS[0]), int(GT_NS[-1])))
    est_ns, est_vel, gt_ns, gt_vel = run_with_estimate(rng, 9.0, 10.0)
    arrays = {"/odometry/filtered": (est_ns, est_vel, np.empty((0, 4))),
              "/ground_truth/odom": (gt_ns, gt_vel, np.empty((0, 4)))}
    with pytest.raises(UserError, match="no message inside the run's window"):
        series_from_arrays(spec, arrays)
    est_ns, est_vel, gt_ns, gt_vel = run_with_estimate(rng, 0.0, 5.0)
    arrays["/odometry/filtered"] = (est_ns, est_vel, np.empty((0, 4)))
    series = series_from_arrays(spec, arrays)
    with pytest.raises(UserError, match="the estimate stops 3.0.. s before the ground truth"):
        score_run("x", series.t_est, series.v_est, series.t_gt, series.v_gt, ScoreOptions(),
                  series.timeline_end)
