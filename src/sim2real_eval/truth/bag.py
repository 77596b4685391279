"""The truth readers: one ``GroundTruth`` series from whatever reference a recorded bag carries.

Sources (``source=``), tried in this order by ``"auto"``:

- ``odometry``: nav_msgs/Odometry (simulators; ``/ground_truth/odom``).  Pose as given (ENU frame),
  twist in the child (body) frame by ROS convention (``odom_twist_frame="world"`` for simulators that
  publish world-frame twist).  Body rates are the twist's angular velocity.
- ``sbg_ekf``: sbg_driver SbgEkfNav (+ SbgEkfQuat): geodetic position -> ENU at the datum, NED
  velocity -> ENU, attitude from SbgEkfQuat (slerped onto the navigation stamps).  Body rates from
  the smoothed attitude.  Without SbgEkfQuat the attitude comes from the velocity heading, as below.
- ``sbg_gps``: sbg_driver SbgGpsVel (+ SbgGpsPos) only, as in the ART Feb-2024 bags (~5 Hz):
  velocity NED -> ENU; position from SbgGpsPos (linear interpolation onto the velocity stamps) or,
  without it, the trapezoid integral of the velocity from the origin.  Attitude is planar: roll =
  pitch = 0, yaw = direction of the horizontal velocity, held while slower than ``min_speed`` (and
  back-filled before the first fast sample).  Yaw rate from the smoothed, unwrapped yaw.
- ``twist``: geometry_msgs/TwistStamped (body-frame velocity and yaw rate): yaw and position are
  integrated (trapezoid) from zero; planar.

Time is the messages' header stamps (``clock="header"``, the data clock) or the bag receive times
(``clock="receive"``).  Stamps going backwards are a UserError naming the topic; exact duplicates are
dropped (first kept).

Derivatives (world acceleration -> specific force, yaw rate / body rates from attitude) use one
documented smoothing differentiator, ``smooth_derivative``: a 2nd-order Butterworth low-pass applied
forwards and backwards (zero phase, so **no lag**; effective 4th order), then second-order centred
differences on the true, possibly uneven, stamps (``truth.time_derivative``).  The price of zero phase
is edge effects over roughly one filter time constant (~1/cutoff) at both ends.  Cut-off ``cutoff_hz``
(default 5 Hz), capped at 0.8 × the Nyquist rate of the series.

The filter is written here (``butterworth2_lowpass``, ``step_state``, ``forward_backward``), not taken
from scipy.signal, whose import costs ~1.1 s CPU per process (it loads scipy.stats too): the same
arithmetic as scipy.signal's ``butter(2, w)`` + ``filtfilt(b, a, x, padlen=...)`` (odd extension),
in the same order, so the numbers are scipy's bit for bit (tests/test_truth_filter.py).  Short series
run the recursion as plain Python; long ones (an hour of 100 Hz IMU) compiled by numba.

Returned datum: the geodetic origin of the ENU frame (``geodesy.Datum``: first position sample,
ellipsoidal height) for sbg sources; the caller's ``datum`` (or None) for odometry/twist sources.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import geodesy, rotations, sbg
from .. import message_fields as F
from ..bags.columns import read_topic
from ..bags.reader import require_topic
from ..errors import UserError
from . import GroundTruth, body_rates_from_orientation, time_derivative

SOURCES = ("auto", "odometry", "sbg_ekf", "sbg_gps", "twist")

DEFAULT_TOPICS = {
    "odometry": "/ground_truth/odom",
    "ekf_nav": "/sbg/ekf_nav",
    "ekf_quat": "/sbg/ekf_quat",
    "gps_vel": "/sbg/gps_vel",
    "gps_pos": "/sbg/gps_pos",
    "twist": "/ground_truth/twist",
}
ROLE_TABLES = {"odometry": F.ODOMETRY, "ekf_nav": F.SBG_EKF_NAV, "ekf_quat": F.SBG_EKF_QUAT,
               "gps_vel": F.SBG_GPS_VEL, "gps_pos": F.SBG_GPS_POS, "twist": F.TWIST_STAMPED}
ROLE_TYPES = {role: table.msgtype for role, table in ROLE_TABLES.items()}


def _may_be_truth(role: str, topic: str) -> bool:
    """sbg topics are the INS reference wherever they live; a generic Odometry / TwistStamped topic is
    taken as truth only when its name says so (wheel odometry, estimates and commands are not truth)."""
    return role not in ("odometry", "twist") or "truth" in topic

DEFAULT_CUTOFF_HZ = 5.0


# --- the smoothing differentiator -------------------------------------------------------------------

def butterworth2_lowpass(normalised: float) -> tuple:
    """(b, a): the 2nd-order digital Butterworth low-pass with its -3 dB point at ``normalised`` × the
    Nyquist frequency (0 < normalised < 1), by the bilinear transform with pre-warping.

    The analogue prototype's poles -exp(±iπ/4) (unit cut-off) are scaled to the pre-warped cut-off
    ω = 4·tan(π·normalised/2) (sample rate 2, so the bilinear map is s -> 4·(z - 1)/(z + 1)) and mapped
    to z = (4 + s)/(4 - s); the two zeros of the analogue low-pass at infinity go to z = -1, and the gain
    makes |H(1)| = 1: b = ω²/((4 - s₁)(4 - s₂))·(1, 2, 1), a = (1, -(z₁ + z₂), z₁z₂).  Written with
    numpy's complex arithmetic in the order that gives scipy.signal.butter(2, normalised)'s bits.
    """
    warped = 4.0 * np.tan(np.pi * float(normalised) / 2.0)
    poles = warped * -np.exp(1j * np.pi * np.array([-1.0, 1.0]) / 4.0)
    z_poles = (4.0 + poles) / (4.0 - poles)
    gain = warped ** 2 * np.real(1.0 / np.prod(4.0 - poles))
    a = np.array([1.0, np.real(-z_poles[0] - z_poles[1]), np.real(z_poles[0] * z_poles[1])])
    return gain * np.array([1.0, 2.0, 1.0]), a


def step_state(b, a) -> np.ndarray:
    """The state (z₁, z₂) of the 2nd-order filter ``forward_backward`` runs (direct form II transposed,
    a₀ = 1) once it has settled on a unit step: y = z₁ + b₀x, z₁' = z₂ + b₁x - a₁y, z₂' = b₂x - a₂y with
    x = 1 and z' = z gives [[1 + a₁, -1], [a₂, 1]]·z = (b₁ - a₁b₀, b₂ - a₂b₀).  Starting from
    x₀·step_state, a series that begins flat at x₀ has no start-up transient (scipy.signal.lfilter_zi;
    solved with np.linalg.solve as it does, so the bits are the same)."""
    b = np.asarray(b, dtype=float)
    a = np.asarray(a, dtype=float)
    matrix = np.array([[1.0 + a[1], -1.0], [a[2], 1.0]])
    return np.linalg.solve(matrix, b[1:] - a[1:] * b[0])


def _forward_backward_1d(x, b0, b1, b2, a1, a2, s1, s2):
    """In place: ``x`` (a list, or a 1-D float array when compiled) filtered forwards, then the result
    backwards, each pass started from the step state (s1, s2) × its first input.  The operations and
    their order are scipy.signal.lfilter's for a₀ = 1 (so the bits are its own)."""
    m = len(x)
    z1 = s1 * x[0]
    z2 = s2 * x[0]
    for i in range(m):
        xi = x[i]
        y = z1 + b0 * xi
        z1 = z2 + b1 * xi - a1 * y
        z2 = b2 * xi - a2 * y
        x[i] = y
    z1 = s1 * x[m - 1]
    z2 = s2 * x[m - 1]
    for i in range(m - 1, -1, -1):
        xi = x[i]
        y = z1 + b0 * xi
        z1 = z2 + b1 * xi - a1 * y
        z2 = b2 * xi - a2 * y
        x[i] = y
    return x


COMPILE_FROM = 100_000  # padded samples × channels from which the recursion is compiled (numba)
_compiled: list = []    # [the numba-compiled _forward_backward_1d, or None without numba]


def _compiled_forward_backward():
    """``_forward_backward_1d`` compiled by numba (cached on disk), or None when numba is not installed
    or disabled (NUMBA_DISABLE_JIT=1).  Imported and compiled at the first long series only: importing
    numba costs ~0.3 s and its first compilation or cache load in a process ~0.5 s more, ~100 000
    samples of the plain-Python recursion."""
    if not _compiled:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is installed wherever truth/bag.py runs
            numba = None
        if numba is None or numba.config.DISABLE_JIT:
            _compiled.append(None)
        else:
            try:
                _compiled.append(numba.njit(cache=True)(_forward_backward_1d))
            except RuntimeError as exc:  # numba finds no writable cache directory: compile each time
                if "no locator available" not in str(exc):
                    raise
                _compiled.append(numba.njit(_forward_backward_1d))
    return _compiled[0]


def forward_backward(b, a, x, padlen: int) -> np.ndarray:
    """``x`` (N, ...) filtered by the 2nd-order filter (b, a) (a₀ = 1) forwards and then backwards along
    axis 0: zero phase, gain |H|².  As scipy.signal.filtfilt(b, a, x, axis=0, padlen=padlen) (its
    default odd extension), bit for bit: each channel is extended by ``padlen`` (< N) samples at both
    ends, odd about the end samples (2·x₀ - x_k), each pass starts from its first input × ``step_state``,
    and the padding is cut off again."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if not 0 <= padlen < n:
        raise ValueError(f"padlen {padlen} must be at least 0 and less than the series' length {n}")
    flat = x.reshape(n, -1)
    extended = np.concatenate([2.0 * flat[:1] - flat[padlen:0:-1], flat,
                               2.0 * flat[-1:] - flat[-2:-padlen - 2:-1]])
    channels = np.ascontiguousarray(extended.T)
    coefficients = [float(v) for v in (b[0], b[1], b[2], a[1], a[2], *step_state(b, a))]
    compiled = _compiled_forward_backward() if channels.size >= COMPILE_FROM else None
    for channel in channels:
        if compiled is not None:
            compiled(channel, *coefficients)
        else:
            channel[:] = _forward_backward_1d(channel.tolist(), *coefficients)
    return channels[:, padlen:padlen + n].T.reshape(x.shape)


def zero_phase_lowpass(t, values, cutoff_hz: float = DEFAULT_CUTOFF_HZ) -> np.ndarray:
    """Zero-phase low-pass of ``values`` (N, ...) sampled at times ``t`` (s): 2nd-order Butterworth
    (``butterworth2_lowpass``) run forwards and backwards (``forward_backward``).  The sample rate is
    taken as 1/median(Δt); the cut-off is capped at 0.8 × Nyquist.  Edges: the straight line through the
    first and last samples is removed before filtering and added back after (so lines pass exactly),
    and the odd-extension padding spans six cut-off periods so the start-up transient dies out before
    the data.  Series too short to filter (≤ 6 samples) are returned unchanged.
    """
    t = np.asarray(t, dtype=float)
    values = np.asarray(values, dtype=float)
    if len(t) < 2:
        return values.copy()
    rate = 1.0 / float(np.median(np.diff(t)))
    normalised = min(cutoff_hz / (0.5 * rate), 0.8)
    b, a = butterworth2_lowpass(normalised)
    n = len(t)
    if n <= 2 * max(len(a), len(b)):
        return values.copy()
    shape = (n,) + (1,) * (values.ndim - 1)
    fraction = ((t - t[0]) / (t[-1] - t[0])).reshape(shape)
    line = values[:1] + (values[-1:] - values[:1]) * fraction
    effective_cutoff_hz = normalised * 0.5 * rate
    padlen = min(n - 1, 3 * max(len(a), len(b)) + int(np.ceil(6.0 * rate / effective_cutoff_hz)))
    return line + forward_backward(b, a, values - line, padlen)


def smooth_derivative(t, values, cutoff_hz: float = DEFAULT_CUTOFF_HZ) -> np.ndarray:
    """d(values)/dt: zero-phase low-pass (``zero_phase_lowpass``) then ``time_derivative`` (centred
    differences, np.gradient's) on the real stamps.

    Lag: none (zero phase).  Interior error for a smooth signal: O(Δt²) from the centred difference
    plus the attenuation of content above ``cutoff_hz``.  Ends: one-sided differences and filter
    edge effects over ~1/cutoff_hz seconds.
    """
    t = np.asarray(t, dtype=float)
    return time_derivative(t, zero_phase_lowpass(t, values, cutoff_hz))


def smooth_body_rates(t, orientation, cutoff_hz: float = DEFAULT_CUTOFF_HZ) -> np.ndarray:
    """Body angular velocity from a quaternion series: sign-continuous quaternions, zero-phase
    low-pass per component, renormalise, then ω = 2·vec(q* ⊗ q̇) (``truth.body_rates_from_orientation``)."""
    q = rotations.normalize(orientation).copy()
    flips = np.cumsum(np.r_[0, (np.sum(q[1:] * q[:-1], axis=1) < 0).astype(int)]) % 2
    q[flips == 1] *= -1.0
    return body_rates_from_orientation(t, rotations.normalize(zero_phase_lowpass(t, q, cutoff_hz)))


# --- reading topics -----------------------------------------------------------------------------------

def _resolve_topic(reader, role: str, topics: dict, required: bool) -> str | None:
    """Topic for ``role``: explicit > default name > the single plausible topic of the role's type."""
    msgtype = ROLE_TYPES[role]
    if role in topics:
        topic = topics[role]
        require_topic(reader, topic, msgtype, role, what="ground-truth topic")
        return topic
    default = DEFAULT_TOPICS[role]
    info = reader.topics.get(default)
    if info is not None and info.msgtype == msgtype:
        return default
    candidates = sorted(topic for topic, info in reader.topics.items()
                        if info.msgtype == msgtype and _may_be_truth(role, topic))
    if len(candidates) == 1:
        return candidates[0]
    if len(candidates) > 1:
        raise UserError(f"{reader.path}: several {msgtype} topics ({', '.join(candidates)}); "
                        f"name the {role} topic explicitly")
    if required:
        raise UserError(f"{reader.path}: no {msgtype} topic for ground truth ({role}; expected {default})")
    return None


def _read(reader, topic: str, clock: str, role: str, names: tuple) -> tuple:
    """(times ns, {column: array}) of one topic (the role's field table), checked: stamps never go
    backwards; duplicates dropped."""
    columns = read_topic(reader, topic, ROLE_TABLES[role], ("stamp_ns",) + names)
    stamps = columns["stamp_ns"] if clock == "header" else columns["receive_ns"]
    steps = np.diff(stamps)
    if (steps < 0).any():
        i = int(np.argmax(steps < 0)) + 1
        raise UserError(f"{reader.path}: topic {topic}: timestamps go backwards at message {i} "
                        f"({stamps[i - 1]} ns then {stamps[i]} ns)")
    keep = np.r_[True, steps > 0]
    if keep.sum() < 2:
        raise UserError(f"{reader.path}: topic {topic}: need at least 2 distinct timestamps for ground truth")
    return stamps[keep], {name: columns[name][keep] for name in names}


def _datum(given, lat, lon, height) -> geodesy.Datum:
    """The caller's datum, else the first sbg position (ellipsoidal height)."""
    if given is not None:
        return geodesy.as_datum(given, "datum")
    return geodesy.Datum(float(lat[0]), float(lon[0]), float(height[0]))


# --- the sources --------------------------------------------------------------------------------------

def _finish(t, position, orientation, velocity, angular_velocity, cutoff_hz, source: str) -> GroundTruth:
    acceleration = smooth_derivative(t, velocity, cutoff_hz)
    truth = GroundTruth.from_kinematics(t, position, orientation, velocity, angular_velocity, acceleration)
    return truth.validate(source)


def planar_attitude(t, velocity, min_speed: float, cutoff_hz: float, source: str):
    """Yaw from the horizontal velocity direction (held when slow); yaw rate from its smoothed derivative."""
    # Held through slow stretches, back-filled before the first fast sample (sbg.heading_from_gps_vel).
    heading = sbg.heading_from_gps_vel(velocity, min_speed)
    if np.isnan(heading).any():
        raise UserError(f"{source}: never faster than {min_speed} m/s, so the heading is unknown "
                        "(give an attitude topic, e.g. SbgEkfQuat)")
    yaw = np.unwrap(heading)
    yaw_rate = smooth_derivative(t, yaw, cutoff_hz)
    zeros = np.zeros_like(yaw)
    return rotations.from_yaw(yaw), np.stack([zeros, zeros, yaw_rate], axis=1)


def _from_odometry(reader, topics, clock, cutoff_hz, twist_frame):
    topic = _resolve_topic(reader, "odometry", topics, required=True)
    stamps, odom = _read(reader, topic, clock, "odometry",
                         ("position", "orientation", "linear_velocity", "angular_velocity"))
    t = stamps / 1e9
    position = odom["position"]
    orientation = rotations.normalize(odom["orientation"])
    linear = odom["linear_velocity"]
    angular = odom["angular_velocity"]
    if twist_frame == "world":
        velocity = linear
        angular = rotations.rotate_inverse(orientation, angular)
    else:
        velocity = rotations.rotate(orientation, linear)
    return _finish(t, position, orientation, velocity, angular, cutoff_hz, f"{reader.path}: {topic}")


def _from_sbg_ekf(reader, topics, clock, cutoff_hz, enu_mode, datum, min_speed):
    nav_topic = _resolve_topic(reader, "ekf_nav", topics, required=True)
    quat_topic = _resolve_topic(reader, "ekf_quat", topics, required=False)
    stamps, nav = _read(reader, nav_topic, clock, "ekf_nav",
                        ("velocity", "latitude", "longitude", "altitude", "undulation"))
    t = stamps / 1e9
    velocity = sbg.vector_to_enu(nav["velocity"], enu_mode)
    lat, lon = nav["latitude"], nav["longitude"]
    height = sbg.ellipsoidal_height(nav["altitude"], nav["undulation"])
    datum = _datum(datum, lat, lon, height)
    position = geodesy.geodetic_to_enu(lat, lon, height, datum)
    source = f"{reader.path}: {nav_topic}"
    if quat_topic is None:
        orientation, rates = planar_attitude(t, velocity, min_speed, cutoff_hz, source)
    else:
        q_stamps, quats = _read(reader, quat_topic, clock, "ekf_quat", ("quaternion",))
        q_t = q_stamps / 1e9
        inside = (t >= q_t[0]) & (t <= q_t[-1])
        if inside.sum() < 2:
            raise UserError(f"{reader.path}: topics {nav_topic} and {quat_topic} do not overlap in time")
        t, position, velocity = t[inside], position[inside], velocity[inside]
        q_enu = sbg.quaternion_to_enu(quats["quaternion"], enu_mode)
        hi = np.clip(np.searchsorted(q_t, t, side="right"), 1, len(q_t) - 1)
        lo = hi - 1
        frac = np.clip((t - q_t[lo]) / (q_t[hi] - q_t[lo]), 0.0, 1.0)
        orientation = rotations.slerp(q_enu[lo], q_enu[hi], frac)
        rates = smooth_body_rates(t, orientation, cutoff_hz)
    return _finish(t, position, orientation, velocity, rates, cutoff_hz, source), datum


def _from_sbg_gps(reader, topics, clock, cutoff_hz, enu_mode, datum, min_speed):
    vel_topic = _resolve_topic(reader, "gps_vel", topics, required=True)
    pos_topic = _resolve_topic(reader, "gps_pos", topics, required=False)
    stamps, vel = _read(reader, vel_topic, clock, "gps_vel", ("velocity",))
    t = stamps / 1e9
    velocity = sbg.vector_to_enu(vel["velocity"], enu_mode)
    source = f"{reader.path}: {vel_topic}"
    if pos_topic is not None:
        p_stamps, pos = _read(reader, pos_topic, clock, "gps_pos",
                              ("latitude", "longitude", "altitude", "undulation"))
        p_t = p_stamps / 1e9
        lat, lon = pos["latitude"], pos["longitude"]
        height = sbg.ellipsoidal_height(pos["altitude"], pos["undulation"])
        datum = _datum(datum, lat, lon, height)
        fixes = geodesy.geodetic_to_enu(lat, lon, height, datum)
        inside = (t >= p_t[0]) & (t <= p_t[-1])
        if inside.sum() < 2:
            raise UserError(f"{reader.path}: topics {vel_topic} and {pos_topic} do not overlap in time")
        t, velocity = t[inside], velocity[inside]
        position = np.stack([np.interp(t, p_t, fixes[:, i]) for i in range(3)], axis=1)
    else:
        steps = 0.5 * (velocity[1:] + velocity[:-1]) * np.diff(t)[:, None]
        position = np.vstack([np.zeros(3), np.cumsum(steps, axis=0)])
    orientation, rates = planar_attitude(t, velocity, min_speed, cutoff_hz, source)
    return _finish(t, position, orientation, velocity, rates, cutoff_hz, source), datum


def _from_twist(reader, topics, clock, cutoff_hz):
    topic = _resolve_topic(reader, "twist", topics, required=True)
    stamps, twist = _read(reader, topic, clock, "twist", ("linear_velocity", "angular_velocity"))
    t = stamps / 1e9
    body_velocity = twist["linear_velocity"]
    yaw_rate = twist["angular_velocity"][:, 2]
    dt = np.diff(t)
    yaw = np.r_[0.0, np.cumsum(0.5 * (yaw_rate[1:] + yaw_rate[:-1]) * dt)]
    orientation = rotations.from_yaw(yaw)
    velocity = rotations.rotate(orientation, body_velocity)
    position = np.vstack([np.zeros(3), np.cumsum(0.5 * (velocity[1:] + velocity[:-1]) * dt[:, None], axis=0)])
    rates = np.stack([np.zeros_like(yaw), np.zeros_like(yaw), yaw_rate], axis=1)
    return _finish(t, position, orientation, velocity, rates, cutoff_hz, f"{reader.path}: {topic}")


IMPORT_SIDECAR = "import.yaml"  # written by ``sim2real-eval import`` inside each bag (importer.drive)


def imported_datum(bag_path):
    """The ENU origin an imported bag's /ground_truth/odom is relative to (``datum`` of its
    ``import.yaml``), or None for a bag without one.  Odometry carries no geodetic origin, so the
    importer writes it beside the messages."""
    from ..yamlio import load_yaml

    sidecar = Path(bag_path) / IMPORT_SIDECAR
    if not sidecar.is_file():
        return None
    data = load_yaml(sidecar)
    if not isinstance(data, dict) or data.get("datum") is None:
        return None
    return geodesy.as_datum(data["datum"], f"{sidecar}: datum")


def detect_source(reader, topics: dict | None = None) -> str:
    """The source ``"auto"`` picks: odometry, else SbgEkfNav, else SbgGpsVel, else TwistStamped."""
    topics = topics or {}
    for source, role in (("odometry", "odometry"), ("sbg_ekf", "ekf_nav"), ("sbg_gps", "gps_vel"),
                         ("twist", "twist")):
        if _resolve_topic(reader, role, topics, required=False) is not None:
            return source
    raise UserError(
        f"{reader.path}: no ground-truth topic found (looked for nav_msgs/Odometry, sbg_driver SbgEkfNav, "
        f"SbgGpsVel, geometry_msgs/TwistStamped; topics: {', '.join(sorted(reader.topics)) or 'none'})"
    )


def truth_from_bag(reader, source: str = "auto", topics: dict | None = None, clock: str = "header",
                   enu_mode: bool = False, datum=None, cutoff_hz: float = DEFAULT_CUTOFF_HZ,
                   min_speed: float = 0.2, odom_twist_frame: str = "child"):
    """(GroundTruth, datum) from an open ``BagReader`` (see the module docstring for the sources).

    ``topics``: {role: topic} overrides for roles odometry, ekf_nav, ekf_quat, gps_vel, gps_pos, twist.
    ``enu_mode``: the sbg driver ran with ``use_enu: true``.  ``datum``: ENU origin to use instead of
    the first sbg position (odometry/twist: the ``datum`` of an imported bag's ``import.yaml``, else
    None).  ``cutoff_hz``: smoothing differentiator cut-off.  ``min_speed`` (m/s):
    below it a velocity heading is not trusted.  ``odom_twist_frame``: "child" (ROS) or "world".
    """
    if source not in SOURCES:
        raise UserError(f"source: unknown ground-truth source {source!r} "
                        f"(expected one of {', '.join(SOURCES)})")
    if clock not in ("header", "receive"):
        raise UserError(f"clock: expected 'header' or 'receive', got {clock!r}")
    if odom_twist_frame not in ("child", "world"):
        raise UserError(f"odom_twist_frame: expected 'child' or 'world', got {odom_twist_frame!r}")
    if not cutoff_hz > 0:
        raise UserError(f"cutoff_hz: must be positive, got {cutoff_hz!r}")
    topics = dict(topics or {})
    unknown = set(topics) - set(ROLE_TYPES)
    if unknown:
        raise UserError(f"topics: unknown role(s) {', '.join(sorted(unknown))} "
                        f"(expected {', '.join(ROLE_TYPES)})")
    if source == "auto":
        source = detect_source(reader, topics)
    if datum is None and source in ("odometry", "twist"):
        datum = imported_datum(reader.path)
    if source == "odometry":
        truth = _from_odometry(reader, topics, clock, cutoff_hz, odom_twist_frame)
        return truth, (geodesy.as_datum(datum) if datum is not None else None)
    if source == "twist":
        truth = _from_twist(reader, topics, clock, cutoff_hz)
        return truth, (geodesy.as_datum(datum) if datum is not None else None)
    if source == "sbg_ekf":
        return _from_sbg_ekf(reader, topics, clock, cutoff_hz, enu_mode, datum, min_speed)
    return _from_sbg_gps(reader, topics, clock, cutoff_hz, enu_mode, datum, min_speed)
