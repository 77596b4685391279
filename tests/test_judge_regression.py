"""The optimised judge reproduces the outputs recorded before optimising (tests/make_judge_regression.py)
to ≤ 1e-9 absolute (m, m/s, rad, covariance units) on: the synthetic ART run, a tiny pipeline-style run
built from rosbags messages, and robot_localization's bag1 ekf/ukf tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim2real_eval.judge import Judge, NavsatParams, load_ekf_params, load_navsat_params, parse_static_tf
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_stream
from sim2real_eval.resources import config_path

DATA = Path(__file__).resolve().parent / "data" / "judge_regression.npz"
FIELDS = ("position", "orientation", "pose_covariance", "linear_velocity", "angular_velocity",
          "twist_covariance")
TOLERANCE = 1e-9
BAG1_TF = "base_link imu_link 0 -0.3 0.52 -1.570796327 0 1.570796327"
BAG1_TOPICS = ("/imu/data", "/husky_velocity_controller/odom", "/fix")


@pytest.fixture(scope="module")
def reference():
    with np.load(DATA) as data:
        return dict(data)


def art_judge():
    return Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
                 load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)


def pipeline_messages(reference: dict) -> list:
    """The pipeline's judge input: rosbags NavSatFix + Imu messages from the stored samples, in receive
    order (stable: GPS before IMU at equal receive times, as bags.records.in_receive_order)."""
    from sim2real_eval.bags import messages as bag_messages
    from sim2real_eval.models.samples import GpsSamples, ImuSamples

    def fields(prefix, names):
        return {name[len(prefix):]: reference[name] for name in reference
                if name.startswith(prefix) and name != prefix + "frame_id"}

    imu = ImuSamples(**fields("pipein_imu_", ()), frame_id=str(reference["pipein_imu_frame_id"]))
    gps = GpsSamples(**fields("pipein_gps_", ()), frame_id=str(reference["pipein_gps_frame_id"]))
    records = list(bag_messages.navsatfix_messages(gps, "/fix"))
    records += list(bag_messages.imu_messages(imu, "/imu"))
    records.sort(key=lambda r: r[0])
    return [(recv, topic, msg) for recv, topic, _type, msg in records]


def assert_series_match(prefix: str, result, reference: dict) -> None:
    for label, got in (("filtered", result.filtered), ("gps", result.gps_odometry)):
        np.testing.assert_array_equal(got.stamp_ns, reference[f"{prefix}_{label}_stamp_ns"])
        for name in FIELDS:
            np.testing.assert_allclose(getattr(got, name), reference[f"{prefix}_{label}_{name}"],
                                       rtol=0, atol=TOLERANCE, err_msg=f"{prefix} {label} {name}")


def test_synthetic_art_run_is_reproduced(reference):
    result = art_judge().run(art_like_stream(duration=10.0, heading_rate=0.05, seed=1))
    assert_series_match("art", result, reference)


def test_pipeline_style_run_is_reproduced(reference):
    result = art_judge().run(pipeline_messages(reference))
    assert len(result.filtered) > 100
    assert_series_match("pipe", result, reference)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ekf", "ukf"])
def test_bag1_is_reproduced(reference, peer_bag, name):
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    if f"bag1_{name}_final" not in reference:
        pytest.skip("the reference was recorded without ../shared/peer/test1.bag")
    with AnyReader([peer_bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        wanted = [c for c in reader.connections if c.topic in BAG1_TOPICS]
        messages = [(recv, c.topic, reader.deserialize(raw, c.msgtype))
                    for c, recv, raw in reader.messages(wanted)]
    params = load_ekf_params(config_path("judge", f"{name}_bag1.yaml"))
    navsat = NavsatParams(use_odometry_yaw=True, zero_altitude=True)
    result = Judge(params, navsat, static_tfs=[parse_static_tf(BAG1_TF)]).run(messages)
    assert result.published == int(reference[f"bag1_{name}_published"])
    np.testing.assert_allclose(result.final_position, reference[f"bag1_{name}_final"], rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(result.filtered.position[::25], reference[f"bag1_{name}_position_every25"],
                               rtol=0, atol=TOLERANCE)
