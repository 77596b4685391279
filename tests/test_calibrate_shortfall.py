"""Why a model falls short (calibrate/shortfall_stats.py and shortfall.py, issue 31 item 2): the pooled
PSD, autocorrelation and Allan deviation against hand values, their invariants (hypothesis), and the
comparison end to end on a synthetic drive with known models and on the shipped comma2k19 segment."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.drives import DATUM, car_drive
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.calibrate import shortfall as sf
from sim2real_eval.calibrate import shortfall_stats as sfs
from sim2real_eval.errors import UserError
from sim2real_eval.truth import GroundTruth

REPO = Path(__file__).resolve().parents[1]
SEGMENT = REPO / "bags" / "real" / "comma2k19" / "b0c9d2329ad1606b_2018-08-02--08-34-47" / "40"

WHITE_GPS = {"rate": 10.0, "position_noise": {"model": "gaussian", "sigma": [0.2, 0.2, 0.4]}}
SMOOTH_GPS = {"rate": 10.0,
              "position_noise": {"model": "gauss_markov", "form": "gz", "offset": [0.0, 0.0, 0.0],
                                 "sigma": [0.0, 0.0, 0.0], "bias_sigma": [0.1, 0.1, 0.2], "tau": 3.0}}
IMU = {"rate": 100.0,
       "accelerometer": {"model": "chrono_drift", "sigma": [0.05, 0.05, 0.05], "b0": 0.0, "t_b": 0.1},
       "gyroscope": {"model": "chrono_drift", "sigma": [0.002, 0.002, 0.002], "b0": 0.0, "t_b": 0.1}}
LOUD_IMU = {"rate": 100.0,
            "accelerometer": {"model": "chrono_drift", "sigma": [0.5, 0.5, 0.5], "b0": 0.0, "t_b": 0.1},
            "gyroscope": {"model": "chrono_drift", "sigma": [0.002, 0.002, 0.002], "b0": 0.0, "t_b": 0.1}}


# ------------------------------------------------------------------------------- unit: by hand
def test_welch_segment_count_by_hand():
    # 100 samples, 20 per segment, 50 % overlap: starts 0, 10, …, 80 → 9 segments
    assert sfs.welch_segments(100, 20) == 9
    assert sfs.welch_segments(20, 20) == 1
    assert sfs.welch_segments(29, 20) == 1 and sfs.welch_segments(30, 20) == 2


def test_psd_of_white_noise_is_its_level():
    """One-sided density of white noise σ² sampled at fs: 2σ²/fs per Hz (σ = 0.3 m, fs = 10 Hz →
    0.018 m²/Hz), flat; summed over the band it gives back the variance (Parseval)."""
    rng = np.random.default_rng(1)
    series = [rng.normal(0.0, 0.3, n) for n in (4000, 3000, 500)]
    freq, psd = sfs.pooled_psd(series, 10.0, 64)
    assert freq[1] == pytest.approx(10.0 / 64) and freq[-1] == pytest.approx(5.0)
    inner = psd[1:-1]      # DC and Nyquist carry half the density of a one-sided spectrum
    assert np.mean(inner) == pytest.approx(2 * 0.3 ** 2 / 10.0, rel=0.03)
    assert np.std(inner) / np.mean(inner) < 0.15       # flat: ~110 segments averaged per bin
    variance = sfs.band_power(freq, psd, True) + sfs.band_power(freq, psd, False)
    assert variance == pytest.approx(0.09, rel=0.05)


def test_psd_pooling_weights_each_welch_segment_once():
    """Two series whose own spectra are a and b, with 9 and 1 Welch segments: the pool is (9a + b)/10."""
    from scipy.signal import welch

    rng = np.random.default_rng(2)
    long, short = rng.normal(size=100), 5.0 * rng.normal(size=20)
    _f, a = welch(long, fs=1.0, nperseg=20)
    _f, b = welch(short, fs=1.0, nperseg=20)
    _f, pooled = sfs.pooled_psd([long, short, rng.normal(size=10)], 1.0, 20)   # the 10-sample one is skipped
    np.testing.assert_allclose(pooled, (9 * a + b) / 10, rtol=1e-12)
    with pytest.raises(UserError, match="20 samples of one spectrum segment"):
        sfs.pooled_psd([np.zeros(5)], 1.0, 20)


def test_autocorrelation_of_gauss_markov_is_exponential():
    """AR(1) x_k = φ·x_{k−1} + w with φ = e^{−dt/τ}: ρ(lag) = e^{−lag/τ}, so the 1/e crossing is τ."""
    rng = np.random.default_rng(3)
    dt, tau = 0.1, 2.0
    phi = np.exp(-dt / tau)
    series = []
    for _ in range(20):
        w = rng.normal(0.0, 1.0, 3000)
        x = np.empty_like(w)
        x[0] = w[0] / np.sqrt(1 - phi ** 2)
        for k in range(1, len(w)):
            x[k] = phi * x[k - 1] + w[k]
        series.append(x)
    rho = sfs.pooled_autocorrelation(series, 60)
    lags = np.arange(61) * dt
    np.testing.assert_allclose(rho[:41], np.exp(-lags[:41] / tau), atol=0.03)
    assert sfs.correlation_time(lags, rho) == pytest.approx(tau, rel=0.05)


def test_correlation_time_by_hand():
    lags = np.array([0.0, 1.0, 2.0, 3.0])
    # crossing 1/e = 0.3679 between lag 1 (0.5) and lag 2 (0.2): 1 + (0.5 − 0.3679)/0.3 = 1.4403
    assert sfs.correlation_time(lags, np.array([1.0, 0.5, 0.2, 0.1])) == pytest.approx(
        1 + (0.5 - np.exp(-1)) / 0.3, abs=1e-12)
    assert sfs.correlation_time(lags, np.array([1.0, 0.9, 0.8, 0.7])) is None    # never below: not shown
    # white: below at the first lag, interpolated inside the first step
    assert sfs.correlation_time(lags, np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(1 - np.exp(-1))


def test_pooled_autocorrelation_by_hand():
    # x = [1, −1, 1, −1]: Σx̃² = 4, acov(1) = −3 → ρ(1) = −0.75; y = [2, 0, −2] (mean 0): Σ = 8,
    # acov(1) = 0 → pooled ρ(1) = (−3 + 0)/(4 + 8) = −0.25
    rho = sfs.pooled_autocorrelation([np.array([1.0, -1.0, 1.0, -1.0]), np.array([2.0, 0.0, -2.0])], 1)
    np.testing.assert_allclose(rho, [1.0, -0.25], atol=1e-12)


def test_allan_deviation_by_hand_and_pooled():
    """m = 1: σ² = ½·mean((y_{k+1} − y_k)²).  [0, 1, 0, 1]: three differences of ±1 → 0.5; [0, 2, 0]:
    two of ±2 → 2; pooled by terms (3 and 2): (3·0.5 + 2·2)/5 = 1.1.  A 2-sample series has one term
    (allantools keeps none) and a τ no series reaches is NaN."""
    adev = sfs.pooled_allan([np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 2.0, 0.0]), np.array([5.0, 1.0])],
                           1.0, [1.0, 2.0])
    assert adev[0] == pytest.approx(np.sqrt(1.1), abs=1e-12)
    assert np.isnan(adev[1])


def test_allan_deviation_of_white_noise_falls_as_one_over_root_tau():
    """White noise σ at rate f: σ(τ) = σ/√(τ·f) (the mean of τ·f samples), slope −½."""
    rng = np.random.default_rng(4)
    rate, sigma = 100.0, 0.02
    series = [rng.normal(0.0, sigma, 6000) for _ in range(4)]
    taus = sfs.allan_taus(rate, 60.0)
    assert taus[0] == pytest.approx(0.01) and taus[-1] == pytest.approx(15.0)
    adev = sfs.pooled_allan(series, rate, taus)
    use = taus <= 1.0   # enough independent terms for a few per cent
    np.testing.assert_allclose(adev[use], sigma / np.sqrt(taus[use] * rate), rtol=0.06)
    assert sfs.log_slope(taus, adev) == pytest.approx(-0.5, abs=0.03)


def test_vepd_split_by_hand():
    document = {"combined": {"car_gauss": {"W1": 0.1, "W2": 0.3, "VEPD": 0.2}}}
    split = sfs.vepd_split(document, "car_gauss")
    assert split["W1_half"] == pytest.approx(0.05) and split["W2_half"] == pytest.approx(0.15)
    assert split["W1_share"] == pytest.approx(0.25) and split["W2_share"] == pytest.approx(0.75)
    zero = sfs.vepd_split({"combined": {"v": {"W1": 0.0, "W2": 0.0, "VEPD": 0.0}}}, "v")
    assert zero["W1_share"] is None
    with pytest.raises(UserError, match="variant 'nope' is not in the scored study"):
        sfs.vepd_split(document, "nope")


def test_vepd_split_of_a_study_result_gives_each_side_means():
    from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study

    def run(side, variant, k, rmse, d):
        return RunRecord(side, variant, "s", k, "x", RunScore(rmse, 0.5, 0.5 + d, d))

    records = [run("real", "real", k, 0.1 + 0.01 * k, 0.02) for k in range(4)]
    records += [run("sim", "m", k, 0.3 + 0.01 * k, 0.02) for k in range(4)]
    result = score_study(records, ScoreOptions(bootstrap=10, permutations=10))
    split = sfs.vepd_split(result, "m")
    # E: every sim run 0.2 m/s above its real counterpart → W1 = 0.2; D equal → W2 = 0
    assert split["W1"] == pytest.approx(0.2) and split["W2"] == pytest.approx(0.0, abs=1e-12)
    assert split["W1_share"] == pytest.approx(1.0)
    assert split["mean_rmse_m_s"]["real"] == pytest.approx(0.115)
    assert split["mean_rmse_m_s"]["sim"] == pytest.approx(0.315)
    assert split["floor_upper"] is None


# --------------------------------------------------------------------------- property tests
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 16), scale=st.floats(0.01, 100.0), n=st.integers(40, 300))
def test_statistics_scale_as_the_error_does(seed, scale, n):
    """Scaling an error by c: ρ is unchanged (and ρ(0) = 1, |ρ| ≤ 1), the PSD scales by c², the Allan
    deviation by c — so every ratio of the summary is a property of the shape, not of the units."""
    rng = np.random.default_rng(seed)
    series = [np.cumsum(rng.normal(size=n)), rng.normal(size=n // 2 + 10)]
    scaled = [scale * x for x in series]
    rho, rho_scaled = sfs.pooled_autocorrelation(series, 8), sfs.pooled_autocorrelation(scaled, 8)
    np.testing.assert_allclose(rho_scaled, rho, atol=1e-9)
    assert rho[0] == pytest.approx(1.0) and np.all(np.abs(rho) <= 1 + 1e-12)
    _f, psd = sfs.pooled_psd(series, 10.0, 16)
    _f, psd_scaled = sfs.pooled_psd(scaled, 10.0, 16)
    np.testing.assert_allclose(psd_scaled, scale ** 2 * psd, rtol=1e-9)
    taus = np.array([0.01, 0.02, 0.04])
    np.testing.assert_allclose(sfs.pooled_allan(scaled, 100.0, taus),
                               scale * sfs.pooled_allan(series, 100.0, taus), rtol=1e-9)


# ------------------------------------------------------------------ integration: synthetic drive
def _skeleton(truth, index: int) -> sfs.SensorSegment:
    """A segment with the truth's clock only: fixes at 10 Hz and IMU stamps at 100 Hz (what the model
    needs to know the rates); its values are replaced by ``simulate_segment``."""
    gps_t = np.arange(truth.t[0], truth.t[-1], 0.1)
    imu_t = truth.t[(truth.t >= truth.t[0]) & (truth.t <= truth.t[-1])]
    return sfs.SensorSegment(f"synthetic {index}", truth, DATUM, gps_t, np.zeros((len(gps_t), 3)), imu_t,
                            np.zeros((len(imu_t), 3)), np.zeros((len(imu_t), 3)))


@pytest.fixture(scope="module")
def drive_segments():
    """Three 200-s stretches of the synthetic car drive (100 Hz truth), 'recorded' with a smooth
    Gauss–Markov receiver (τ 3 s) and a quiet IMU — the real sensor of these tests, parameters known."""
    truth = car_drive(600.0)
    fields = ("t", "position", "orientation", "velocity", "angular_velocity", "specific_force")
    parts = [GroundTruth(*(getattr(truth, name)[k * 20000:(k + 1) * 20000 + 1] for name in fields))
             for k in range(3)]
    return [sfs.simulate_segment(_skeleton(part, k), SMOOTH_GPS, IMU, seed=7, index=k)
            for k, part in enumerate(parts)]


def test_the_same_model_and_seed_reproduce_the_real_side_exactly(drive_segments):
    """Invariant: the model that recorded the 'real' side, with its seed, gives identical statistics —
    every ratio exactly 1, nothing differs."""
    result = sfs.error_statistics(drive_segments, SMOOTH_GPS, IMU, seed=7)
    for group in ("gps", "imu"):
        for entry in result.summary[group].values():
            assert entry["differs"] == []
            assert entry["std" if group == "imu" else "std_m"]["ratio"] == 1.0
    np.testing.assert_array_equal(result.real.adev, result.model.adev)


def test_a_white_receiver_and_a_loud_imu_are_named_for_what_they_miss(drive_segments):
    """Against the smooth receiver (τ 3 s) a white one: the correlation time is flagged (the real one
    within 25 % of τ: over 600 s, ρ̂ at lag τ scatters by about ±0.05, ±0.4 s at the crossing, and each
    segment's own mean shortens it by ~2τ/T; the model's under one fix period) and the fast power; the
    accelerometer 10× too loud: its std and Allan deviation ratios ≈ 10, the gyroscope (same model) not
    flagged."""
    result = sfs.error_statistics(drive_segments, WHITE_GPS, LOUD_IMU, seed=1)
    for axis in ("east", "north", "up"):
        entry = result.summary["gps"][axis]
        assert "correlation_time_s" in entry["differs"] and "power_fast_m2" in entry["differs"]
        assert entry["correlation_time_s"]["real"] == pytest.approx(3.0, rel=0.25)
        assert entry["correlation_time_s"]["model"] < 0.1
    for axis in ("accel_x", "accel_y", "accel_z"):
        entry = result.summary["imu"][axis]
        assert entry["std"]["ratio"] == pytest.approx(10.0, rel=0.05)
        assert entry["adev_shortest_tau"]["ratio"] == pytest.approx(10.0, rel=0.1)
        assert {"std", "adev_shortest_tau", "adev_near_1s"} <= set(entry["differs"])
    for axis in ("gyro_x", "gyro_y", "gyro_z"):
        assert result.summary["imu"][axis]["differs"] == []
    assert "accel_x" in result.differing() and "gyro_x" not in result.differing()


def test_bad_input_is_one_line():
    with pytest.raises(UserError, match="no real segment"):
        sfs.error_statistics([], "car_gauss", "car_mems")
    with pytest.raises(UserError, match="no real bag"):
        sfs.segments_from_bags([])
    with pytest.raises(UserError, match="too short for an Allan deviation"):
        sfs.allan_taus(100.0, 0.05)


# --------------------------------------------------------- integration: the shipped comma2k19 drive
@pytest.fixture(scope="module")
def comma_windows(tmp_path_factory):
    from sim2real_eval.importer import import_comma2k19

    out = tmp_path_factory.mktemp("shortfall") / "windows"
    result = import_comma2k19(SEGMENT, out, window=5, estimate_mounting=True, fix_covariance=0.3)
    return [run.path for run in result.runs[5:]]        # the demo's scored windows 5–10


def test_comma2k19_windows_against_car_gauss_written_and_seeded(comma_windows, tmp_path):
    """The real sample's scored windows against car_gauss + car_mems: what it misses is found (the real
    fix error is smooth — no power above 0.5 Hz to speak of — and the phone's IMU residual is far louder
    than car_mems), the three files are written, and the same seed gives the same bytes."""
    segments = sfs.segments_from_bags(comma_windows)
    study = {"combined": {"car_gauss": {"W1": 0.18, "W2": 0.03, "VEPD": 0.105}}}
    result = sfs.error_statistics(segments, "car_gauss", "car_mems", seed=0, study=study, variant="car_gauss")
    assert len(result.sources) == 6 and result.settings.psd_segment <= 50
    for axis in ("east", "up"):
        entry = result.summary["gps"][axis]
        assert entry["power_fast_m2"]["ratio"] > 10 and "correlation_time_s" in entry["differs"]
    for axis in ("accel_x", "accel_y", "accel_z"):
        assert result.summary["imu"][axis]["std"]["ratio"] < 0.2
    assert result.vepd["W1_share"] == pytest.approx(0.09 / 0.105)
    files = sf.write_shortfall(result, tmp_path / "one")
    assert [p.name for p in files.values()] == list(sf.FILES)
    assert files["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    document = json.loads(files["json"].read_text())
    assert document["differs"] == result.differing() and document["vepd"]["variant"] == "car_gauss"
    text = files["markdown"].read_text()
    assert "What the model does not reproduce" in text and "W1/2 (RMSE part)" in text
    again = sfs.error_statistics(segments, "car_gauss", "car_mems", seed=0, study=study, variant="car_gauss")
    assert json.dumps(again.as_dict(), indent=2, sort_keys=True) + "\n" == files["json"].read_text()
    other = sfs.error_statistics(segments, "car_gauss", "car_mems", seed=1)
    assert other.summary["gps"]["east"]["std_m"]["model"] != result.summary["gps"]["east"]["std_m"]["model"]


@pytest.mark.slow
def test_calibrate_truth_shortfall_end_to_end(tmp_path, capsys):
    """``calibrate --truth DRIVE --shortfall GPS IMU`` on the whole shipped drive: the presets and the three
    shortfall files together; 'calibrated' compares the presets just fitted; bad input is one line and
    writes nothing."""
    from sim2real_eval.cli import main
    from sim2real_eval.importer import import_comma2k19

    bag = import_comma2k19(SEGMENT, tmp_path / "drive", estimate_mounting=True).runs[0].path
    out = tmp_path / "cal" / "params.yaml"
    assert main(["calibrate", "--truth", str(bag), "--out", str(out), "--shortfall", "car_gauss",
                 "car_mems"]) == 0
    names = sorted(p.name for p in out.parent.iterdir())
    assert names == ["params.yaml", "params_gps.yaml", "params_imu.yaml", "shortfall.json", "shortfall.md",
                     "shortfall.png"]
    document = json.loads((out.parent / "shortfall.json").read_text())
    assert document["gps_model"] == "car_gauss" and document["seed"] == 0
    # the whole drive: the real east error is smooth (1/e after seconds), car_gauss white
    assert document["summary"]["gps"]["east"]["correlation_time_s"]["real"] > 2.0
    assert "shortfall east: the model differs in" in capsys.readouterr().err
    again = tmp_path / "again" / "params.yaml"
    assert main(["calibrate", "--truth", str(bag), "--out", str(again), "--shortfall", "calibrated",
                 "calibrated"]) == 0
    document = json.loads((again.parent / "shortfall.json").read_text())
    assert document["gps_model"]["position_noise"]["model"] == "gauss_markov"
    capsys.readouterr()
    bad = tmp_path / "bad" / "params.yaml"
    assert main(["calibrate", "--truth", str(bag), "--out", str(bad), "--shortfall", "nope", "car_mems"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err and not bad.parent.exists()
    assert main(["calibrate", str(bag), "--out", str(bad), "--shortfall", "car_gauss", "car_mems"]) == 2
    assert "--shortfall: only with --truth" in capsys.readouterr().err
