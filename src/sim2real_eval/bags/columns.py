"""Bag topics -> column arrays, driven by the field tables of ``message_fields`` (the writers' inverse).

``read_topics(reader, {topic: table})`` reads every message of the topics in one pass (receive order)
and returns per topic {column: array} plus ``receive_ns``: STAMP columns as int64 ns, XYZ (N, 3),
XYZW (N, 4), ARRAY (N, size), scalars (N,).  ROS 2 messages are decoded in batches straight from
their CDR bytes (``bags.cdr.decode_columns``: one numpy view per batch, no message objects) when a
batch shares one layout — the usual case, one frame id per topic; any other batch (frame ids that
change, big-endian CDR, types with sequences) and ROS 1 bags go through rosbags' deserialiser and
``message_fields.read``: the same columns, slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .. import message_fields as F
from ..errors import UserError, exception_line
from ..stamps import join_ns
from . import cdr
from .reader import require_topic

BATCH = 4096  # messages decoded at once: bounded memory, numpy speed


def _empty(field: F.Field) -> np.ndarray:
    return np.zeros(field.shape(0), dtype=field.dtype)


def _from_wire(field: F.Field, wire: Mapping) -> np.ndarray:
    if field.kind == F.STAMP:
        return join_ns(wire[field.leaves[0]], wire[field.leaves[1]])
    if field.kind in (F.XYZ, F.XYZW):
        return np.stack([wire[leaf] for leaf in field.leaves], axis=1).astype(field.dtype)
    return wire[field.path].astype(field.dtype)


def _from_rows(fields, rows: list) -> dict:
    out = {}
    for field in fields:
        values = [row[field.name] for row in rows]
        out[field.name] = np.array(values, dtype=field.dtype) if values else _empty(field)
    return out


def decode_messages(store, table: F.MessageFields, raws: list, names: Iterable[str] | None = None,
                    ros1: bool = False, where: str = "") -> dict:
    """{column: array} of serialised messages ``raws`` of ``table``'s type (``names``, default every
    non-string column): in bulk when they share one CDR layout, else one by one through rosbags
    (``ros1``: ROS 1 serialisation).  ``where`` prefixes the one-line UserErrors."""
    fields = table.select(names)
    columns = None if ros1 or not raws else _bulk(store, table, fields, raws, where)
    return _one_by_one(store, table, fields, raws, ros1, where) if columns is None else columns


def _bulk(store, table: F.MessageFields, fields, raws: list, where: str) -> dict | None:
    try:
        layout = cdr.layout_of(store, table.msgtype, raws[0])
    except cdr.CdrLayoutError:
        return None
    leaves = [leaf for field in fields for leaf in field.leaves]
    missing = [leaf for leaf in leaves if leaf not in layout.fields]
    if missing:
        raise UserError(f"{where}{table.msgtype} has no field {missing[0]} (another message definition?)")
    wire = cdr.decode_columns(layout, raws, leaves)
    return None if wire is None else {field.name: _from_wire(field, wire) for field in fields}


def _one_by_one(store, table: F.MessageFields, fields, raws: list, ros1: bool, where: str) -> dict:
    deserialize = store.deserialize_ros1 if ros1 else store.deserialize_cdr
    names = [field.name for field in fields]
    rows = []
    for raw in raws:
        try:
            msg = deserialize(raw, table.msgtype)
        except Exception as exc:  # noqa: BLE001 - any decoding failure is a damaged message
            raise UserError(f"{where}cannot decode {table.msgtype} ({exception_line(exc)})") from None
        try:
            rows.append(F.read(msg, table, names))
        except AttributeError as exc:
            raise UserError(f"{where}{table.msgtype} has no field {exc.name} "
                            "(another message definition?)") from None
    return _from_rows(fields, rows)


class _Topic:
    """The batches of one topic being read."""

    def __init__(self, reader, topic: str, table: F.MessageFields, names):
        self.where = f"{reader.path}: topic {topic}: "
        self.table, self.fields = table, table.select(names)
        self.store, self.ros1 = reader.typestore, reader.is_ros1
        self.pending: list = []
        self.receive: list = []
        self.parts: list = []

    def add(self, recv_ns: int, data) -> None:
        self.receive.append(recv_ns)
        self.pending.append(data)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        raws, self.pending = self.pending, []
        if raws:
            self.parts.append(decode_messages(self.store, self.table, raws, [f.name for f in self.fields],
                                              self.ros1, self.where))

    def result(self) -> dict:
        self.flush()
        out = {"receive_ns": np.asarray(self.receive, dtype=np.int64)}
        for field in self.fields:
            parts = [part[field.name] for part in self.parts]
            out[field.name] = np.concatenate(parts) if parts else _empty(field)
        return out


def read_topics(reader, tables: Mapping[str, F.MessageFields],
                names: Mapping[str, Iterable[str]] | None = None, allow_empty: bool = False) -> dict:
    """{topic: {column: array, "receive_ns": array}} of every message of each topic of ``tables``
    {topic: field table}, in receive order, in one pass over the bag.

    ``names`` {topic: columns} limits what is decoded (default: every non-string column).  A topic
    whose type is not its table's, an empty topic (unless ``allow_empty``), a message that does not
    decode, and a definition without a table field are one-line UserErrors naming the bag and topic.
    """
    names = names or {}
    topics = {}
    for topic, table in tables.items():
        require_topic(reader, topic, table.msgtype)
        topics[topic] = _Topic(reader, topic, table, names.get(topic))
    for raw in reader.raw_messages(topics=list(topics), allow_empty=allow_empty):
        topics[raw.topic].add(raw.recv_ns, raw.data)
    return {topic: state.result() for topic, state in topics.items()}


def read_topic(reader, topic: str, table: F.MessageFields, names: Iterable[str] | None = None,
               allow_empty: bool = False) -> dict:
    """``read_topics`` of one topic: {column: array, "receive_ns": array}."""
    wanted = {topic: names} if names is not None else None
    return read_topics(reader, {topic: table}, wanted, allow_empty)[topic]
