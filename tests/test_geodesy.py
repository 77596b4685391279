"""Geodesy: exact WGS-84 ENU <-> geodetic against pyproj, and Chrono's sphere against hand values."""

import math

import numpy as np
import pyproj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import geodesy
from sim2real_eval.errors import UserError

DATUM = geodesy.PAPER_SIM_DATUM


def pyproj_enu(lat, lon, alt, datum):
    """pyproj's own topocentric (ENU) conversion: the independent oracle."""
    pipeline = (
        f"+proj=pipeline +step +proj=cart +ellps=WGS84 +step +proj=topocentric +ellps=WGS84 "
        f"+lat_0={datum.lat} +lon_0={datum.lon} +h_0={datum.alt}"
    )
    transformer = pyproj.Transformer.from_pipeline(pipeline)
    return np.stack(transformer.transform(lon, lat, alt), axis=-1)


def test_wgs84_matches_pyproj_below_a_millimetre():
    rng = np.random.default_rng(1)
    enu = rng.uniform(-5000.0, 5000.0, (2000, 3)) * [1.0, 1.0, 0.02]
    lat, lon, alt = geodesy.enu_to_geodetic(enu, DATUM)
    assert np.abs(pyproj_enu(lat, lon, alt, DATUM) - enu).max() < 1e-3
    assert np.abs(geodesy.geodetic_to_enu(lat, lon, alt, DATUM) - enu).max() < 1e-6


@settings(max_examples=30, deadline=None)
@given(st.floats(-80.0, 80.0), st.floats(-179.0, 179.0), st.floats(-100.0, 3000.0))
def test_wgs84_any_datum_round_trip_and_oracle(lat0, lon0, alt0):
    datum = geodesy.Datum(lat0, lon0, alt0)
    enu = np.array([[30.0, -20.0, 1.5], [-400.0, 250.0, -3.0]])
    lat, lon, alt = geodesy.enu_to_geodetic(enu, datum)
    assert np.abs(pyproj_enu(lat, lon, alt, datum) - enu).max() < 1e-3
    assert np.abs(geodesy.geodetic_to_enu(lat, lon, alt, datum) - enu).max() < 1e-6


def test_ecef_to_geodetic_closed_form_matches_pyproj():
    to_ecef = pyproj.Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)
    lat = np.array([0.0, 43.07, -33.9, 89.0, 60.0])
    lon = np.array([0.0, -89.4, 151.2, 10.0, -170.0])
    alt = np.array([0.0, 260.0, -30.0, 1000.0, 8000.0])
    ecef = np.stack(to_ecef.transform(lon, lat, alt), axis=-1)
    np.testing.assert_allclose(geodesy.geodetic_to_ecef(lat, lon, alt), ecef, atol=1e-6)
    got_lat, got_lon, got_alt = geodesy.ecef_to_geodetic(ecef)
    np.testing.assert_allclose(got_lat, lat, atol=1e-10)
    np.testing.assert_allclose(got_lon, lon, atol=1e-10)
    np.testing.assert_allclose(got_alt, alt, atol=1e-6)


def test_origin_maps_to_datum():
    lat, lon, alt = geodesy.enu_to_geodetic(np.zeros(3), DATUM)
    assert (float(lat), float(lon), float(alt)) == pytest.approx(tuple(DATUM), abs=1e-9)
    # The height is the datum's plus a term that vanishes at the origin: exact, on any CPU (issue 34:
    # arm64 gave 260.0000000018714 when it came from a difference of two ~6.4e6 m terms)
    assert float(alt) == DATUM.alt


@settings(max_examples=50, deadline=None)
@given(st.floats(-89.9, 89.9), st.floats(-180.0, 180.0), st.floats(-500.0, 10000.0))
def test_any_datum_origin_keeps_its_altitude_to_the_last_bit(lat0, lon0, alt0):
    _, _, alt = geodesy.enu_to_geodetic(np.zeros(3), geodesy.Datum(lat0, lon0, alt0))
    assert abs(float(alt) - alt0) <= np.spacing(max(1.0, abs(alt0)))


LONG = np.longdouble
EXTENDED = np.finfo(LONG).eps < 1e-18  # x86 80-bit or quad precision; plain double elsewhere


def _ecef_extended(lat, lon, alt):
    """The textbook geodetic -> ECEF in long double (64-bit or 113-bit mantissa): the oracle."""
    pi = 4 * np.arctan(LONG(1))
    a, f = LONG(geodesy.WGS84_A), LONG(1) / LONG(298.257223563)
    e2 = f * (2 - f)
    phi, lam = np.asarray(lat, dtype=LONG) * pi / 180, np.asarray(lon, dtype=LONG) * pi / 180
    h = np.asarray(alt, dtype=LONG)
    n = a / np.sqrt(1 - e2 * np.sin(phi) ** 2)
    xyz = np.stack([(n + h) * np.cos(phi) * np.cos(lam), (n + h) * np.cos(phi) * np.sin(lam),
                    (n * (1 - e2) + h) * np.sin(phi)], axis=-1)
    up = np.stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)], axis=-1)
    return xyz, up


def _enu_axes_extended(datum):
    pi = 4 * np.arctan(LONG(1))
    phi, lam = LONG(datum.lat) * pi / 180, LONG(datum.lon) * pi / 180
    sp, cp, sl, cl = np.sin(phi), np.cos(phi), np.sin(lam), np.cos(lam)
    return np.array([[-sl, cl, 0], [-sp * cl, -sp * sl, cp], [cp * cl, cp * sl, sp]], dtype=LONG)


@pytest.mark.skipif(not EXTENDED, reason="long double is plain double here: no extended-precision oracle")
def test_enu_conversions_match_an_extended_precision_oracle_to_picometres():
    """Against R·(ecef − ecef0) in long double: the ENU offset of given lat/lon/alt, and the height of
    enu_to_geodetic (the oracle point's offset from its answer, along the normal) within 1e-11 m;
    the ECEF route in double was off by ~3e-9 m in both."""
    rng = np.random.default_rng(34)
    for lat0 in np.arange(-80.0, 81.0, 10.0):
        lon0 = 179.99 if lat0 == 0.0 else float(rng.uniform(-180.0, 180.0))  # (0°: across the antimeridian)
        datum = geodesy.Datum(lat0, lon0, float(rng.choice([-500.0, 0.0, 3e3])))
        enu = rng.uniform(-1.0, 1.0, (40, 3)) * [5000.0, 5000.0, 200.0]
        lat, lon, alt = geodesy.enu_to_geodetic(enu, datum)
        origin, _ = _ecef_extended(datum.lat, datum.lon, datum.alt)
        axes = _enu_axes_extended(datum)
        answer, normal = _ecef_extended(lat, lon, alt)
        exact_enu = (answer - origin) @ axes.T
        assert np.abs(geodesy.geodetic_to_enu(lat, lon, alt, datum) - exact_enu).max() < 1e-11
        along_normal = ((origin + enu.astype(LONG) @ axes - answer) * normal).sum(axis=-1)
        assert np.abs(along_normal).max() < 1e-11
        # lat/lon: the ECEF route's precision, ~1 nm (the horizontal part of the same difference)
        assert np.abs(exact_enu - enu).max() < 1e-8


def _sensitivity_harness():
    from fixtures.benchmarks import load_benchmark

    return load_benchmark("geodesy_sensitivity")


def test_a_last_bit_difference_in_any_elementary_function_moves_every_field_by_ulps():
    """Another CPU, played here: every output of sin, cos, arctan2, hypot, cbrt, … moved by ±1 ulp
    (benchmarks/geodesy_sensitivity.py).  Every field moves by < 1e-13 of max(1, |value|) (the
    promise is 1e-12); the altitude used to move by 3e-11 of itself (5.6e-9 m)."""
    harness = _sensitivity_harness()
    rng = np.random.default_rng(3)
    datums = [geodesy.Datum(lat0, lon0, alt0) for lat0, lon0, alt0 in
              [(43.07, -89.4, 260.0), (-33.9, 151.2, 0.4), (71.0, 25.8, -30.0), (0.1, -179.99, 4000.0)]]
    enu = np.concatenate([np.zeros((1, 3)), rng.uniform(-1.0, 1.0, (30, 3)) * [3000.0, 3000.0, 100.0]])
    geodetic = [geodesy.enu_to_geodetic(enu, datum) for datum in datums]
    ecef = np.concatenate([geodesy.geodetic_to_ecef(*g) for g in geodetic])
    runs = {
        ("lat", "lon", "alt"): lambda: [np.stack(geodesy.enu_to_geodetic(enu, d)) for d in datums],
        ("east", "north", "up"): lambda: [geodesy.geodetic_to_enu(*g, d).T for g, d in zip(geodetic, datums)],
        ("ecef lat", "ecef lon", "ecef alt"): lambda: [np.stack(geodesy.ecef_to_geodetic(ecef))],
    }
    for fields, run in runs.items():
        worst = harness.measure(run, fields, harness.NOT_CORRECTLY_ROUNDED, trials=4)
        for field, (_, scaled, _) in worst.items():
            assert scaled < 1e-13, (field, worst)


def test_chrono_sphere_hand_values():
    # 100 m north: Δlat = 100 / 6371000 rad = 1.5696123057604772e-05 rad = 8.993216059187306e-04 deg.
    lat, lon, alt = geodesy.enu_to_geodetic([0.0, 100.0, 2.0], DATUM, "chrono_sphere")
    assert float(lat) == pytest.approx(43.070 + 8.993216059187306e-04, abs=1e-13)
    assert float(lon) == pytest.approx(-89.400, abs=1e-13)
    assert float(alt) == pytest.approx(262.0)
    # 100 m east at lat 43.070: Δlon = 100 / (6371000·cos 43.070°) rad; cos 43.070° = 0.730520
    lat, lon, _ = geodesy.enu_to_geodetic([100.0, 0.0, 0.0], DATUM, "chrono_sphere")
    expected = 100.0 / (6371000.0 * math.cos(math.radians(43.070))) * 180.0 / math.pi
    assert float(lon) == pytest.approx(-89.400 + expected, abs=1e-13)
    assert expected == pytest.approx(1.2310706e-03, rel=1e-6)
    # The new latitude enters the longitude scale (Chrono's order of operations).
    lat, lon, _ = geodesy.enu_to_geodetic([100.0, 100.0, 0.0], DATUM, "chrono_sphere")
    new_lat = 43.070 + 8.993216059187306e-04
    expected = 100.0 / (6371000.0 * math.cos(math.radians(new_lat))) * 180.0 / math.pi
    assert float(lon) == pytest.approx(-89.400 + expected, abs=1e-13)


def test_chrono_sphere_round_trip():
    enu = np.random.default_rng(2).uniform(-100.0, 100.0, (50, 3))
    lat, lon, alt = geodesy.enu_to_geodetic(enu, DATUM, "chrono_sphere")
    np.testing.assert_allclose(geodesy.geodetic_to_enu(lat, lon, alt, DATUM, "chrono_sphere"), enu, atol=1e-8)


def test_sphere_vs_wgs84_difference_is_scale_only():
    """Sphere vs ellipsoid: the fix of a point 30 m away lands ~0.1–0.3 % off (cm-level), 1 m: mm-level."""
    for dist, bound in ((1.0, 0.003), (30.0, 0.09)):
        enu = np.array([[dist, 0.0, 0.0], [0.0, dist, 0.0]])
        lat, lon, alt = geodesy.enu_to_geodetic(enu, DATUM, "chrono_sphere")
        back = geodesy.geodetic_to_enu(lat, lon, alt, DATUM)  # read as WGS-84
        error = np.linalg.norm(back - enu, axis=1)
        assert error.max() < bound
        assert error.min() > 1e-4 * dist  # the difference is real, not zero
    # Hand-computed scale at 43.07°, h = 260 m: east (N + h)/R, north (M + h)/R with
    # N = a/√(1−e² sin²φ) (prime vertical), M = a(1−e²)/(1−e² sin²φ)^1.5 (meridian).
    s2 = math.sin(math.radians(43.070)) ** 2
    n_radius = 6378137.0 / math.sqrt(1 - 0.00669437999014 * s2)
    m_radius = 6378137.0 * (1 - 0.00669437999014) / (1 - 0.00669437999014 * s2) ** 1.5
    lat, lon, alt = geodesy.enu_to_geodetic([[30.0, 0.0, 0.0], [0.0, 30.0, 0.0]], DATUM, "chrono_sphere")
    back = geodesy.geodetic_to_enu(lat, lon, alt, DATUM)
    assert back[0, 0] == pytest.approx(30.0 * (n_radius + 260.0) / 6371000.0, abs=1e-5)
    assert back[1, 1] == pytest.approx(30.0 * (m_radius + 260.0) / 6371000.0, abs=1e-5)


def test_bad_inputs():
    with pytest.raises(UserError, match="unknown earth model"):
        geodesy.enu_to_geodetic([0.0, 0.0, 0.0], DATUM, "flat")
    with pytest.raises(UserError, match="datum"):
        geodesy.as_datum([1.0, 2.0])
    with pytest.raises(UserError, match="lat"):
        geodesy.as_datum({"lon": 1.0})
    with pytest.raises(UserError, match="3 columns"):
        geodesy.enu_to_geodetic(np.zeros((4, 2)), DATUM)
    assert geodesy.as_datum({"lat": 1, "lon": 2, "alt": 3}) == geodesy.Datum(1.0, 2.0, 3.0)


def _contiguous_only_arctan2(monkeypatch):
    """np.arctan2, refusing strided inputs (installed for the test's duration)."""
    real = np.arctan2

    def checked(y, x, *args, **kwargs):
        for value in (y, x):
            # compact strides, not just the flag: a one-element column is "contiguous" with stride 24
            value = np.asarray(value)
            assert value.ndim == 0 or value.strides == np.empty(value.shape).strides, "a strided input"
        return real(y, x, *args, **kwargs)

    monkeypatch.setattr(np, "arctan2", checked)


def test_longitudes_and_headings_are_computed_from_contiguous_arrays(monkeypatch):
    # numpy 1.26 (AVX-512) took another loop for a strided input when the output landed just past its
    # buffer: the same seed's fixes differed in the last bit of the longitude now and then
    from sim2real_eval import sbg

    rng = np.random.default_rng(4)
    enu = rng.normal(scale=50.0, size=(300, 3))
    velocity = rng.normal(size=(300, 3))
    expected = geodesy.enu_to_geodetic(enu, (43.07, -89.41, 263.0))
    heading = sbg.heading_from_gps_vel(velocity, min_speed=0.5)
    _contiguous_only_arctan2(monkeypatch)
    for got, want in zip(geodesy.enu_to_geodetic(enu, (43.07, -89.41, 263.0)), expected):
        assert np.array_equal(got, want)
    assert np.array_equal(sbg.heading_from_gps_vel(velocity, min_speed=0.5), heading, equal_nan=True)
    # the node path: one fix per tick, a one-row (1, 3) array (numpy 1.24.4 differed ~1 in 1000)
    for i in range(5):
        for got, want in zip(geodesy.enu_to_geodetic(enu[i:i + 1], (43.07, -89.41, 263.0)), expected):
            assert np.array_equal(got, want[i:i + 1])


def test_arctan2_of_contiguous_inputs_does_not_depend_on_where_the_output_lies():
    # What geodesy.arctan2 relies on, forced: the output 8 bytes past its input (malloc's size field
    # between two blocks).  There numpy 1.26.4 on AVX-512 switches loops for a strided column, whose
    # overlap check reaches past its buffer, but not for a contiguous array.
    rng = np.random.default_rng(5)
    n = 307
    east_north = rng.normal(scale=1e3, size=(n, 2)) + np.array([4.9e4, -4.67e6])
    reference = geodesy.arctan2(east_north[:, 1], east_north[:, 0])
    memory = np.zeros(3 * n + 8)
    x, y = memory[:n], memory[n:2 * n]
    x[:], y[:] = east_north[:, 0], east_north[:, 1]
    for gap in (1, 2, 3):
        out = memory[2 * n + gap:3 * n + gap]
        np.arctan2(y, x, out=out)
        assert np.array_equal(out, reference), gap
