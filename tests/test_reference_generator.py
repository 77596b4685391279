"""The synthetic ART-like reference data set (sim2real_eval.reference) and ``make-reference``."""
from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import reference as ref
from sim2real_eval import rotations
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.truth import GRAVITY

REPO = Path(__file__).resolve().parents[1]

# A 6 s manoeuvre (1 s still, 4 s at ~1 m/s, 1 s still) keeps every generated run cheap.
SHORT_LINE = """\
wheelbase: 0.5
rate: 200.0
start_time: 10.0
phases:
  - {duration: 1.0, speed: 0.0}
  - {duration: 4.0, speed: 1.0, steer: 0.0}
  - {duration: 1.0, speed: 0.0}
variation: {speed_scale_sigma: 0.03, steer_scale_sigma: 0.05, speed_noise_sigma: 0.02,
            steer_noise_sigma: 0.01}
"""


def short_setup(tmp_path: Path) -> ref.ReferenceSetup:
    (tmp_path / "short_line.yaml").write_text(SHORT_LINE)
    text = (REPO / "config" / "studies" / "demo_reference.yaml").read_text()
    text = text.replace("scenarios: [line, sine, circle]", "scenarios: {line: short_line.yaml}")
    path = tmp_path / "setup.yaml"
    path.write_text(text)
    return ref.load_setup(path)


def message_digest(records) -> str:
    """sha256 over (recv_ns, topic, CDR bytes) of every message, in order."""
    from sim2real_eval.bags import get_typestore

    store = get_typestore()
    digest = hashlib.sha256()
    for recv_ns, topic, msgtype, msg in records:
        digest.update(int(recv_ns).to_bytes(8, "little") + topic.encode())
        data = msg if isinstance(msg, (bytes, bytearray, memoryview)) else store.serialize_cdr(msg, msgtype)
        digest.update(bytes(data))
    return digest.hexdigest()


# ------------------------------------------------------------------------------ HDOP process
def test_hdop_without_noise_is_the_mean_rounded_and_clamped():
    rng = np.random.default_rng(0)
    process = ref.HdopProcess(mean=0.834, sigma=0.0, tau=60.0, minimum=0.5, resolution=0.01)
    assert np.allclose(ref.hdop_series(process, np.full(5, 0.1), rng), 0.83)
    low = ref.HdopProcess(mean=0.3, sigma=0.0, tau=60.0, minimum=0.5, resolution=0.01)
    assert np.allclose(ref.hdop_series(low, np.full(3, 0.1), rng), 0.5)


def test_hdop_recursion_by_hand():
    # h0 = m + σ·z0; h1 = m + e^(−Δt/τ)(h0 − m) + σ·√(1 − e^(−2Δt/τ))·z1  (no rounding, no clamp)
    process = ref.HdopProcess(mean=1.0, sigma=0.2, tau=2.0, minimum=0.01, resolution=0.0)
    z = np.random.default_rng(5).standard_normal(2)
    h = ref.hdop_series(process, np.array([0.0, 1.0]), np.random.default_rng(5))
    decay = math.exp(-0.5)
    h0 = 1.0 + 0.2 * z[0]
    h1 = 1.0 + decay * (h0 - 1.0) + 0.2 * math.sqrt(1.0 - decay ** 2) * z[1]
    assert h[0] == pytest.approx(h0, abs=1e-15)
    assert h[1] == pytest.approx(h1, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(mean=st.floats(0.3, 3.0), sigma=st.floats(0.0, 1.0), tau=st.floats(0.5, 200.0),
       minimum=st.floats(0.1, 1.0), seed=st.integers(0, 2 ** 32 - 1))
def test_hdop_is_at_least_the_minimum_and_on_the_resolution_grid(mean, sigma, tau, minimum, seed):
    process = ref.HdopProcess(mean, sigma, tau, minimum, 0.01)
    h = ref.hdop_series(process, np.full(50, 0.1), np.random.default_rng(seed))
    assert (h >= minimum - 1e-12).all()
    on_grid = np.isclose(h / 0.01, np.round(h / 0.01), atol=1e-6) | np.isclose(h, minimum)
    assert on_grid.all()


def test_hdop_has_the_stationary_mean_std_and_correlation():
    process = ref.HdopProcess(mean=0.8, sigma=0.12, tau=2.0, minimum=0.01, resolution=0.0)
    h = ref.hdop_series(process, np.full(60_000, 0.1), np.random.default_rng(1))
    assert h.mean() == pytest.approx(0.8, abs=0.015)
    assert h.std() == pytest.approx(0.12, rel=0.08)
    lag = 20  # 2 s = τ: autocorrelation e^(−1)
    x = h - h.mean()
    assert np.dot(x[:-lag], x[lag:]) / np.dot(x, x) == pytest.approx(math.exp(-1.0), abs=0.07)


# --------------------------------------------------------------------------------- stamps
@settings(max_examples=50, deadline=None)
@given(period=st.integers(1_000_000, 100_000_000), fraction=st.floats(0.0, 0.49), seed=st.integers(0, 1000))
def test_jittered_stamps_stay_ordered_inside_and_near_the_grid(period, fraction, seed):
    jitter = int(period * fraction)
    first, last = 10 * period, 60 * period
    stamps = ref.jittered_stamps(first, last, period, jitter, np.random.default_rng(seed))
    assert len(stamps) >= 49
    assert (np.diff(stamps) > 0).all()
    assert stamps[0] >= first and stamps[-1] <= last
    nominal = first + jitter + period * np.arange(len(stamps))
    assert (np.abs(stamps - nominal) <= jitter).all()


# ---------------------------------------------------------------------------------- setup
def test_setup_errors_name_file_and_key(tmp_path):
    text = (REPO / "config" / "studies" / "demo_reference.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "colour: red\n")
    with pytest.raises(UserError, match=r"bad\.yaml.*colour"):
        ref.load_setup(bad)
    bad.write_text(text.replace("latency_jitter: 0.010", "latency_jitter: 0.1"))
    with pytest.raises(UserError, match=r"bad\.yaml.*latency_jitter"):
        ref.load_setup(bad)
    bad.write_text(text.replace("scenarios: [line, sine, circle]", "scenarios: [line, line]"))
    with pytest.raises(UserError, match=r"bad\.yaml.*scenarios"):
        ref.load_setup(bad)


def test_the_shipped_setup_differs_from_every_simulated_gps_variant():
    from sim2real_eval.models import load_gps_model

    setup = ref.load_setup()
    real = load_gps_model(setup.gps_model, 0).parameters
    for variant in ("ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim"):
        sim = load_gps_model(variant, 0).parameters
        assert (sim["position_noise"], sim["covariance"]) != (real["position_noise"], real["covariance"])
    assert real["position_noise"]["model"] == "gauss_markov"
    assert real["covariance"]["model"] == "nmea" and real["covariance"]["epe"] == 0.02


# ------------------------------------------------------------------------------- messages
@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("short")
    setup = short_setup(tmp)
    records, truth = ref.reference_messages(setup, "line", 0)
    return setup, records, truth


def by_topic(records, topic):
    """Records of one topic with the message as an object (the generator gives /fix, /imu as CDR)."""
    from sim2real_eval.bags import get_typestore

    store = get_typestore()
    return [(recv, name, msgtype, store.deserialize_cdr(msg, msgtype) if isinstance(msg, bytes) else msg)
            for recv, name, msgtype, msg in records if name == topic]


def test_topics_rates_and_order(short_run):
    setup, records, truth = short_run
    recv = np.array([r[0] for r in records])
    assert (np.diff(recv) >= 0).all()
    counts = {topic: len(by_topic(records, topic)) for topic in ref.TOPICS.values()}
    duration = truth.duration
    assert counts["/imu"] == pytest.approx(100 * duration, abs=2)
    assert counts["/fix"] == pytest.approx(10 * duration, abs=2)
    assert counts["/sbg/gps_vel"] == counts["/sbg/gps_pos"] == pytest.approx(5 * duration, abs=2)
    # Epoch clock: 2024-02-15 plus the run's slot.
    assert truth.t[0] == pytest.approx(setup.start_time + 10.0)


def test_fix_is_rtk_with_hdop_covariance_and_latency(short_run):
    setup, records, truth = short_run
    fixes = [r[3] for r in by_topic(records, "/fix")]
    assert all(f.status.status == 2 and f.status.service == 1 for f in fixes)  # GBAS_FIX, GPS
    assert all(f.position_covariance_type == 1 for f in fixes)  # APPROXIMATED
    cov = np.array([f.position_covariance for f in fixes])
    hdop = np.sqrt(cov[:, 0]) / 0.02                       # nmea: σ_h = HDOP·epe
    assert np.allclose(cov[:, 4], cov[:, 0])
    assert np.allclose(cov[:, 8], 16.0 * cov[:, 0])        # (2·HDOP·2·epe)²
    assert np.allclose(hdop, np.round(hdop, 2), atol=1e-9) and (hdop >= setup.hdop.minimum - 1e-9).all()
    assert np.ptp(hdop) > 0                                # it varies
    stamps = np.array([f.header.stamp.sec * 10 ** 9 + f.header.stamp.nanosec for f in fixes])
    latency = (stamps % 100_000_000) / 1e9                 # fix epochs lie on the 10 Hz grid
    assert ((latency >= 0.035 - 1e-9) & (latency <= 0.055 + 1e-9)).all()
    assert [r[0] for r in by_topic(records, "/fix")] == stamps.tolist()  # driver stamps at reception


def test_fix_error_is_centimetre_level_and_correlated(short_run):
    from sim2real_eval import geodesy

    setup, records, truth = short_run
    fixes = [r[3] for r in by_topic(records, "/fix")]
    datum = geodesy.as_datum([43.07236, -89.41189, 263.0])
    enu = geodesy.geodetic_to_enu([f.latitude for f in fixes], [f.longitude for f in fixes],
                                  [f.altitude for f in fixes], datum)
    # Position refers to the fix epoch (stamp − latency, on the 10 Hz grid).
    epochs = np.array([(f.header.stamp.sec * 10 ** 9 + f.header.stamp.nanosec) // 100_000_000 * 0.1
                       for f in fixes])
    error = enu[:, :2] - truth.interpolate(epochs).position[:, :2]
    assert 0.002 < np.sqrt((error ** 2).mean()) < 0.08
    # Mostly bias: successive errors differ far less than the errors themselves.
    assert np.sqrt((np.diff(error, axis=0) ** 2).mean()) < 0.5 * np.sqrt((error ** 2).mean())


def test_imu_is_mounted_like_the_art_imu(short_run):
    _setup, records, truth = short_run
    imu = [r[3] for r in by_topic(records, "/imu")]
    assert {m.header.frame_id for m in imu} == {"imu"}
    still = [m for m in imu if m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 < truth.t[0] + 0.9]
    measured = np.mean([[m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z]
                        for m in still], axis=0)
    mounting = rotations.from_rpy(0.0, -1.5708, 3.1416)   # static TF yaw π, pitch −π/2
    expected = rotations.rotate_inverse(mounting, np.array([0.0, 0.0, GRAVITY]))
    assert np.abs(expected).argmax() == np.abs(measured).argmax()
    assert np.allclose(measured, expected, atol=0.3)       # MAVS biases, misalignment, temperature
    stamps = np.array([m.header.stamp.sec * 10 ** 9 + m.header.stamp.nanosec for m in imu])
    assert (np.diff(stamps) > 0).all() and not np.all(np.diff(stamps) == 10_000_000)  # jittered


def test_sbg_truth_is_ned_with_small_noise(short_run):
    _setup, records, truth = short_run
    vel = [r[3] for r in by_topic(records, "/sbg/gps_vel")]
    t = np.array([m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in vel])
    ned = np.array([[m.velocity.x, m.velocity.y, m.velocity.z] for m in vel])
    true = truth.interpolate(t).velocity
    error = ned - np.stack([true[:, 1], true[:, 0], -true[:, 2]], axis=1)  # ENU -> NED
    assert 0.005 < error.std() < 0.03
    assert {m.header.frame_id for m in vel} == {"imu_link_ned"}


def test_same_seed_same_bytes_other_seed_other_bytes(short_run, tmp_path):
    setup, records, _truth = short_run
    again, _ = ref.reference_messages(setup, "line", 0)
    assert message_digest(again) == message_digest(records)
    other_run, _ = ref.reference_messages(setup, "line", 1)
    other_seed, _ = ref.reference_messages(dataclasses.replace(setup, seed=setup.seed + 1), "line", 0)
    assert message_digest(other_run) != message_digest(records)
    assert message_digest(other_seed) != message_digest(records)


def test_written_bag_gives_back_the_truth(tmp_path):
    from sim2real_eval.bags import open_bag
    from sim2real_eval.truth.bag import truth_from_bag

    setup = short_setup(tmp_path)
    path = ref.write_reference_run(setup, tmp_path / "ref", "line", 0)
    assert ref.made_by(path, setup)
    assert not ref.made_by(path, dataclasses.replace(setup, seed=1))
    _records, truth = ref.reference_messages(setup, "line", 0)
    with open_bag(path) as reader:
        assert set(reader.topics) == set(ref.TOPICS.values())
        ins, _datum = truth_from_bag(reader)
    inside = (ins.t > truth.t[0] + 0.5) & (ins.t < truth.t[-1] - 0.5)
    speed = np.linalg.norm(ins.velocity[inside, :2], axis=1)
    true_speed = np.linalg.norm(truth.interpolate(ins.t[inside]).velocity[:, :2], axis=1)
    assert np.sqrt(np.mean((speed - true_speed) ** 2)) < 0.05
    with pytest.raises(UserError, match="already exists"):
        ref.write_reference_run(setup, tmp_path / "ref", "line", 0)


# ------------------------------------------------------------------------------ shipped set
def test_shipped_reference_is_small_labelled_and_complete():
    shipped = REPO / "bags" / "reference"
    setup = ref.load_setup()
    size = sum(p.stat().st_size for p in (REPO / "bags").rglob("*") if p.is_file())
    assert size < 20e6
    readme = (shipped / "README.md").read_text()
    assert "synthetic" in readme.lower() and "NOT real data" in readme
    for scenario in setup.scenarios:
        for k in range(setup.shipped_repeats):
            assert ref.made_by(ref.run_path(shipped, scenario, k), setup), (scenario, k)


def test_make_reference_on_the_shipped_folder_rewrites_nothing(tmp_path, capsys):
    """`make-reference --out bags/reference` rewrote the tracked README.md ("bag" -> "run"): the tracked
    files are what the generator writes, so a rerun on the shipped folder leaves every byte as it is."""
    import shutil

    shipped = REPO / "bags" / "reference"
    copy = tmp_path / "reference"
    shutil.copytree(shipped, copy)
    before = {p.relative_to(copy): hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.rglob("*")
              if p.is_file()}
    assert main(["make-reference", "--out", str(copy), "--no-progress", "--workers", "1"]) == 0
    assert "0 runs written, 9 kept" in capsys.readouterr().out
    after = {p.relative_to(copy): hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.rglob("*")
             if p.is_file()}
    assert after == before
    assert (copy / "README.md").read_bytes() == (shipped / "README.md").read_bytes()


def shipped_records(path) -> list:
    """(recv_ns, topic, msgtype, CDR bytes) of a bag, in order."""
    from sim2real_eval.bags import open_bag

    with open_bag(path) as reader:
        return [(int(raw.recv_ns), raw.topic, raw.msgtype, bytes(raw.data)) for raw in reader.raw_messages()]


def leaves(message, prefix=""):
    """(field path, value) of every scalar in a rosbags message object, arrays element by element."""
    if isinstance(message, (bool, int, float, str)):
        yield prefix, message
    elif isinstance(message, np.ndarray):
        for i, value in enumerate(message.ravel().tolist()):
            yield f"{prefix}[{i}]", value
    else:
        for name in message.__dataclass_fields__:
            if name != "__msgtype__":
                yield from leaves(getattr(message, name), f"{prefix}.{name}" if prefix else name)


# docs/models.md "Reproducibility": across CPUs and library versions, floats agree to 1e-12 relative
# or 1e-12 absolute, whichever is larger (math.isclose): quaternion components near 0 come out of
# cancellations, and their last bits move by ~1e-17 absolute, i.e. more than 1e-12 of themselves.
TOLERANCE = 1e-12


def first_difference(expected, actual, tolerance=TOLERANCE) -> str | None:
    """None when two message lists carry the same messages (ints/strings equal, floats within
    ``tolerance`` relative or absolute); else one line naming the first difference."""
    from sim2real_eval.bags import get_typestore

    store = get_typestore()
    if len(expected) != len(actual):
        return f"{len(expected)} messages vs {len(actual)}"

    def decoded(msg, msgtype):  # objects go through CDR too: their float32 fields get rounded
        data = msg if isinstance(msg, (bytes, bytearray)) else store.serialize_cdr(msg, msgtype)
        return store.deserialize_cdr(bytes(data), msgtype)

    for i, ((recv_a, topic_a, type_a, msg_a), (recv_b, topic_b, _type_b, msg_b)) in enumerate(
            zip(expected, actual)):
        if (recv_a, topic_a) != (recv_b, topic_b):
            return f"message {i}: received {recv_a} on {topic_a} vs {recv_b} on {topic_b}"
        for (name, a), (_name, b) in zip(leaves(decoded(msg_a, type_a)), leaves(decoded(msg_b, type_a))):
            same = (math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
                    if isinstance(a, float) and isinstance(b, float) else a == b)
            if not same:
                return f"message {i} ({topic_a}) {name}: {a!r} vs {b!r}"
    return None


def test_first_difference_accepts_rounding_and_names_a_real_change():
    setup = ref.load_setup()
    records = shipped_records(ref.run_path(REPO / "bags" / "reference", "line", 0))
    assert first_difference(records, records) is None
    from sim2real_eval.bags import get_typestore

    store = get_typestore()
    index = next(i for i, r in enumerate(records) if r[1] == "/fix")
    fix = store.deserialize_cdr(records[index][3], records[index][2])
    for scale, expected in ((1 + 2 ** -52, None), (1 + 1e-9, "latitude")):  # 1 ulp vs 5 cm
        changed = list(records)
        moved = dataclasses.replace(fix, latitude=fix.latitude * scale)
        changed[index] = records[index][:3] + (bytes(store.serialize_cdr(moved, records[index][2])),)
        problem = first_difference(records, changed)
        assert problem is None if expected is None else expected in problem
    assert setup.scenarios  # the shipped setup loads


def test_shipped_runs_equal_their_regeneration():
    """Shipped and regenerated runs are the same data (the demo mixes them): the same bytes in the
    numeric environment that made them (reference.yaml), the same values anywhere else."""
    from sim2real_eval.yamlio import load_yaml

    setup = ref.load_setup()
    here = ref.numeric_environment()
    for scenario in setup.scenarios:
        path = ref.run_path(REPO / "bags" / "reference", scenario, 0)
        shipped = shipped_records(path)
        regenerated, _ = ref.reference_messages(setup, scenario, 0)
        made_in = load_yaml(path / ref.SIDECAR).get("environment")
        problem = first_difference(shipped, regenerated)
        assert problem is None, (
            f"{path} differs from its regeneration beyond floating-point rounding: {problem}.  The "
            f"generator or a dependency's random stream changed (numpy {np.__version__}); the shipped "
            "data are right for the versions in its reference.yaml.  Please report this with the "
            "output of `python -c 'import numpy; numpy.show_runtime()'` (docs/models.md, Reproducibility).")
        if made_in == here:
            assert message_digest(shipped) == message_digest(regenerated), (
                f"{path}: same values but other bytes in the very environment that made it ({here}): "
                "the generator's arithmetic changed.  Re-making the shipped data is a reviewed change of "
                "its own (docs/models.md, Reproducibility), not a fix for this test.")


def _simd_features_beyond_baseline() -> list:
    return ref.numeric_environment()["numpy_simd"]


REGENERATE = """
import pickle, sys
from sim2real_eval import reference as ref
from sim2real_eval.bags import get_typestore
store = get_typestore()
setup = ref.load_setup()
records, _ = ref.reference_messages(setup, "line", 0)
out = [(r, t, m, bytes(d) if isinstance(d, (bytes, bytearray)) else bytes(store.serialize_cdr(d, m)))
       for r, t, m, d in records]
pickle.dump((ref.numeric_environment(), out), open(sys.argv[1], "wb"))
"""


@pytest.mark.slow
def test_another_cpu_regenerates_the_same_values(tmp_path):
    """The fresh-clone failure of issue 13, on this machine: numpy's SIMD kernels switched off
    (NPY_DISABLE_CPU_FEATURES) play a CPU without them — other last bits, same values."""
    import os
    import pickle
    import subprocess
    import sys

    features = _simd_features_beyond_baseline()
    if not features:
        pytest.skip("this CPU has no numpy SIMD dispatch target beyond the baseline to switch off")
    disabled = " ".join([os.environ.get("NPY_DISABLE_CPU_FEATURES", "")] + features).strip()
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=disabled,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
    out = tmp_path / "records.pkl"
    subprocess.run([sys.executable, "-c", REGENERATE, str(out)], env=env, check=True, timeout=300)
    environment, other = pickle.loads(out.read_bytes())
    assert environment["numpy_simd"] == []
    shipped = shipped_records(ref.run_path(REPO / "bags" / "reference", "line", 0))
    assert first_difference(shipped, other) is None
    if "X86_V4" in features or "AVX512_SKX" in features:
        # On AVX-512 machines the bytes do differ (cbrt/arctan2 in the geodesy): the premise holds.
        assert message_digest(other) != message_digest(shipped)


# ------------------------------------------------------------------------------------ CLI
def test_make_reference_cli(tmp_path, capsys):
    setup_path = tmp_path / "setup.yaml"
    short_setup(tmp_path)  # writes setup.yaml + short_line.yaml
    out = tmp_path / "out"
    common = ["make-reference", "--setup", str(setup_path), "--out", str(out), "--workers", "1",
              "--no-progress"]
    args = common + ["--k", "2"]
    assert main(args) == 0
    assert (out / "README.md").is_file() and "2 runs written" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "line").iterdir()) == ["run_00", "run_01"]
    assert main(args) == 0
    assert "0 runs written, 2 kept" in capsys.readouterr().out
    assert main(common + ["--k", "0"]) == 2
    assert "--k: 0 runs is below the limit of 1 runs" in capsys.readouterr().err
    assert main(args + ["--scenario", "nowhere"]) == 2
    assert "--scenario 'nowhere': neither a scenario of" in capsys.readouterr().err
    assert not (out / "nowhere").exists()


def test_make_reference_writes_a_standstill_for_calibrate(tmp_path, capsys):
    """Any scenario of config/scenarios, outside the study: recorded before it, labelled, listed."""
    from sim2real_eval.yamlio import load_yaml

    short_setup(tmp_path)
    out = tmp_path / "out"
    assert main(["make-reference", "--setup", str(tmp_path / "setup.yaml"), "--out", str(out),
                 "--scenario", "rest", "--k", "1", "--workers", "1", "--no-progress"]) == 0
    run = ref.run_path(out, "rest", 0)
    sidecar = load_yaml(run / ref.SIDECAR)
    assert sidecar["synthetic"] is True and "outside the demo study" in sidecar["what"]
    assert sidecar["environment"] == ref.numeric_environment()
    assert "This folder holds rest run 0." in (out / "README.md").read_text()
    setup = ref.load_setup(tmp_path / "setup.yaml")
    truth = ref.reference_truth(setup, "rest", 0)
    assert truth.t[0] == pytest.approx(setup.start_time - setup.run_spacing + 10.0)
    assert np.abs(truth.velocity).max() == 0.0


def test_the_shipped_standstill_is_long_enough_for_calibrate():
    from sim2real_eval import scenarios
    from sim2real_eval.models import sensor_seed

    data, source, _ = scenarios.load_scenario("standstill")
    truth = scenarios.simulate(data, source, sensor_seed(0, "standstill"))
    assert truth.duration >= 600.0 - 1e-9 and np.abs(truth.velocity).max() == 0.0


def test_nmea_covariance_must_be_given_at_hdop_one(tmp_path):
    setup = short_setup(tmp_path)
    doubled = dataclasses.replace(setup, gps_model={"preset": "reference_rtk", "covariance": {"hdop": 2.0}})
    with pytest.raises(UserError, match=r"gps\.model: the nmea covariance must be given at hdop 1\.0"):
        ref.reference_messages(doubled, "line", 0)
