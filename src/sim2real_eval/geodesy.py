"""Local ENU <-> geodetic conversions (robot-side: Python 3.8, numpy only; no PROJ at run time).

Two earth models:

- ``wgs84`` (default): exact WGS-84 local tangent plane.  Geodetic -> ECEF is the textbook closed form;
  ECEF -> geodetic uses Heikkinen's (1982) exact closed-form solution, so no iteration is needed.
  ENU is the tangent plane at the datum (x east, y north, z up along the ellipsoid normal).
  pyproj is the oracle in the tests (agreement < 1 mm over kilometres).
- ``chrono_sphere``: what Project Chrono's GPS sensor does, for bit-compatibility studies:
  a sphere of radius R = 6 371 000 m, lat = lat0 + y/R·180/π, lon = lon0 + x/(R·cos(lat))·180/π with the
  *new* latitude, alt = alt0 + z.  Over ART scales (tens of metres) it differs from WGS-84 by
  millimetres (the sphere radius differs from the local meridian/prime-vertical radii by ~0.3 %).

Angles in degrees, heights in metres above the ellipsoid (or sphere).
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

import numpy as np

from .errors import UserError
from .limits import ALTITUDE

WGS84_A = 6378137.0  # semi-major axis, m
WGS84_F = 1.0 / 298.257223563  # flattening
WGS84_B = WGS84_A * (1.0 - WGS84_F)
WGS84_E2 = WGS84_F * (2.0 - WGS84_F)  # first eccentricity squared
WGS84_EP2 = (WGS84_A**2 - WGS84_B**2) / WGS84_B**2  # second eccentricity squared
CHRONO_EARTH_RADIUS = 6371000.0  # m, Chrono's spherical earth

MODELS = ("wgs84", "chrono_sphere")


class Datum(NamedTuple):
    """Origin of the local ENU frame: latitude, longitude (degrees), altitude (m)."""

    lat: float
    lon: float
    alt: float


# The paper's simulation reference point (Chrono GPS reference, UW-Madison area).
PAPER_SIM_DATUM = Datum(43.070, -89.400, 260.0)


def as_datum(value, source: str = "datum") -> Datum:
    """A Datum from a Datum, a [lat, lon, alt] sequence or a {lat, lon, alt} mapping."""
    if isinstance(value, Datum):
        return value
    if isinstance(value, dict):
        try:
            value = [value["lat"], value["lon"], value.get("alt", 0.0)]
        except KeyError as exc:
            raise UserError(f"{source}: missing key {exc.args[0]!r} (expected lat, lon, alt)") from None
    try:
        items = [float(v) for v in value]
    except (TypeError, ValueError):
        raise UserError(f"{source}: expected [lat, lon, alt], got {value!r}") from None
    if len(items) != 3 or not all(np.isfinite(items)):
        raise UserError(f"{source}: expected three finite numbers [lat, lon, alt], got {value!r}")
    if not (-90.0 <= items[0] <= 90.0 and -180.0 <= items[1] <= 360.0):
        raise UserError(f"{source}: latitude/longitude out of range: {value!r}")
    check_altitude(items[2], f"{source}: altitude")
    return Datum(*items)


def check_altitude(alt, where: str, lines=None) -> None:
    """Ellipsoidal heights within ``limits.ALTITUDE`` (-1 km .. 100 km), else a one-line UserError naming
    ``where`` and the first bad value (at ``lines[i]`` when given)."""
    values = np.atleast_1d(np.asarray(alt, dtype=float))
    bad = ~((values >= ALTITUDE.low) & (values <= ALTITUDE.high))
    if bad.any():
        i = int(np.argmax(bad))
        at = f" at line {lines[i]}" if lines is not None else (f" at row {i}" if values.size > 1 else "")
        raise UserError(f"{where}: {values[i]:g} m{at} is outside {ALTITUDE.low:g} .. {ALTITUDE.high:g} "
                        "m, the range of ellipsoidal heights accepted (docs/limits.md)")


def _check_model(model: str) -> None:
    if model not in MODELS:
        raise UserError(f"geodesy: unknown earth model {model!r}; expected one of {', '.join(MODELS)}")


def geodetic_to_ecef(lat, lon, alt) -> np.ndarray:
    """WGS-84 geodetic (deg, deg, m) -> ECEF (..., 3) metres.  N = a/√(1 − e² sin²φ)."""
    phi = np.radians(np.asarray(lat, dtype=float))
    lam = np.radians(np.asarray(lon, dtype=float))
    h = np.asarray(alt, dtype=float)
    sin_phi = np.sin(phi)
    n = WGS84_A / np.sqrt(1.0 - WGS84_E2 * sin_phi * sin_phi)
    x = (n + h) * np.cos(phi) * np.cos(lam)
    y = (n + h) * np.cos(phi) * np.sin(lam)
    z = (n * (1.0 - WGS84_E2) + h) * sin_phi
    return np.stack([x, y, z], axis=-1)


def ecef_to_geodetic(ecef) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ECEF (..., 3) -> WGS-84 (lat deg, lon deg, alt m), Heikkinen's exact closed form.

    Valid everywhere except within a few km of the earth's centre (irrelevant here).
    """
    ecef = np.asarray(ecef, dtype=float)
    x, y, z = ecef[..., 0], ecef[..., 1], ecef[..., 2]
    a, b, e2 = WGS84_A, WGS84_B, WGS84_E2
    # sqrt, not np.hypot: hypot is not correctly rounded (its last bit differs between CPUs for ~10 %
    # of inputs), and one ulp of p (~6.4e6 m) is 1e-9 m of altitude; sqrt is the same everywhere.
    p = np.sqrt(x * x + y * y)
    f_term = 54.0 * b * b * z * z
    g = p * p + (1.0 - e2) * z * z - e2 * (a * a - b * b)
    c = e2 * e2 * f_term * p * p / (g * g * g)
    s = np.cbrt(1.0 + c + np.sqrt(c * c + 2.0 * c))
    k = s + 1.0 / s + 1.0
    big_p = f_term / (3.0 * k * k * g * g)
    q = np.sqrt(1.0 + 2.0 * e2 * e2 * big_p)
    r0 = -(big_p * e2 * p) / (1.0 + q) + np.sqrt(
        0.5 * a * a * (1.0 + 1.0 / q) - big_p * (1.0 - e2) * z * z / (q * (1.0 + q)) - 0.5 * big_p * p * p
    )
    pe = p - e2 * r0
    u = np.sqrt(pe * pe + z * z)
    v = np.sqrt(pe * pe + (1.0 - e2) * z * z)
    z0 = b * b * z / (a * v)
    alt = u * (1.0 - b * b / (a * v))
    lat = np.degrees(np.arctan2(z + WGS84_EP2 * z0, p))
    lon = np.degrees(arctan2(y, x))  # x, y: strided columns (``arctan2``)
    return lat, lon, alt


def arctan2(y, x) -> np.ndarray:
    """``np.arctan2(y, x)`` with the same bits wherever its arrays lie in memory.

    numpy 1.26 on AVX-512 CPUs (measured with 1.26.4; numpy 2 does not do it) computes float64 arctan2
    (and exp, log, cbrt, the inverse trigonometric functions …) in one of two loops that differ in the
    last bit of about a quarter of the values: its vectorised loop, or a scalar one when the output seems
    to overlap an input.  For a strided input (a column of an (N, 3) array) that check spans step × N
    bytes, past the array's end, so an output that malloc happens to place right after the input's
    buffer took the scalar loop: the same seed gave GPS fixes differing in the last bit of the longitude
    now and then.  Contiguous inputs make the check exact.  Copies, not ``np.asarray(order="C")``: a
    one-element column (the node path's one fix per tick) counts as contiguous but keeps its stride of
    3 × 8 bytes, so asarray passed it through and numpy 1.24.4 still took the other loop for ~1 in
    1000 single fixes (streaming ≠ batch in the longitude's last bit)."""
    return np.arctan2(np.array(y, dtype=float, copy=True), np.array(x, dtype=float, copy=True))


def enu_rotation(datum: Datum) -> np.ndarray:
    """Rows are the E, N, U unit vectors in ECEF at the datum (so enu = R·(ecef − ecef0))."""
    phi = np.radians(datum.lat)
    lam = np.radians(datum.lon)
    sp, cp, sl, cl = np.sin(phi), np.cos(phi), np.sin(lam), np.cos(lam)
    return np.array([[-sl, cl, 0.0], [-sp * cl, -sp * sl, cp], [cp * cl, cp * sl, sp]])


def enu_to_geodetic(enu, datum, model: str = "wgs84") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local ENU (..., 3) metres -> (lat deg, lon deg, alt m), each of shape enu.shape[:-1]."""
    _check_model(model)
    datum = as_datum(datum)
    enu = np.asarray(enu, dtype=float)
    if enu.shape[-1:] != (3,):
        raise UserError(f"geodesy: ENU positions must have 3 columns, got shape {enu.shape}")
    if model == "chrono_sphere":
        lat = datum.lat + enu[..., 1] / CHRONO_EARTH_RADIUS * (180.0 / np.pi)
        lon = datum.lon + enu[..., 0] / (CHRONO_EARTH_RADIUS * np.cos(np.radians(lat))) * (180.0 / np.pi)
        return lat, lon, datum.alt + enu[..., 2]
    origin = geodetic_to_ecef(datum.lat, datum.lon, datum.alt)
    lat, lon, _ = ecef_to_geodetic(origin + enu @ enu_rotation(datum))
    # The height relative to the datum: the point's offset from the point at its own lat/lon and the
    # datum's height, along the ellipsoid normal there.  Both are small vectors (``_enu_offset``), so
    # a last-bit difference in sin/cos/hypot/cbrt moves the height by ulps of the offset, where
    # Heikkinen's u·(1 − b²/(a·v)), two ~6.4e6 m terms, moved it by ~1e-9 m (issue 34).  A lat/lon
    # error ε moves it by ~R·ε² only: the offset is along the normal.
    dlat, dlon = lat - datum.lat, _longitude_difference(lon, datum.lon)
    residual = enu - _enu_offset(datum, dlat, dlon, 0.0)
    phi0 = np.radians(datum.lat)
    phi, dlam = phi0 + np.radians(dlat), np.radians(dlon)
    sp0, cp0, sp, cp = np.sin(phi0), np.cos(phi0), np.sin(phi), np.cos(phi)
    normal = (cp * np.sin(dlam), cp0 * sp - sp0 * cp * np.cos(dlam), cp0 * cp * np.cos(dlam) + sp0 * sp)
    height = residual[..., 0] * normal[0] + residual[..., 1] * normal[1] + residual[..., 2] * normal[2]
    return lat, lon, datum.alt + height


def _longitude_difference(lon, lon0) -> np.ndarray:
    """lon − lon0 in degrees, within [−180, 180]: across the antimeridian lon is moved by 360° first
    (exact for a longitude near ±180°), so two nearby longitudes still differ exactly there."""
    lon = np.asarray(lon, dtype=float)
    diff = lon - lon0
    with np.errstate(invalid="ignore"):  # a NO_FIX's NaN (numpy < 1.20 warns comparing it)
        shift = np.where(diff > 180.0, -360.0, np.where(diff < -180.0, 360.0, 0.0))
    return np.where(shift != 0.0, (lon + shift) - lon0, diff)


def _enu_offset(datum: Datum, dlat, dlon, dalt) -> np.ndarray:
    """ENU (..., 3) at ``datum`` of the point (datum.lat + dlat, datum.lon + dlon, datum.alt + dalt).

    The same vector as R·(ecef(point) − ecef(datum)), written as sums of terms each about as small as
    the result, never as the difference of two ~6.4e6 m coordinates nor as a rotation of km-sized
    terms into a small "up": a last-bit difference in sin/cos then moves each component by ulps of
    the offset, not by ~1e-9 m.  With s = sin(Δφ/2), φm = φ0 + Δφ/2, A, B = N0 + h0, N0(1 − e²) + h0
    (A − B = e²·N0), r = (N + h)·cos φ (distance from the polar axis), l = sin(Δλ/2):
      east  = r·sin Δλ
      north = Δh·sin Δφ + ΔN·(cos φ0·(1 − e²)·sin φ − sin φ0·cos φ) + 2s·(B·cos(Δφ/2) + e²N0·sin φ0·sin φm)
              + 2·sin φ0·r·l²
      up    = Δh·cos Δφ + ΔN·(cos φ0·cos φ + sin φ0·(1 − e²)·sin φ) − 2B·s² − 2s·e²N0·cos φ0·sin φm
              − 2·cos φ0·r·l²
    where ΔN = N − N0 = a·e²·(sin φ − sin φ0)·(sin φ + sin φ0) / (w·w0·(w + w0)), w = √(1 − e² sin²φ),
    and sin φ − sin φ0 = 2s·cos φm (the datum's meridian plane, then E, N, U at the datum)."""
    a, e2 = WGS84_A, WGS84_E2
    dphi = np.radians(np.asarray(dlat, dtype=float))
    dlam = np.radians(np.asarray(dlon, dtype=float))
    dalt = np.asarray(dalt, dtype=float)
    phi0 = np.radians(datum.lat)
    sp0, cp0 = np.sin(phi0), np.cos(phi0)
    phi = phi0 + dphi
    sp, cp = np.sin(phi), np.cos(phi)
    s = np.sin(0.5 * dphi)
    sm = np.sin(phi0 + 0.5 * dphi)
    w0 = np.sqrt(1.0 - e2 * sp0 * sp0)
    w = np.sqrt(1.0 - e2 * sp * sp)
    n0 = a / w0
    d_n = a * e2 * (2.0 * s * np.cos(phi0 + 0.5 * dphi)) * (sp + sp0) / (w * w0 * (w + w0))
    b_term = n0 * (1.0 - e2) + datum.alt
    radius = (a / w + datum.alt + dalt) * cp
    l2 = np.sin(0.5 * dlam) ** 2
    east = radius * np.sin(dlam)
    north = (dalt * np.sin(dphi) + d_n * (cp0 * (1.0 - e2) * sp - sp0 * cp)
             + 2.0 * s * (b_term * np.cos(0.5 * dphi) + e2 * n0 * sp0 * sm) + 2.0 * sp0 * radius * l2)
    up = (dalt * np.cos(dphi) + d_n * (cp0 * cp + sp0 * (1.0 - e2) * sp) - 2.0 * b_term * s * s
          - 2.0 * s * e2 * n0 * cp0 * sm - 2.0 * cp0 * radius * l2)
    return np.stack([east, north, up], axis=-1)


def geodetic_to_enu(lat, lon, alt, datum, model: str = "wgs84") -> np.ndarray:
    """(lat deg, lon deg, alt m) -> local ENU (..., 3) metres at ``datum`` (inverse of enu_to_geodetic)."""
    _check_model(model)
    datum = as_datum(datum)
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    alt = np.asarray(alt, dtype=float)
    if model == "chrono_sphere":
        north = (lat - datum.lat) * (np.pi / 180.0) * CHRONO_EARTH_RADIUS
        east = (lon - datum.lon) * (np.pi / 180.0) * CHRONO_EARTH_RADIUS * np.cos(np.radians(lat))
        return np.stack([east, north, alt - datum.alt], axis=-1)
    return _enu_offset(datum, lat - datum.lat, _longitude_difference(lon, datum.lon), alt - datum.alt)
