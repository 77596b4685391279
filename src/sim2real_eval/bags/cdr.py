"""Little-endian CDR of fixed-layout ROS 2 messages as numpy structured arrays: bulk encode and decode.

The one place that knows the CDR wire layout (rosbags' ``serialize_cdr``/``deserialize_cdr`` do the
general case).  Layout rules (OMG XCDR1 as ROS 2 uses it, what rosbags writes):

- 4-byte encapsulation header ``00 01 00 00`` (CDR_LE); alignment below is relative to the byte after it;
- a primitive of size s (1, 2, 4 or 8 bytes) is aligned to s; bool is one byte;
- a string is a uint32 length (UTF-8 bytes + the NUL), aligned to 4, then the bytes and the NUL,
  no padding after;
- a fixed array ``T[n]`` of primitives is n elements aligned like T; a nested message is its fields
  in order (no alignment of its own);
- the message ends after its last byte (no trailing padding).

A message type whose fields are primitives, fixed arrays of primitives, nested messages and strings has
one layout per tuple of string values: when every string of a stream is the same (frame ids), every
message of the stream has the same size and its fields sit at the same offsets.  ``message_layout``
gives that layout as a numpy structured dtype with explicit offsets, named by field path
(``"header.stamp.sec"``, ``"pose.pose.position"`` for a Vector3-like triple is three fields ``.x/.y/.z``).
``encode`` fills one (N,) array of that dtype from column arrays and slices it into N messages
(~100x faster than ``serialize_cdr`` per message); ``decode_columns`` reads columns back from many
equal-layout messages.  Sequences (``T[]``) have no fixed layout: such types raise ``CdrLayoutError``.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore

from ..stamps import split_ns

CDR_LE_HEADER = b"\x00\x01\x00\x00"
ENCAPSULATION = 4  # bytes before the CDR body; alignment counts from the body start

# ROS primitive -> numpy little-endian dtype (bool is one byte 0/1)
PRIMITIVES = {
    "bool": "u1", "byte": "u1", "char": "u1", "uint8": "u1", "int8": "i1",
    "uint16": "<u2", "int16": "<i2", "uint32": "<u4", "int32": "<i4",
    "uint64": "<u8", "int64": "<i8", "float32": "<f4", "float64": "<f8",
}


class CdrLayoutError(ValueError):
    """The message type has no fixed layout (a sequence, or a string whose value is not given)."""


def _align(offset: int, size: int) -> int:
    """``offset`` (relative to the CDR body) rounded up to a multiple of ``size``."""
    return (offset + size - 1) // size * size


@dataclass(frozen=True, eq=False)
class Layout:
    """Fixed CDR layout of one message type for given string values.

    ``dtype``: numpy structured dtype, itemsize = message size in bytes (encapsulation included),
    fields named by path with absolute byte offsets.  ``strings``: {path: (offset of the uint32
    length, encoded bytes incl. NUL)}.  ``fields``: {path: (offset, numpy dtype, count)} of primitive
    leaves (count > 1 for fixed arrays).  ``template``: one message's bytes with the encapsulation
    header and the strings filled in, zeros elsewhere (read-only).
    """

    msgtype: str
    size: int
    dtype: np.dtype
    strings: Mapping[str, tuple]
    fields: Mapping[str, tuple]
    template: np.ndarray


def _template(size: int, strings: Mapping[str, tuple]) -> np.ndarray:
    out = np.zeros(size, dtype=np.uint8)
    out[:ENCAPSULATION] = np.frombuffer(CDR_LE_HEADER, dtype=np.uint8)
    for offset, data in strings.values():
        out[offset:offset + 4] = np.frombuffer(struct.pack("<I", len(data)), dtype=np.uint8)
        out[offset + 4:offset + 4 + len(data)] = np.frombuffer(data, dtype=np.uint8)
    out.setflags(write=False)
    return out


def message_layout(store: Typestore, msgtype: str, strings: Mapping[str, str] | None = None) -> Layout:
    """The fixed layout of ``msgtype`` with the given string values {path: text} (missing → "").

    Raises CdrLayoutError for types with sequences or unknown strings paths.
    """
    strings = dict(strings or {})
    key = tuple(sorted(strings.items()))
    return _layout(store, msgtype, key)


@functools.lru_cache(maxsize=256)
def _layout(store: Typestore, msgtype: str, string_items: tuple) -> Layout:
    values = dict(string_items)
    strings: dict = {}
    fields: dict = {}

    def walk(typename: str, prefix: str, offset: int) -> int:
        if typename not in store.fielddefs:
            raise CdrLayoutError(f"{msgtype}: unknown type {typename}")
        _consts, members = store.fielddefs[typename]
        if not members:  # an empty ROS 2 message is serialised as one uint8 (structure_needs_at_least_one)
            fields[f"{prefix}structure_needs_at_least_one_member"] = (ENCAPSULATION + offset, "u1", 1)
            return offset + 1
        for name, (kind, spec) in members:
            path = f"{prefix}{name}"
            if kind == Nodetype.NAME:
                offset = walk(spec, f"{path}.", offset)
            elif kind == Nodetype.BASE and spec[0] == "string":
                offset = _align(offset, 4)
                data = values.pop(path, "").encode("utf-8") + b"\x00"
                strings[path] = (ENCAPSULATION + offset, data)
                offset += 4 + len(data)
            elif kind == Nodetype.BASE:
                dtype = np.dtype(PRIMITIVES[spec[0]])
                offset = _align(offset, dtype.itemsize)
                fields[path] = (ENCAPSULATION + offset, dtype.str, 1)
                offset += dtype.itemsize
            elif kind == Nodetype.ARRAY and spec[0][0] == Nodetype.BASE and spec[0][1][0] in PRIMITIVES:
                dtype = np.dtype(PRIMITIVES[spec[0][1][0]])
                count = int(spec[1])
                offset = _align(offset, dtype.itemsize)
                fields[path] = (ENCAPSULATION + offset, dtype.str, count)
                offset += dtype.itemsize * count
            else:
                raise CdrLayoutError(f"{msgtype}: field {path} has no fixed CDR layout")
        return offset

    size = ENCAPSULATION + walk(msgtype, "", 0)
    if values:
        raise CdrLayoutError(f"{msgtype}: no string field {', '.join(sorted(values))}")
    names, formats, offsets = [], [], []
    for path, (offset, dtype, count) in fields.items():
        names.append(path)
        formats.append((dtype, (count,)) if count > 1 else dtype)
        offsets.append(offset)
    dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
    return Layout(msgtype, size, dtype, strings, fields, _template(size, strings))


def encode(layout: Layout, count: int, columns: Mapping[str, object]) -> list:
    """``count`` CDR messages (a list of bytes) of ``layout`` with the given field values.

    ``columns``: {field path: array of shape (count,) or (count, n) for a fixed array of n, or a
    scalar broadcast to every message}.  Fields not given are 0.  Values are cast to the wire type
    (numpy casting rules; callers pass values in range).
    """
    block = encode_block(layout, count, columns)
    raw = block.tobytes()
    size = layout.size
    return [raw[i:i + size] for i in range(0, count * size, size)]


def encode_block(layout: Layout, count: int, columns: Mapping[str, object]) -> np.ndarray:
    """As ``encode`` but the (count, size) uint8 array of all messages (row i = message i)."""
    block = np.empty((count, layout.size), dtype=np.uint8)
    block[:] = layout.template
    records = block.reshape(-1).view(layout.dtype) if count else np.zeros(0, dtype=layout.dtype)
    for path, values in columns.items():
        if path not in layout.fields:
            raise KeyError(f"{layout.msgtype}: no field {path}")
        records[path] = values
    return block


def stamp_columns(stamp_ns, prefix: str = "header.stamp.") -> dict:
    """{sec, nanosec} columns of int ns stamps (``stamps.split_ns``: nanosec in [0, 1e9))."""
    sec, nanosec = split_ns(stamp_ns)
    return {f"{prefix}sec": sec, f"{prefix}nanosec": nanosec}


def vector_columns(path: str, values, names: Sequence[str] = ("x", "y", "z")) -> dict:
    """{path.x: values[:, 0], ...} for a (N, len(names)) array."""
    values = np.asarray(values, dtype=np.float64)
    return {f"{path}.{name}": values[:, i] for i, name in enumerate(names)}


# --- decoding -------------------------------------------------------------------------------------

def read_strings(store: Typestore, msgtype: str, data) -> dict:
    """{path: text} of every string field of one little-endian CDR message (walks the layout)."""
    if bytes(data[:2]) != CDR_LE_HEADER[:2]:
        raise CdrLayoutError(f"{msgtype}: not little-endian CDR")
    found: dict = {}
    # The layout up to each string depends only on earlier strings: grow the known values one by one.
    for _ in range(64):
        layout = message_layout(store, msgtype, found)
        for path, (offset, _encoded) in layout.strings.items():
            if path in found:
                continue
            if offset + 4 > len(data):
                raise CdrLayoutError(f"{msgtype}: message too short")
            length = struct.unpack_from("<I", data, offset)[0]
            if length == 0 or offset + 4 + length > len(data):
                raise CdrLayoutError(f"{msgtype}: bad string length at byte {offset}")
            found[path] = bytes(data[offset + 4:offset + 3 + length]).decode("utf-8")
            break
        else:
            return found
    raise CdrLayoutError(f"{msgtype}: too many strings")


def layout_of(store: Typestore, msgtype: str, data) -> Layout:
    """The layout a given CDR message has (its own string values); CdrLayoutError when none fits.

    Up to 7 bytes after the last field are tolerated (alignment padding some writers append).
    """
    layout = message_layout(store, msgtype, read_strings(store, msgtype, data))
    if not layout.size <= len(data) <= layout.size + 7:
        raise CdrLayoutError(f"{msgtype}: message is {len(data)} bytes, its layout {layout.size}")
    return layout


def decode_columns(layout: Layout, raws: Sequence, paths: Sequence[str]) -> dict | None:
    """{path: array} of fields of many messages that all have ``layout``; None if any does not.

    All messages must have one length (the layout's size plus at most 7 padding bytes).  Checks the
    encapsulation header and every string length and value, so a message with other strings is never
    read at the wrong offsets.
    """
    if not raws:
        return None
    length = len(raws[0])
    if not layout.size <= length <= layout.size + 7 or len(set(map(len, raws))) != 1:  # (C-speed check)
        return None
    block = np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(len(raws), length)
    template = layout.template
    if not (block[:, :2] == template[:2]).all():
        return None
    for offset, encoded in layout.strings.values():
        end = offset + 4 + len(encoded)
        if not (block[:, offset:end] == template[offset:end]).all():
            return None
    records = np.ndarray(len(raws), dtype=layout.dtype, buffer=block, strides=(length,))
    return {path: np.array(records[path]) for path in paths}
