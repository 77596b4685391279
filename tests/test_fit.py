"""``sim2real-eval fit`` (studies/fit.py): a GPS + IMU pair fitted by blocked cross-validation.

The synthetic-truth case: the reference generator (``reference.py``, a setup of our own) writes six short
ART-layout drives whose GPS and IMU are models with known parameters; ``fit`` (the real command, a small
budget) must recover them within the tolerances stated beside each assertion, its fitted pair's
held-out VEPD must lie within the judge-noise floor, and the presets it writes must be what the noise
nodes and sensors.launch.py take."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.studies import fit as fitmod
from sim2real_eval.yamlio import load_yaml

# The known truth (the GPS in the generator's ENU frame, the IMU in its own frame; σ of white terms)
GPS_WHITE, GPS_GM_STD, GPS_TAU = 0.05, 0.15, 5.0      # m, m (stationary), s
GPS_LATENCY, GPS_LATENCY_JITTER = 0.06, 0.02          # s: stamp lag, uniform ± jitter half-width
GPS_COVARIANCE = 0.3                                  # m, reported horizontal σ (HDOP held at 1)
ACCEL_SIGMA, GYRO_SIGMA = 0.3, 0.02                   # m/s², rad/s at 100 Hz
RUNS = 6

GPS_TRUTH = f"""
rate: 10.0
datum: [43.07236, -89.41189, 263.0]
status: fix
position_noise: {{model: gauss_markov, form: gz, sigma: [{GPS_WHITE}, {GPS_WHITE}, 0.1],
  bias_sigma: [{GPS_GM_STD * math.sqrt(2 / GPS_TAU)}, {GPS_GM_STD * math.sqrt(2 / GPS_TAU)}, 0.1],
  tau: {GPS_TAU}}}
covariance: {{model: diagonal, sigma: [{GPS_COVARIANCE}, {GPS_COVARIANCE}, 0.6], type: approximated}}
"""
IMU_TRUTH = f"""
rate: 100.0
frame_id: imu
accelerometer: {{model: chrono_drift, mean: [0.0, 0.0, 0.0],
  sigma: [{ACCEL_SIGMA}, {ACCEL_SIGMA}, {ACCEL_SIGMA}], b0: 0.01, t_b: 1.0}}
gyroscope: {{model: chrono_drift, mean: [0.0, 0.0, 0.0], sigma: [{GYRO_SIGMA}, {GYRO_SIGMA}, {GYRO_SIGMA}],
  b0: 0.0005, t_b: 1.0}}
"""
DRIVE = """
description: 1 s at rest, then 9 s at 4 m/s weaving (a stamp lag shows only while the velocity varies)
wheelbase: 0.5
rate: 200.0
start_time: 10.0
max_speed: 4.0
max_accel: 2.0
max_steer: 0.5
max_steer_rate: 1.0
speed_time_constant: 0.5
steer_time_constant: 0.2
initial: {x: 0.0, y: 0.0, yaw: 0.0}
phases:
  - {duration: 1.0, speed: 0.0}
  - {duration: 9.0, speed: 4.0, steer_amplitude: 0.3, steer_period: 6.0,
     steer_phase: 0.0}
variation: {speed_scale_sigma: 0.05, steer_scale_sigma: 0.1, speed_noise_sigma: 0.05,
  steer_noise_sigma: 0.005, noise_tau: 2.0}
"""


def write_truth_drives(folder: Path) -> Path:
    """Six synthetic runs with the known GPS and IMU above (reference generator, 50-Hz INS truth)."""
    from sim2real_eval import reference as ref

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gps_truth.yaml").write_text(GPS_TRUTH)
    (folder / "imu_truth.yaml").write_text(IMU_TRUTH)
    (folder / "drive.yaml").write_text(DRIVE)
    (folder / "setup.yaml").write_text(f"""
name: fit_truth
seed: 11
shipped_repeats: {RUNS}
scenarios: {{drive: drive.yaml}}
run_spacing: 60
gps: {{model: {folder}/gps_truth.yaml, hdop: {{mean: 1.0, sigma: 0.0}}, latency: {GPS_LATENCY},
  latency_jitter: {GPS_LATENCY_JITTER}}}
imu: {{model: {folder}/imu_truth.yaml}}
sbg: {{rate: 50.0, velocity_sigma: 0.002, position_sigma: 0.002}}
""")
    setup = ref.load_setup(folder / "setup.yaml")
    for k in range(RUNS):
        ref.write_reference_run(setup, folder / "runs", "drive", k)
    return folder / "runs"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """``sim2real-eval fit`` on the synthetic drives: (out folder, fit.yaml)."""
    root = tmp_path_factory.mktemp("fit")
    runs = write_truth_drives(root / "truth")
    out = root / "out"
    code = main(["fit", str(runs), "--config", "demo.yaml", "--budget", "6", "--seeds", "2",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    return out, load_yaml(out / "fit.yaml")


def _param(record: dict, name: str) -> dict:
    return next(row for row in record["parameters"] if row["name"] == name)


@pytest.mark.slow  # the module's fit: ~20 s once
def test_fit_recovers_the_known_gps_and_imu_parameters(fitted):
    """Tolerances, each from what the fit windows (3 runs of 10 s, 100 Hz IMU, 10 Hz GPS) can tell:

    - reported covariance σ: read from the messages, 1 %;
    - stamp jitter half-width: √3·std of ~290 stamp residuals (uniform), relative SE ≈ 4 %: 20 %;
    - stamp lag: calibrate's own standard error at 4 m/s weaving is a few ms: 15 ms;
    - accelerometer white σ: Allan noise density from 3000 samples, white dominant: 20 %;
    - GPS horizontal error std √(white² + GM²): over 30 s of a τ = 5 s process there are N_eff ≈ 3
      independent stretches (relative SE of a std ≈ 1/√(2·N_eff) ≈ 40 %): 50 %;
    - GM τ: a 10-s record with its mean removed decorrelates faster than e^(−t/τ) (finite-record bias
      towards short τ): within a factor 3;
    - gyroscope white σ: the IMU − truth residual also holds the error of the truth's differentiated
      angular rate (calibrate.drive says so): at least the true σ and below 2.5 × it.
    """
    _out, record = fitted
    value = {row["name"]: row["fitted"] for row in record["parameters"]}
    assert value["gps_covariance_sigma_h"] == pytest.approx(GPS_COVARIANCE, rel=0.01)
    assert value["gps_stamp_jitter"] == pytest.approx(GPS_LATENCY_JITTER, rel=0.2)
    assert abs(value["gps_stamp_lag"] - GPS_LATENCY) < 0.015
    assert value["imu_accel_sigma_xy"] == pytest.approx(ACCEL_SIGMA, rel=0.2)
    horizontal = math.hypot(value["gps_white_sigma_h"], value["gps_gm_sigma_h"])
    assert horizontal == pytest.approx(math.hypot(GPS_WHITE, GPS_GM_STD), rel=0.5)
    assert GPS_TAU / 3 < value["gps_gm_tau"] < GPS_TAU * 3
    assert GYRO_SIGMA <= value["imu_gyro_sigma"] < 2.5 * GYRO_SIGMA
    for name in ("gps_covariance_sigma_h", "gps_stamp_jitter", "gps_stamp_lag", "imu_accel_sigma_xy"):
        assert _param(record, name)["identified"], name  # the folds agree on what the data pins down


@pytest.mark.slow  # the module's fit: ~20 s once
def test_fitted_pair_is_within_the_judge_noise_floor_on_held_out_runs(fitted):
    """Every run judged with the pair fitted without it: its VEPD is not above the floor's upper end."""
    _out, record = fitted
    pooled = record["held_out_pooled"]
    assert pooled["k"] == RUNS
    low, high = pooled["floor"]["interval"]
    assert low <= pooled["variants"]["fitted"]["VEPD"] <= high
    # and below every preset of the demo file's GPS study on the same runs (fitted − preset < 0)
    presets = [name for name in pooled["variants"] if name not in ("fitted", "calibrated")]
    assert len(presets) == 5 and all(pooled["variants"][name]["fitted_minus"] < 0 for name in presets)


@pytest.mark.slow  # the module's fit: ~20 s once
def test_the_record_holds_folds_budget_seed_and_the_identification_rule(fitted):
    out, record = fitted
    provenance = record["provenance"]
    assert provenance["budget_per_fold"] == 6 and provenance["seeds_per_trial"] == 2
    assert provenance["sampler_seed"] == 0 and len(provenance["runs"]) == RUNS
    folds = provenance["folds"]
    assert [len(f["validation"]) for f in folds] == [3, 3]
    assert all(not set(f["fit"]) & set(f["validation"]) for f in folds)  # no run both fits and validates
    assert sorted(r for f in folds for r in f["validation"]) == sorted(provenance["runs"])
    assert "0.15" in record["identification_rule"]
    assert {row["name"] for row in record["parameters"]} == set(fitmod.PARAMS)
    rows = (out / "trials.csv").read_text().splitlines()
    # two folds and the final search on every run, each: the start row and 6 trials (the budget, also
    # the number of enqueued points: the calibrated start and demo.yaml's five presets)
    assert rows[0].startswith("fold,trial,state,vepd") and len(rows) == 1 + 3 * (1 + 6)
    marker = load_yaml(out / ".sim2real-eval.json")
    assert marker["command"] == "fit" and set(marker["files"]) == set(fitmod.OUTPUT_FILES)


@pytest.mark.slow  # the module's fit: ~20 s once
def test_the_fitted_presets_are_what_the_noise_nodes_and_sensors_launch_take(fitted):
    """gps_noise_node / imu_noise_node load fit_gps.yaml / fit_imu.yaml as they are (their own config
    loader, through sensors.launch.py's plan), and the models sample a trajectory."""
    from sim2real_eval import scenarios
    from sim2real_eval.node import launch_plan
    from sim2real_eval.node.params import parse_noise_node_params

    out, record = fitted
    gps_file, imu_file = out / "fit_gps.yaml", out / "fit_imu.yaml"
    assert gps_file.read_text().startswith("# Fitted by sim2real-eval fit")
    nodes = launch_plan.sensors_plan({"gps_model": str(gps_file), "imu_model": str(imu_file),
                                      "use_sim_time": "false"})
    data, source, _name = scenarios.load_scenario("line")
    truth = scenarios.simulate(data, source, np.random.SeedSequence(0))
    for node, sensor in zip(nodes, ("gps", "imu")):
        config = parse_noise_node_params(sensor, node.parameters[0])
        model = config.load_model()
        assert len(model.sample(truth).stamp_ns) > 100
    gps = load_yaml(gps_file)
    assert gps["position_noise"]["tau"] == pytest.approx(_param(record, "gps_gm_tau")["fitted"])
    assert "sim2real-eval fit" in gps["description"] and "blocked folds" in gps["description"]


# ------------------------------------------------------------------------------------ units
def test_blocked_folds_by_hand():
    assert fitmod.blocked_folds(5, 2) == [([3, 4], [0, 1, 2]), ([0, 1, 2], [3, 4])]
    assert fitmod.blocked_folds(6, 3) == [([2, 3, 4, 5], [0, 1]), ([0, 1, 4, 5], [2, 3]),
                                          ([0, 1, 2, 3], [4, 5])]
    with pytest.raises(UserError, match="cannot make 3 blocked folds"):
        fitmod.blocked_folds(5, 3)
    with pytest.raises(UserError, match="--folds must be >= 2"):
        fitmod.blocked_folds(5, 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(0, 20))
def test_blocked_folds_partition_the_runs_into_contiguous_blocks(folds, extra):
    n = 2 * folds + extra
    plan = fitmod.blocked_folds(n, folds)
    blocks = [val for _fit, val in plan]
    assert sorted(i for b in blocks for i in b) == list(range(n))  # each run validates exactly once
    for fit_idx, val in plan:
        assert val == list(range(val[0], val[-1] + 1)) and len(val) >= 2  # contiguous, two runs a side
        assert sorted(fit_idx + val) == list(range(n)) and not set(fit_idx) & set(val)
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1


def test_spans():
    assert fitmod._spans([0, 1, 2, 5, 6, 8]) == "0–2, 5–6, 8"


def test_range_position_and_the_gz_stationary_std_by_hand():
    p = fitmod.FitParam("x", "m", 0.1, 0.01, 1.0, True)
    assert p.position(0.1) == pytest.approx(0.5)  # log10: −2 … 0, −1 in the middle
    assert fitmod.FitParam("y", "s", 0.1, 0.0, 0.4, False).position(0.1) == pytest.approx(0.25)
    start = fitmod.FitStart(
        gps={"rate": 10.0, "stamp_lag": 0.0, "stamp_jitter": 0.0, "covariance": {"model": "zeros"},
             "position_noise": {"model": "gauss_markov", "form": "gz", "offset": [0, 0, 0],
                                "sigma": [0, 0, 0.2], "bias_sigma": [0, 0, 0], "tau": 1.0,
                                "initial_bias": "stationary"}},
        imu={"accelerometer": {"sigma": [0.1, 0.1, 0.3], "mean": [0, 0.1, 0.2], "b0": 0, "t_b": 1},
             "gyroscope": {"sigma": [0.01] * 3, "mean": [0.01, 0.02, 0], "b0": 0, "t_b": 1}},
        params=tuple(fitmod.FitParam(n, "", 1.0, 0.1, 10.0, True) for n in fitmod.PARAMS),
        vertical_gm_sigma=0.5, covariance_ratio=2.0)
    pair = fitmod.build_pair(start, {"gps_gm_sigma_h": 0.4, "gps_gm_tau": 8.0, "gps_covariance_sigma_h": 0.3,
                                     "imu_gyro_bias_z": 0.005, "imu_accel_bias_x": -0.1})
    noise = pair["gps"]["position_noise"]
    # gz: stationary std = bias_sigma·√(τ/2) → bias_sigma = 0.4·√(2/8) = 0.2; vertical 0.5·0.5 = 0.25
    assert noise["bias_sigma"] == pytest.approx([0.2, 0.2, 0.25]) and noise["tau"] == 8.0
    assert noise["sigma"] == [1.0, 1.0, 0.2]  # vertical white kept
    assert pair["gps"]["covariance"]["sigma"] == pytest.approx([0.3, 0.3, 0.6])
    assert pair["imu"]["accelerometer"]["mean"] == [-0.1, 0.1, 0.2]
    assert pair["imu"]["gyroscope"]["mean"] == [0.01, 0.02, 0.005]
    assert pair["imu"]["accelerometer"]["sigma"] == [1.0, 1.0, 0.3]


class _Fold:
    def __init__(self, values, params):
        self.values = values
        self.start = type("S", (), {"params": params})()


def test_identification_rule_by_hand():
    """Spread = (max − min) of the fold values as a fraction of the range (log10 on log ranges)."""
    params = tuple(fitmod.FitParam(n, "", 1.0, 0.01, 100.0, True) for n in fitmod.PARAMS)  # 4 decades
    agree = {n: 1.0 for n in fitmod.PARAMS}
    apart = dict(agree, gps_gm_tau=10.0)   # one decade of four: spread 0.25 > 0.15
    close = dict(agree, imu_t_b=2.0)       # log10(2)/4 = 0.075
    rows, fitted = fitmod.summarise_parameters([_Fold(apart, params), _Fold(close, params)])
    by = {r["name"]: r for r in rows}
    assert by["gps_gm_tau"]["spread_of_range"] == pytest.approx(0.25) and not by["gps_gm_tau"]["identified"]
    assert by["imu_t_b"]["spread_of_range"] == pytest.approx(math.log10(2) / 4)
    assert by["imu_t_b"]["identified"]
    assert fitted["gps_gm_tau"] == pytest.approx(math.sqrt(10.0))  # geometric median of two
    assert np.isclose(fitted["gps_white_sigma_h"], 1.0)


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("extra, message", [
    (["--folds", "1"], "--folds must be >= 2, got 1"),
    (["--budget", "0"], "--budget must be >= 1, got 0"),
    (["--seeds", "0"], "--seeds must be >= 1, got 0"),
    (["--runs", "x:y"], "--runs 'x:y': expected A:B"),
    (["--runs", "9:12"], "--runs 9:12: selects none of the"),
    (["--folds", "4"], "runs cannot make 4 blocked folds"),
    (["--config", "nope.yaml"], "--config nope.yaml: file not found"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message):
    runs = tmp_path / "drive" / "highway"
    for k in range(6):  # bags by name only: every check here fails before one is read
        bag = runs / f"run_{k:02d}"
        bag.mkdir(parents=True)
        (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    out = tmp_path / "out"
    code = main(["fit", str(tmp_path / "drive"), "--out", str(out), "--no-progress", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("sim2real-eval fit: error: ")
    assert message in err[0]
    assert not out.exists()


def test_missing_drive_and_occupied_out(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "absent"), "--out", str(tmp_path / "o")]) == 2
    assert "no such bag" in capsys.readouterr().err
    occupied = tmp_path / "mine"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("keep")
    (tmp_path / "drive").mkdir()
    assert main(["fit", str(tmp_path / "drive"), "--out", str(occupied)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an output of sim2real-eval fit" in err and (occupied / "notes.txt").read_text() == "keep"
    assert main(["fit", str(tmp_path / "drive"), "--out", str(tmp_path / "drive" / "o")]) == 2  # inside DRIVE
    assert "an output must not overlap an input" in capsys.readouterr().err


@pytest.mark.slow  # the module's fit: ~20 s once
def test_the_start_and_every_preset_are_the_first_trials_of_each_search(fitted):
    """Trials 0 … 5 of every search are the calibrated start and demo.yaml's GPS study's presets, in that
    order, so the search cannot end worse than any of them on its fit runs."""
    import csv

    out, record = fitted
    presets = list(load_yaml(Path(__file__).resolve().parents[1] / "config" / "studies" / "demo.yaml")
                   ["gps_study"]["gps"])
    assert record["initial_trials"] == ["calibrated", *presets]
    rows = list(csv.DictReader((out / "trials.csv").read_text().splitlines()))
    for label in ("1", "2", "all"):
        mine = [r for r in rows if r["fold"] == label]
        start, trials = mine[0], sorted(mine[1:], key=lambda r: int(r["trial"]))
        assert [r["enqueued"] for r in trials] == ["calibrated", *presets]
        assert all(trials[0][n] == start[n] for n in fitmod.PARAMS)  # trial 0 is the calibrated start
        best = min(float(r["vepd"]) for r in trials if r["vepd"])
        search = record["refit"]["search"] if label == "all" else record["folds"][int(label) - 1]["search"]
        assert search["best_vepd"] <= best + 1e-12  # never worse than the start or a preset


@pytest.mark.slow  # the module's fit: ~20 s once
def test_the_fitted_pair_is_the_refit_on_every_run_and_its_shortfall_is_written(fitted):
    out, record = fitted
    assert record["refit"]["fit_runs"] == record["provenance"]["runs"]
    for row in record["parameters"]:
        assert row["fitted"] == record["refit"]["values"][row["name"]]
    assert "final" in record["design"] and "estimates the held-out VEPD" in record["design"]
    gap = record["shortfall"]
    assert gap["vepd"]["variant"] == "fitted"
    assert gap["vepd"]["VEPD"] == pytest.approx(record["held_out_pooled"]["variants"]["fitted"]["VEPD"])
    assert set(gap["gps"]) == {"east", "north", "up"} and (out / "shortfall.png").stat().st_size > 10_000
    heading = "## Why the model falls short: fitted GPS + fitted IMU"
    assert (out / "shortfall.md").read_text().startswith(heading)


@pytest.mark.slow  # a second fit, 4 runs, budget 1: ~30 s
def test_runs_outside_runs_are_never_read(tmp_path):
    """--runs 0:4 (the demo's held-out windows are passed the same way): runs 4 and 5 appear nowhere —
    not in a fold, not in the final search, not in the shortfall."""
    runs = write_truth_drives(tmp_path / "truth")
    out = tmp_path / "out"
    assert main(["fit", str(runs), "--config", "demo.yaml", "--runs", "0:4", "--budget", "1", "--seeds", "1",
                 "--out", str(out), "--no-progress"]) == 0
    record = load_yaml(out / "fit.yaml")
    assert [Path(r).name for r in record["refit"]["fit_runs"]] == [f"run_{k:02d}" for k in range(4)]
    text = "".join((out / name).read_text() for name in ("fit.yaml", "trials.csv", "shortfall.json"))
    assert "run_04" not in text and "run_05" not in text and "run_03" in text


# ------------------------------------------------------------------------------------ presets as points
def test_white_plus_markov_recovers_a_known_process():
    """White σ 0.1 plus a first-order Gauss–Markov part (stationary σ 0.2, φ = 0.9 at dt 0.1 s: τ 0.949 s),
    200 000 samples: the lag-0…2 autocovariances give each within a few %."""
    rng = np.random.default_rng(3)
    n, phi, g, w = 200_000, 0.9, 0.2, 0.1
    drive = rng.normal(0.0, g * math.sqrt(1 - phi**2), (n, 2))
    markov = np.zeros((n, 2))
    markov[0] = rng.normal(0.0, g, 2)
    for k in range(1, n):
        markov[k] = phi * markov[k - 1] + drive[k]
    white, gm, tau = fitmod._white_plus_markov(markov + rng.normal(0.0, w, (n, 2)), 0.1)
    assert white == pytest.approx(w, rel=0.06) and gm == pytest.approx(g, rel=0.03)
    assert tau == pytest.approx(-0.1 / math.log(phi), rel=0.05)
    white, gm, tau = fitmod._white_plus_markov(rng.normal(0.0, 0.3, (5000, 2)), 0.1)
    assert white == pytest.approx(0.3, rel=0.05) and gm is None and tau is None


def _start():
    params = tuple(fitmod.FitParam(n, "", "diagonal", 0.0, 1.0, False, fitmod.COVARIANCE_MODELS)
                   if n == "gps_covariance_model"
                   else fitmod.FitParam(n, "", 0.5, 0.1, 1.0, n != "gps_stamp_lag") for n in fitmod.PARAMS)
    return fitmod.FitStart({}, {}, params, 0.1, 2.0)


def test_presets_map_into_the_searched_families():
    """car_gauss: white 0.15 m, no Gauss–Markov part, zero covariance; car_airsim: no error, reported σ
    epe·H∞ = 3.0·0.85 m; car_mems as it is."""
    start = _start()
    gauss = fitmod.preset_point("car_gauss", "car_mems", start)
    assert gauss["gps_white_sigma_h"] == pytest.approx(0.15, rel=0.02)
    assert gauss["gps_gm_sigma_h"] == fitmod.NONE_SIGMA and gauss["gps_covariance_model"] == "zeros"
    assert gauss["gps_stamp_lag"] == 0.0 and gauss["gps_stamp_jitter"] == 0.0
    assert gauss["imu_accel_sigma_xy"] == 0.0177 and gauss["imu_gyro_sigma"] == 0.0012
    assert gauss["imu_accel_b0"] == 0.003 and gauss["imu_t_b"] == 10.0 and gauss["imu_accel_bias_x"] == 0.0
    airsim = fitmod.preset_point("car_airsim", "car_mems", start)
    assert airsim["gps_white_sigma_h"] == fitmod.NONE_SIGMA == airsim["gps_gm_sigma_h"]
    assert airsim["gps_covariance_model"] == "diagonal"
    assert airsim["gps_covariance_sigma_h"] == pytest.approx(3.0 * 0.85)
    wide = fitmod.with_points(start, [gauss, airsim])
    by = {p.name: p for p in wide.params}
    assert by["gps_covariance_sigma_h"].high == pytest.approx(2.55) and by["gps_white_sigma_h"].low == 1e-3
    assert by["imu_accel_sigma_xy"].low == 0.0177 and by["imu_t_b"].high == 10.0
    assert by["gps_stamp_lag"].low == 0.0  # linear: widened to the presets' 0
    assert fitmod.clipped(start, gauss)["imu_t_b"] == 1.0  # inside the narrower range
    pair = fitmod.build_pair(_full_start(), gauss)
    assert pair["gps"]["covariance"] == {"model": "zeros"}


def _full_start():
    gps = {"rate": 10.0, "stamp_lag": 0.0, "stamp_jitter": 0.0, "covariance": {"model": "zeros"},
           "position_noise": {"model": "gauss_markov", "form": "gz", "offset": [0, 0, 0],
                              "sigma": [0, 0, 0.2], "bias_sigma": [0, 0, 0], "tau": 1.0,
                              "initial_bias": "stationary"}}
    imu = {"accelerometer": {"sigma": [0.1, 0.1, 0.3], "mean": [0, 0.1, 0.2], "b0": 0, "t_b": 1},
           "gyroscope": {"sigma": [0.01] * 3, "mean": [0.01, 0.02, 0], "b0": 0, "t_b": 1}}
    return dataclasses.replace(_start(), gps=gps, imu=imu)


def test_a_categorical_parameter_in_the_identification_rule():
    params = _start().params
    values = {p.name: p.start for p in params}
    rows, fitted = fitmod.summarise_parameters([_Fold(values, params),
                                                _Fold(dict(values, gps_covariance_model="zeros"), params)])
    row = next(r for r in rows if r["name"] == "gps_covariance_model")
    assert row["spread_of_range"] == 1.0 and not row["identified"] and row["scale"] == "categorical"
    assert fitted["gps_covariance_model"] == "diagonal"  # a tie: the first fold's
