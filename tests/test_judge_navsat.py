"""navsat_transform_node port (judge.md §5, §10 item 13)."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from sim2real_eval.judge import parse_static_tf
from sim2real_eval.judge.navsat import NavsatNode, lat_lon_to_utm, utm_zone
from sim2real_eval.judge.params import NavsatParams
from sim2real_eval.judge.tf import TfBuffer, Transform, matrix_from_rpy, quaternion_from_rpy

S = 1_000_000_000
# First /fix of robot_localization's test1.bag (judge.md §7)
TEST1_LAT, TEST1_LON = 42.375812, -71.14739466666667


def kruger_utm(lat, lon, lon0):
    """Independent UTM forward + meridian convergence: Krüger series to n⁴ (Karney 2011, eqs. 7-12)."""
    a, f, k0 = 6378137.0, 1 / 298.257223563, 0.9996
    n = f / (2 - f)
    big_a = a / (1 + n) * (1 + n**2 / 4 + n**4 / 64)
    alpha = [
        n / 2 - 2 * n**2 / 3 + 5 * n**3 / 16 + 41 * n**4 / 180,
        13 * n**2 / 48 - 3 * n**3 / 5 + 557 * n**4 / 1440,
        61 * n**3 / 240 - 103 * n**4 / 140,
        49561 * n**4 / 161280,
    ]
    e = math.sqrt(f * (2 - f))
    phi, lam = math.radians(lat), math.radians(lon - lon0)
    t = math.sinh(math.atanh(math.sin(phi)) - e * math.atanh(e * math.sin(phi)))
    xi_p, eta_p = math.atan2(t, math.cos(lam)), math.atanh(math.sin(lam) / math.sqrt(1 + t * t))
    js = range(1, 5)
    xi = xi_p + sum(alpha[j - 1] * math.sin(2 * j * xi_p) * math.cosh(2 * j * eta_p) for j in js)
    eta = eta_p + sum(alpha[j - 1] * math.cos(2 * j * xi_p) * math.sinh(2 * j * eta_p) for j in js)
    p = 1 + sum(2 * j * alpha[j - 1] * math.cos(2 * j * xi_p) * math.cosh(2 * j * eta_p) for j in js)
    q = sum(2 * j * alpha[j - 1] * math.sin(2 * j * xi_p) * math.sinh(2 * j * eta_p) for j in js)
    gamma = math.atan(t * math.tan(lam) / math.sqrt(1 + t * t)) + math.atan2(q, p)
    return 500000 + k0 * big_a * eta, k0 * big_a * xi, gamma


def test_test1_first_fix_utm_and_convergence_match_independent_series():
    easting, northing, gamma, zone, north = lat_lon_to_utm(TEST1_LAT, TEST1_LON)
    assert (zone, north) == (19, True)
    e_ref, n_ref, g_ref = kruger_utm(TEST1_LAT, TEST1_LON, -69.0)
    assert easting == pytest.approx(e_ref, abs=1e-3) and northing == pytest.approx(n_ref, abs=1e-3)
    assert gamma == pytest.approx(g_ref, abs=1e-9)
    assert math.degrees(gamma) == pytest.approx(-1.448, abs=5e-4)  # judge.md §7
    # Spherical first-order check of the sign and size: γ ≈ atan(tan Δλ · sin φ)
    approx = math.atan(math.tan(math.radians(TEST1_LON + 69)) * math.sin(math.radians(TEST1_LAT)))
    assert gamma == pytest.approx(approx, abs=1e-4)


def test_standard_zone_exceptions():
    assert utm_zone(60.0, 5.0) == (32, True)  # Norway
    assert utm_zone(78.0, 20.0) == (33, True)  # Svalbard
    assert utm_zone(-33.9, 18.4) == (34, False)


def fix(stamp_ns, lat, lon, frame="gps", var=1.0, status=0):
    sec, nanosec = divmod(stamp_ns, S)
    return NS(
        header=NS(stamp=NS(sec=sec, nanosec=nanosec), frame_id=frame),
        status=NS(status=status),
        latitude=lat,
        longitude=lon,
        altitude=10.0,
        position_covariance=[var, 0, 0, 0, 2 * var, 0, 0, 0, 3 * var],
    )


def odom(stamp_ns, x, y, yaw):
    """A nav_msgs/Odometry (the EKF's output) with the ROS field names."""
    sec, nanosec = divmod(stamp_ns, S)
    q = quaternion_from_rpy(0, 0, yaw)
    zero = NS(x=0.0, y=0.0, z=0.0)
    return NS(header=NS(stamp=NS(sec=sec, nanosec=nanosec), frame_id="odom"), child_frame_id="base_link",
              pose=NS(pose=NS(position=NS(x=x, y=y, z=0.0), orientation=NS(x=q[0], y=q[1], z=q[2], w=q[3])),
                      covariance=np.zeros(36)),
              twist=NS(twist=NS(linear=zero, angular=zero), covariance=np.zeros(36)))


def art_navsat(tf=None, publish_filtered_gps=True):
    params = NavsatParams(use_odometry_yaw=True, zero_altitude=True,
                          publish_filtered_gps=publish_filtered_gps)
    if tf is None:
        tf = TfBuffer([parse_static_tf("base_link gps 0 0 0 0 0 0")])
    tf.add_dynamic("odom", "base_link", 1 * S, Transform(np.eye(3), np.zeros(3)))
    return NavsatNode(params, tf)


def test_use_odometry_yaw_cancels_odom_yaw_and_rotates_by_minus_convergence():
    nav = art_navsat()
    nav.odometry(odom(1 * S, 5.0, -2.0, 0.7))
    nav.fix(fix(1 * S, TEST1_LAT, TEST1_LON))
    assert nav.tick(1 * S) is None  # the first tick only builds the transform
    lat2, lon2 = TEST1_LAT + 1e-4, TEST1_LON + 2e-4
    nav.fix(fix(2 * S, lat2, lon2))
    nav.odometry(odom(2 * S, 6.0, -2.0, 0.7))
    out = nav.tick(2 * S)
    e0, n0, gamma, _, _ = lat_lon_to_utm(TEST1_LAT, TEST1_LON)
    e1, n1, _, _, _ = lat_lon_to_utm(lat2, lon2)
    expected = np.array([5.0, -2.0]) + matrix_from_rpy(0, 0, -gamma)[:2, :2] @ np.array([e1 - e0, n1 - n0])
    assert len(out) == 1
    np.testing.assert_allclose(out.position[0, :2], expected, atol=1e-6)
    assert out.position[0, 2] == 0.0  # zero_altitude
    assert out.stamp_ns[0] == 2 * S and out.child_frame_id == "" and out.frame_id == "odom"
    np.testing.assert_array_equal(out.orientation[0], [0, 0, 0, 1])
    assert not out.twist_covariance.any() and not out.linear_velocity.any()
    rot = matrix_from_rpy(0, 0, -gamma)
    np.testing.assert_allclose(
        out.pose_covariance[0].reshape(6, 6)[:3, :3], rot @ np.diag([1.0, 2.0, 3.0]) @ rot.T
    )


def test_output_is_origin_when_the_gps_frame_cannot_be_resolved():
    nav = art_navsat()
    nav.odometry(odom(1 * S, 5.0, -2.0, 0.0))
    nav.fix(fix(1 * S, TEST1_LAT, TEST1_LON, frame="/gps"))  # leading slash, as in test1.bag
    nav.tick(1 * S)
    nav.fix(fix(2 * S, TEST1_LAT + 1e-4, TEST1_LON, frame="/gps"))
    nav.odometry(odom(2 * S, 6.0, -2.0, 0.0))
    out = nav.tick(2 * S)
    np.testing.assert_array_equal(out.position[0], [0.0, 0.0, 0.0])
    assert nav.dropped["gps_tf_unavailable"] == 1


def test_at_most_one_output_per_tick_and_only_after_new_odometry():
    nav = art_navsat()
    nav.odometry(odom(1 * S, 0, 0, 0))
    nav.fix(fix(1 * S, TEST1_LAT, TEST1_LON))
    nav.tick(1 * S)  # builds the transform; flags untouched
    nav.fix(fix(2 * S, TEST1_LAT, TEST1_LON))
    assert nav.tick(2 * S) is not None  # new fix + the odometry seen before the transform
    nav.fix(fix(3 * S, TEST1_LAT, TEST1_LON))
    assert nav.tick(3 * S) is None  # no new odometry: cleared by the /gps/filtered side effect
    nav.odometry(odom(3 * S, 0, 0, 0))
    assert nav.tick(3 * S) is not None
    assert nav.tick(3 * S) is None  # the fix was consumed


def test_without_filtered_gps_the_odometry_flag_stays_set():
    nav = art_navsat(publish_filtered_gps=False)
    nav.odometry(odom(1 * S, 0, 0, 0))
    nav.fix(fix(1 * S, TEST1_LAT, TEST1_LON))
    nav.tick(1 * S)
    for k in range(2, 5):
        nav.fix(fix(k * S, TEST1_LAT, TEST1_LON))
        assert nav.tick(k * S) is not None


def test_unusable_fix_is_ignored():
    nav = art_navsat()
    nav.fix(fix(1 * S, TEST1_LAT, TEST1_LON, status=-1))
    nav.fix(fix(1 * S, float("nan"), TEST1_LON))
    assert not nav.has_gps and nav.dropped["unusable_fix"] == 2
