"""Ground truth, its one home: the series every sensor model consumes (this module), its readers and
its live stream.

- ``sim2real_eval.truth`` (here, robot-side: Python 3.8, numpy only): ``GroundTruth``, the container,
  and ``truth_window_ns``, the header stamps inside a truth's span;
- ``truth.bag``: the readers — one ``GroundTruth`` from whatever reference a recorded bag carries
  (simulator odometry, sbg_driver INS, twist) and the one smoothing differentiator (offline; numba
  for long series);
- ``truth.stream`` (robot-side): truth streamed in live (a simulator publishing it as it runs), cut
  into finished segments identical to the offline derivation.

One container for every source of truth: the kinematic scenarios, simulator odometry, and the SBG INS
of a real vehicle.  Frames (REP-103/105): position and velocity in a local ENU frame (metres, m/s)
anchored at a geodetic datum held by the GPS model; orientation is the body (base_link) attitude in
ENU as a quaternion (x, y, z, w), yaw 0 = facing east; angular velocity and specific force are in
the body frame.  Specific force is what an ideal accelerometer reads: a_body − R_bwᵀ·g_world, i.e.
+9.80665 on z when level and still (REP-145).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from .. import rotations
from ..errors import UserError
from ..stamps import ns_to_seconds

GRAVITY = 9.80665  # m/s², standard gravity (also robot_localization's default)

FIELDS = ("t", "position", "orientation", "velocity", "angular_velocity", "specific_force")
_WIDTHS = {"t": None, "position": 3, "orientation": 4, "velocity": 3, "angular_velocity": 3,
           "specific_force": 3}


@dataclass(frozen=True)
class GroundTruth:
    """Time series of true vehicle state; all arrays share the first dimension N.

    t: (N,) seconds on the data clock, strictly increasing.
    position: (N, 3) ENU metres.  orientation: (N, 4) quaternion x, y, z, w (body → ENU).
    velocity: (N, 3) world ENU m/s.  angular_velocity: (N, 3) body rad/s.
    specific_force: (N, 3) body m/s², including the +g reaction to gravity.
    """

    t: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    specific_force: np.ndarray

    def __post_init__(self):
        for name in FIELDS:
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float64))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0]) if len(self) else 0.0

    def validate(self, source: str = "ground truth") -> GroundTruth:
        """Check shapes, finiteness and strictly increasing time; name the first bad index."""
        n = len(self)
        if self.t.ndim != 1 or n < 2:
            raise UserError(
                f"{source}: need at least 2 samples with a 1-D time axis, got shape {self.t.shape}"
            )
        for name in FIELDS[1:]:
            arr = getattr(self, name)
            if arr.shape != (n, _WIDTHS[name]):
                raise UserError(f"{source}: {name} has shape {arr.shape}, expected ({n}, {_WIDTHS[name]})")
        for name in FIELDS:
            arr = getattr(self, name)
            bad = ~np.isfinite(arr.reshape(n, -1)).all(axis=1)
            if bad.any():
                raise UserError(f"{source}: {name} is NaN/inf at index {int(np.argmax(bad))}")
        steps = np.diff(self.t)
        if (steps <= 0).any():
            i = int(np.argmax(steps <= 0)) + 1
            raise UserError(
                f"{source}: time is not strictly increasing at index {i} "
                f"(t[{i - 1}]={float(self.t[i - 1])!r}, t[{i}]={float(self.t[i])!r})"
            )
        norms = np.linalg.norm(self.orientation, axis=1)
        if (np.abs(norms - 1.0) > 1e-3).any():
            i = int(np.argmax(np.abs(norms - 1.0) > 1e-3))
            raise UserError(
                f"{source}: orientation is not a unit quaternion at index {i} (norm {norms[i]:.6f})"
            )
        return self

    def interpolate(self, times) -> GroundTruth:
        """Truth at ``times`` (seconds): linear for vectors, slerp for the orientation.

        For t[i] <= τ <= t[i+1], f = (τ − t[i]) / (t[i+1] − t[i]): x(τ) = x[i] + (x[i+1] − x[i])·f;
        q(τ) = normalise(sin((1−f)θ)/sin θ · q̂[i] + sin(fθ)/sin θ · ±q̂[i+1]) with cos θ = |q̂[i]·q̂[i+1]|
        (short way round; plain lerp when sin θ < 1e-9), q̂ = unit quaternions.  The per-interval parts
        (differences, θ, signs) are computed once per GroundTruth and reused by later calls.

        Never extrapolates: a time outside [t[0], t[-1]] is a UserError (callers choose their ticks
        inside the truth span).
        """
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        if times.size and (times.min() < self.t[0] - 1e-12 or times.max() > self.t[-1] + 1e-12):
            raise UserError(
                f"ground truth: requested time {times.min():.9f}..{times.max():.9f} s lies outside the "
                f"truth span {self.t[0]:.9f}..{self.t[-1]:.9f} s"
            )
        tables = self._interpolation_tables()
        hi = np.clip(np.searchsorted(self.t, times, side="right"), 1, len(self) - 1)
        lo = hi - 1
        frac = np.clip((times - self.t[lo]) / tables["dt"][lo], 0.0, 1.0)
        f = frac[:, None]

        def rows(array):  # np.take: several times faster than fancy indexing of 2-D rows
            return np.take(array, lo, axis=0)

        def lerp(name):
            return rows(getattr(self, name)) + rows(tables[name]) * f

        theta = tables["theta"][lo][:, None]
        small = tables["small"][lo][:, None]
        safe = tables["safe_sin"][lo][:, None]
        w0 = np.where(small, 1.0 - f, np.sin((1.0 - f) * theta) / safe)
        w1 = np.where(small, f, np.sin(f * theta) / safe)
        orientation = w0 * rows(tables["q0"]) + w1 * rows(tables["q1"])
        orientation /= np.sqrt(np.einsum("ij,ij->i", orientation, orientation))[:, None]
        return GroundTruth(
            t=times,
            position=lerp("position"),
            orientation=orientation,
            velocity=lerp("velocity"),
            angular_velocity=lerp("angular_velocity"),
            specific_force=lerp("specific_force"),
        )

    def _interpolation_tables(self) -> Dict[str, np.ndarray]:
        """Per-interval pieces of ``interpolate`` (N−1 rows), computed on first use and kept.

        The arithmetic is that of ``rotations.slerp`` and of x[i] + (x[i+1] − x[i])·f, split into what
        depends on the interval only and what depends on f (results agree to ~1e-16).
        """
        tables = self.__dict__.get("_tables")
        if tables is None:
            tables = {"dt": np.diff(self.t)}
            for name in ("position", "velocity", "angular_velocity", "specific_force"):
                tables[name] = np.diff(getattr(self, name), axis=0)
            q = self.orientation / np.sqrt(np.einsum("ij,ij->i", self.orientation, self.orientation))[:, None]
            q0, q1 = q[:-1], q[1:]
            dot = np.einsum("ij,ij->i", q0, q1)
            tables["q0"] = q0
            tables["q1"] = np.where((dot < 0)[:, None], -q1, q1)
            theta = np.arccos(np.clip(np.abs(dot), -1.0, 1.0))
            sin_theta = np.sin(theta)
            tables["theta"] = theta
            tables["small"] = sin_theta < 1e-9
            tables["safe_sin"] = np.where(tables["small"], 1.0, sin_theta)
            object.__setattr__(self, "_tables", tables)  # a cache, not a field: the container stays frozen
        return tables

    def slice(self, start: int, stop: Optional[int] = None) -> GroundTruth:
        return GroundTruth(**{name: getattr(self, name)[start:stop] for name in FIELDS})

    def as_dict(self) -> Dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def load_npz(cls, path, source: Optional[str] = None) -> GroundTruth:
        source = source or str(path)
        try:
            with np.load(path) as data:
                missing = [name for name in FIELDS if name not in data]
                if missing:
                    raise UserError(f"{source}: missing array(s) {', '.join(missing)}")
                return cls(**{name: data[name] for name in FIELDS}).validate(source)
        except (OSError, ValueError) as exc:
            raise UserError(f"{source}: cannot read ground truth ({exc})") from None

    @classmethod
    def from_kinematics(cls, t, position, orientation, velocity, angular_velocity=None,
                        world_acceleration=None) -> GroundTruth:
        """Build truth from pose + world velocity, deriving what is missing.

        World acceleration (when not given) is the central-difference derivative of velocity
        (``time_derivative``: second-order, zero lag inside the series, one-sided at the ends); body
        rates (when not given) come from differentiating the orientation the same way.  Specific force is
        R_bwᵀ·(a_world + g·ẑ).
        """
        t = np.asarray(t, dtype=np.float64)
        orientation = rotations.normalize(orientation)
        velocity = np.asarray(velocity, dtype=np.float64)
        if world_acceleration is None:
            world_acceleration = time_derivative(t, velocity)
        if angular_velocity is None:
            angular_velocity = body_rates_from_orientation(t, orientation)
        gravity_reaction = np.asarray(world_acceleration, dtype=np.float64) + np.array([0.0, 0.0, GRAVITY])
        specific_force = rotations.rotate_inverse(orientation, gravity_reaction)
        return cls(t, position, orientation, velocity, angular_velocity, specific_force)


def time_derivative(t, values) -> np.ndarray:
    """d(values)/dt along axis 0 on the stamps ``t``: the three-point non-uniform formula inside,
    one-sided differences at the two ends.

    These are ``np.gradient``'s own non-uniform-spacing operations, in its order (so the values are
    its values for uneven stamps), but always these: np.gradient switches to another formula,
    (f[i+1] − f[i−1]) / 2h, when *every* spacing of the series is exactly equal, so a 3-sample window
    of evenly spaced stamps (the live ``TruthStream``) and the whole series (the batch path) could
    take different formulas and differ in the last bit.  Row i only reads rows i−1, i, i+1.
    """
    t = np.asarray(t, dtype=np.float64)
    f = np.asarray(values, dtype=np.float64)
    if len(t) < 2 or len(f) != len(t):
        raise ValueError(f"time_derivative: need >= 2 samples and one stamp per row, got {len(t)} stamps "
                         f"for {len(f)} rows")
    dt = np.diff(t)
    out = np.empty_like(f)
    out[0] = (f[1] - f[0]) / dt[0]
    out[-1] = (f[-1] - f[-2]) / dt[-1]
    if len(t) > 2:
        shape = (-1,) + (1,) * (f.ndim - 1)
        dt1 = dt[:-1].reshape(shape)
        dt2 = dt[1:].reshape(shape)
        before = -dt2 / (dt1 * (dt1 + dt2))
        here = (dt2 - dt1) / (dt1 * dt2)
        after = dt1 / (dt2 * (dt1 + dt2))
        out[1:-1] = before * f[:-2] + here * f[1:-1] + after * f[2:]
    return out


def body_rates_from_orientation(t, orientation) -> np.ndarray:
    """Body angular velocity ω from a quaternion series: ω = 2·vec(q* ⊗ q̇), q̇ by ``time_derivative``."""
    q = rotations.normalize(orientation).copy()
    # Make the series sign-continuous so the derivative does not see q/−q flips.
    for i in range(1, len(q)):
        if np.dot(q[i], q[i - 1]) < 0:
            q[i] = -q[i]
    q_dot = time_derivative(t, q)
    return 2.0 * rotations.multiply(rotations.conjugate(q), q_dot)[:, :3]


def truth_window_ns(truth: GroundTruth) -> Tuple[int, int]:
    """(start, end) int ns such that a header stamp s lies inside the truth span, i.e.
    truth.t[0] <= s·1e-9 <= truth.t[-1] with the one ns→s conversion (``stamps.ns_to_seconds``, the
    models' sample clock), exactly when start <= s <= end.

    The conversion is monotonic in s, so each bound is where it flips; at epoch-scale times one float
    second covers ~240 ns, so the flip is searched among the integers around t·1e9.
    """

    def first_at_or_after(seconds: float) -> int:
        guess = int(np.ceil(seconds * 1e9))
        candidates = guess + np.arange(-4096, 4097, dtype=np.int64)
        inside = ns_to_seconds(candidates) >= seconds
        first = int(np.argmax(inside))
        if not inside[-1] or first == 0:  # cannot happen for float64 seconds; guards the search range
            raise ValueError(f"truth_window_ns: no ns bound found near {seconds!r} s")
        return int(candidates[first])

    start = first_at_or_after(float(truth.t[0]))
    after_end = first_at_or_after(float(np.nextafter(truth.t[-1], np.inf)))
    return start, after_end - 1
