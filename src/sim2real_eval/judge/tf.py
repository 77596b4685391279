"""The little of tf2 the judge needs: tf2's Euler conventions, rigid transforms and a frame tree.

Conventions (tf2 LinearMath): ``setRPY(r, p, y)`` builds R = Rz(y)·Ry(p)·Rx(r); ``getRPY`` is tf2's
solution 1 including its gimbal-lock branch; a transform T(target←source) maps source coordinates
into target coordinates: p_target = R·p_source + t.

The tree holds static transforms and at most one dynamic edge: the EKF's own odom→base_link (tf2
would hold any number; the judge publishes only that one).  Every (target, source) pair resolves
once to static transforms around that edge, T = A·E^±1·B (``TfBuffer.code`` fills ``state.Lookups``
as frame ids appear), so a lookup at run time is a table read plus, when the path crosses the edge,
the edge at the stamp (``edge_at``: tf2's TimeCache — exact samples, interpolation inside the span,
extrapolation refused).  ``lookup`` is robot_localization's lookupTransformSafe on that table: at the
stamp, else the latest, else nothing (the caller drops the measurement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import UserError
from ..static_tf import parse_static_tf as _parse_static_tf_text
from ..static_tf import valid_frame
from .compiled_cache import njit
from .kernels import (  # noqa: F401 - tf2 setRPY / getRPY / setRotation / getRotation, compiled
    copy1,
    copy2,
    mat3,
    matrix_from_quaternion,
    matrix_from_quaternion_into,
    matrix_from_rpy,
    quaternion_from_matrix,
    quaternion_from_rpy,
    rotate,
    rotate_t,
    rpy_from_matrix,
    slerp,
    transpose3,
)
from .state import (
    EDGE,
    EDGE_SAMPLE,
    EMPTY_FRAME,
    LOOKUP,
    LOOKUP_EDGE,
    LOOKUP_EDGE_INVERSE,
    LOOKUP_NONE,
    LOOKUP_STATIC,
    MAX_FRAMES,
    Tf,
    record,
    records,
)

TF_CACHE_NS = 10_000_000_000  # tf2's default buffer length


@dataclass
class Transform:
    """Rigid transform T(target←source): p_target = rotation·p_source + translation."""

    rotation: np.ndarray
    translation: np.ndarray

    @staticmethod
    def identity() -> Transform:
        return Transform(np.eye(3), np.zeros(3))

    def __mul__(self, other: Transform) -> Transform:
        return Transform(self.rotation @ other.rotation, self.rotation @ other.translation + self.translation)

    def inverse(self) -> Transform:
        rt = self.rotation.T
        return Transform(rt, -(rt @ self.translation))

    def inverse_times(self, other: Transform) -> Transform:
        """tf2 Transform::inverseTimes: self⁻¹·other."""
        rt = self.rotation.T
        return Transform(rt @ other.rotation, rt @ (other.translation - self.translation))


@dataclass(frozen=True)
class StaticTransform:
    """A static TF as given to static_transform_publisher: parent→child, x y z yaw pitch roll."""

    parent: str
    child: str
    translation: Tuple[float, float, float]
    yaw: float
    pitch: float
    roll: float

    @property
    def transform(self) -> Transform:
        """T(parent←child)."""
        q = quaternion_from_rpy(self.roll, self.pitch, self.yaw)
        rotation = matrix_from_quaternion(q[0], q[1], q[2], q[3])
        return Transform(rotation, np.array(self.translation, dtype=float))


def parse_static_tf(spec: str) -> StaticTransform:
    """Parse ``"PARENT CHILD x y z yaw pitch roll"`` (static_transform_publisher's positional order)
    with the robot-side parser (``sim2real_eval.static_tf``), so the nodes and the judge accept the
    same strings."""
    tf = _parse_static_tf_text(spec)
    return StaticTransform(tf.parent, tf.child, tf.translation, tf.yaw, tf.pitch, tf.roll)


# --- the dynamic edge (compiled) ----------------------------------------------------------------------


def make_edge(capacity: int, cache_ns: int = TF_CACHE_NS):
    """(samples, head) of an empty dynamic edge."""
    head = record(EDGE)[0]
    head["cache_ns"] = cache_ns
    return records(capacity, EDGE_SAMPLE), head


@njit(cache=True)
def edge_add(edge, head, stamp, quaternion, translation):
    """A sample of the edge (tf2 TimeCache::insertData for increasing stamps: an equal stamp replaces
    the newest sample, an older one is ignored); samples older than newest − cache are dropped."""
    capacity = edge.shape[0]
    count = head.count
    if count > 0:
        newest = edge[(head.start + count - 1) % capacity]
        if stamp <= newest.stamp:
            if stamp == newest.stamp:
                copy1(quaternion, newest.quaternion)
                for i in range(3):
                    newest.translation[i] = translation[i]
            return
    if count == capacity:  # more samples than the cache can span at the EKF's rate: drop the oldest
        head.start = (head.start + 1) % capacity
        count -= 1
    sample = edge[(head.start + count) % capacity]
    sample.stamp = stamp
    copy1(quaternion, sample.quaternion)
    for i in range(3):  # (translation may be a longer state vector: its first three entries)
        sample.translation[i] = translation[i]
    count += 1
    while count > 0 and edge[head.start].stamp < stamp - head.cache_ns:
        head.start = (head.start + 1) % capacity
        count -= 1
    head.count = count


@njit(cache=True, inline="always")
def _edge_sample(sample, rotation, translation):
    q = sample.quaternion
    matrix_from_quaternion_into(q[0], q[1], q[2], q[3], rotation)
    copy1(sample.translation, translation)


@njit(cache=True)
def edge_latest(edge, head, rotation, translation):
    """The newest sample (tf2 at time 0) into ``rotation``/``translation``; False when there is none."""
    if head.count == 0:
        return False
    _edge_sample(edge[(head.start + head.count - 1) % edge.shape[0]], rotation, translation)
    return True


@njit(cache=True)
def edge_at(edge, head, stamp, rotation, translation):
    """T(parent←child) at ``stamp`` into ``rotation``/``translation`` (stamp 0: the newest sample);
    False when tf2 would throw (no sample, or the stamp outside the samples' span)."""
    capacity = edge.shape[0]
    count = head.count
    if count == 0:
        return False
    if stamp == 0:
        return edge_latest(edge, head, rotation, translation)
    start = head.start
    if stamp < edge[start].stamp or stamp > edge[(start + count - 1) % capacity].stamp:
        return False
    lo, hi = 0, count - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if edge[(start + mid) % capacity].stamp <= stamp:
            lo = mid
        else:
            hi = mid
    a, b = edge[(start + lo) % capacity], edge[(start + hi) % capacity]
    if b.stamp == a.stamp or stamp == a.stamp:
        _edge_sample(a, rotation, translation)
        return True
    if stamp == b.stamp:
        _edge_sample(b, rotation, translation)
        return True
    ratio = (stamp - a.stamp) / (b.stamp - a.stamp)  # tf2 TimeCache::interpolate
    q = slerp(a.quaternion, b.quaternion, ratio)
    matrix_from_quaternion_into(q[0], q[1], q[2], q[3], rotation)
    for i in range(3):
        translation[i] = (1.0 - ratio) * a.translation[i] + ratio * b.translation[i]
    return True


@njit(cache=True)
def lookup(tf, target, source, stamp, rotation, translation):
    """lookupTransformSafe(target, source, stamp) for frame codes into ``rotation``/``translation``:
    at the stamp, else the latest; False when it fails (the caller drops the measurement).  stamp 0:
    the latest."""
    entry = tf.lookups[target, source]
    if entry.kind == LOOKUP_NONE:
        return False
    if entry.kind == LOOKUP_STATIC:
        copy2(entry.a_rotation, rotation)
        copy1(entry.a_translation, translation)
        return True
    if not edge_at(tf.edge, tf.edge_head, stamp, rotation, translation):
        if stamp == 0 or not edge_latest(tf.edge, tf.edge_head, rotation, translation):
            return False
    moved = np.empty(3)
    if entry.kind == LOOKUP_EDGE_INVERSE:  # T⁻¹ = (Rᵀ, −Rᵀ·t)
        rotate_t(rotation, translation, moved, 0)
        for i in range(3):
            translation[i] = -moved[i]
        copy2(transpose3(rotation), rotation)
    if not entry.a_identity:  # A·T
        rotate(entry.a_rotation, translation, moved, 0)
        for i in range(3):
            translation[i] = moved[i] + entry.a_translation[i]
        copy2(mat3(entry.a_rotation, rotation), rotation)
    if not entry.b_identity:  # T·B
        rotate(rotation, entry.b_translation, moved, 0)
        for i in range(3):
            translation[i] = moved[i] + translation[i]
        copy2(mat3(rotation, entry.b_rotation), rotation)
    return True


# --- the frame tree ------------------------------------------------------------------------------------


def _product(edges: List[Transform]) -> Optional[Transform]:
    """edges[-1]·…·edges[0] (None: identity), accumulated from the first, as tf2 walks up a path."""
    acc = None
    for edge in edges:
        acc = edge if acc is None else edge * acc
    return acc


def _times(a: Optional[Transform], b: Optional[Transform]) -> Optional[Transform]:
    if a is None:
        return b
    return a if b is None else a * b


def _inverse(a: Optional[Transform]) -> Optional[Transform]:
    return None if a is None else a.inverse()


_IDENTITY = np.eye(3)  # (copied into each lookup entry that needs it)


class TfBuffer:
    """Static transforms plus at most one dynamic edge (``set_dynamic``: the EKF's odom→base_link).

    Frame ids get integer codes (``code``); ``core`` (state.Tf: the lookup table and the edge's samples)
    is what the EKF and navsat read.  ``lookup_safe`` / ``lookup`` are the same lookups for Python.
    """

    def __init__(self, static_tfs=(), dynamic: Optional[Tuple[str, str]] = None, edge_capacity: int = 512):
        self.parent: Dict[str, str] = {}
        self.static: Dict[str, Transform] = {}
        for tf in static_tfs:
            self.parent[tf.child] = tf.parent
            self.static[tf.child] = tf.transform
        self.dynamic: Optional[Tuple[str, str]] = None
        self.frames: Dict[str, int] = {}
        self.names: List[str] = []
        edge, head = make_edge(edge_capacity)
        self.core = Tf(records((MAX_FRAMES, MAX_FRAMES), LOOKUP), edge, head)
        # the same table as a plain array: its entries' fields are set in C (a recarray's in Python)
        self._lookups = self.core.lookups.view(np.ndarray)
        self.code("")  # EMPTY_FRAME
        if dynamic is not None:
            self.set_dynamic(*dynamic)

    def set_dynamic(self, parent: str, child: str) -> bool:
        """Declare the dynamic edge parent→child (ignored when ``child`` has a static parent, as tf2
        keeps the static one); True when it is set."""
        if child in self.static:
            return False
        if self.dynamic is not None and self.dynamic != (parent, child):
            raise ValueError(f"TfBuffer: a second dynamic edge {parent}->{child} (the judge has one)")
        if self.dynamic is None:
            self.dynamic = (parent, child)
            self.parent[child] = parent
            for target in self.names:  # the tree changed shape
                for source in self.names:
                    self._fill(target, source)
        return True

    # --- codes and the lookup table -----------------------------------------------------------------
    def code(self, name: str) -> int:
        """The frame code of ``name`` (a new frame gets one and its lookups are resolved)."""
        found = self.frames.get(name)
        if found is not None:
            return found
        if len(self.names) >= MAX_FRAMES:
            raise UserError(f"more than {MAX_FRAMES} distinct frame ids in the input (the last: {name!r})")
        found = len(self.names)
        self.frames[name] = found
        self.names.append(name)
        for other in self.names:
            self._fill(name, other)
            self._fill(other, name)
        return found

    def _fill(self, target: str, source: str) -> None:
        kind, a, b = self.resolve(target, source)
        entry = self._lookups[self.frames[target], self.frames[source]]
        entry["kind"] = kind
        entry["a_identity"] = a is None
        entry["a_rotation"] = _IDENTITY if a is None else a.rotation
        entry["a_translation"] = 0.0 if a is None else a.translation
        entry["b_identity"] = b is None
        entry["b_rotation"] = _IDENTITY if b is None else b.rotation
        entry["b_translation"] = 0.0 if b is None else b.translation

    def _ancestors(self, frame: str) -> List[str]:
        out = [frame]
        while frame in self.parent and self.parent[frame] not in out:
            frame = self.parent[frame]
            out.append(frame)
        return out

    def _edges(self, path: List[str]) -> Tuple[List[Transform], Optional[int]]:
        """Static transforms T(parent←child) along a child-to-ancestor path and the position of the
        dynamic edge among them (None if the path does not cross it)."""
        edges, dynamic_at = [], None
        for i, child in enumerate(path[:-1]):
            if self.dynamic is not None and child == self.dynamic[1] and child not in self.static:
                dynamic_at = i
                edges.append(None)
            else:
                edges.append(self.static[child])
        return edges, dynamic_at

    def resolve(self, target: str, source: str) -> Tuple[int, Optional[Transform], Optional[Transform]]:
        """lookupTransformSafe(target, source) as (kind, A, B): T = A (LOOKUP_STATIC), A·E·B, A·E⁻¹·B
        (E the dynamic edge) or none; A, B None = identity.  Same frame → identity (also for frame ids
        tf2 rejects: lookupTransformSafe's fallback); invalid ids or separate trees → none."""
        if target == source:
            return LOOKUP_STATIC, None, None
        if not (valid_frame(target) and valid_frame(source)):
            return LOOKUP_NONE, None, None
        source_up = self._ancestors(source)
        target_up = self._ancestors(target)
        target_set = set(target_up)
        common = next((f for f in source_up if f in target_set), None)
        if common is None:
            return LOOKUP_NONE, None, None
        source_edges, source_dynamic = self._edges(source_up[: source_up.index(common) + 1])
        target_edges, target_dynamic = self._edges(target_up[: target_up.index(common) + 1])
        if source_dynamic is not None:
            a = _times(_inverse(_product(target_edges)), _product(source_edges[source_dynamic + 1:]))
            return LOOKUP_EDGE, a, _product(source_edges[:source_dynamic])
        from_source = _product(source_edges)
        if target_dynamic is not None:
            a = _inverse(_product(target_edges[:target_dynamic]))
            b = _times(_inverse(_product(target_edges[target_dynamic + 1:])), from_source)
            return LOOKUP_EDGE_INVERSE, a, b
        from_target = _product(target_edges)
        if from_target is None:  # target is the common ancestor
            return LOOKUP_STATIC, from_source, None
        if from_source is None:  # source is the common ancestor
            return LOOKUP_STATIC, from_target.inverse(), None
        return LOOKUP_STATIC, from_target.inverse() * from_source, None

    # --- Python API ---------------------------------------------------------------------------------
    def add_dynamic(self, parent: str, child: str, stamp_ns: int, transform: Transform) -> None:
        """A sample of the dynamic edge parent→child (declared by the first call)."""
        if not self.set_dynamic(parent, child):
            return
        edge_add(self.core.edge, self.core.edge_head, int(stamp_ns),
                 quaternion_from_matrix(np.ascontiguousarray(transform.rotation, dtype=float)),
                 np.asarray(transform.translation, dtype=float))

    def lookup_safe(self, target: str, source: str, stamp_ns: int) -> Optional[Transform]:
        """robot_localization's lookupTransformSafe: at stamp, else latest, else identity when
        target == source, else None (the caller drops the measurement)."""
        rotation, translation = np.zeros((3, 3)), np.zeros(3)
        if not lookup(self.core, self.code(target), self.code(source), int(stamp_ns), rotation, translation):
            return None
        return Transform(rotation, translation)

    def lookup(self, target: str, source: str, stamp_ns: int) -> Optional[Transform]:
        """tf2 lookupTransform at stamp_ns (no fallback), None when tf2 would throw."""
        kind, a, b = self.resolve(target, source)
        if kind in (LOOKUP_EDGE, LOOKUP_EDGE_INVERSE):
            rotation, translation = np.zeros((3, 3)), np.zeros(3)
            if not edge_at(self.core.edge, self.core.edge_head, int(stamp_ns), rotation, translation):
                return None
            edge = Transform(rotation, translation)
            return _times(_times(a, edge if kind == LOOKUP_EDGE else edge.inverse()), b)
        if kind == LOOKUP_NONE or not (valid_frame(target) and valid_frame(source)):
            return None
        return a if a is not None else Transform.identity()


assert EMPTY_FRAME == 0  # TfBuffer gives "" the first code
