"""Write rosbag2 bags (metadata version 8: Humble and Jazzy read it) atomically, via rosbags.

The bag is built in a temporary sibling directory and renamed into place only when it is complete
(``atomic.atomic_directory``): a crash, a full disk or Ctrl-C leave no half bag.  Message definitions
are embedded (sqlite3 ``message_definitions`` table / MCAP schemas), so the bag is self-describing.

Speed (a study writes ~190 small bags): the sqlite3 storage is rosbags' own schema and rows, written
in one transaction without fsyncs (``synchronous=OFF``, rollback journal in memory) and inserted in
batches (``executemany``); message definitions and type hashes are computed once per process.  The
durability this gives up is the OS's, not the atomicity: an interrupted write still leaves only the
hidden temporary sibling (and rosbags never fsynced ``metadata.yaml`` anyway).
"""

from __future__ import annotations

import functools
import inspect
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import apsw
import rosbags.rosbag2.writer as rosbags_writer_module
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
from rosbags.rosbag2.enums import CompressionMode
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer
from rosbags.serde import SerdeError
from rosbags.typesys.store import Typestore

from ..atomic import atomic_directory
from ..errors import UserError
from .typestore import get_typestore

STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
METADATA_VERSION = 8

# What `ros2 bag record` stores for an infinite duration (Humble), so players read it unchanged.
_INFINITE = QosTime(9223372036, 854775807)
RELIABLE_QOS = Qos(
    history=QosHistory.KEEP_LAST,
    depth=10,
    reliability=QosReliability.RELIABLE,
    durability=QosDurability.VOLATILE,
    deadline=_INFINITE,
    lifespan=_INFINITE,
    liveliness=QosLiveliness.AUTOMATIC,
    liveliness_lease_duration=_INFINITE,
    avoid_ros_namespace_conventions=False,
)
_RESERVED = {"metadata.yaml"}
_INSERT_BATCH = 4096  # rows per executemany


class _BatchSqlite3Writer(Sqlite3Writer):
    """rosbags' sqlite3 storage (same schema and rows), set up in one transaction without fsyncs and
    with batched inserts."""

    def __init__(self, path: Path, compression: CompressionMode) -> None:
        if compression == CompressionMode.STORAGE:
            raise WriterError("SQLITE3 writer does not support storage-side compression.")
        self.path = path / f"{path.name}.db3"
        # The path as bytes: a folder name that is not UTF-8 (a \xff byte) is a valid name on Linux.
        self.conn = sqlite3.connect(os.fsencode(self.path))
        # Connection settings only (not stored in the file): readers see an ordinary rosbag2 database.
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute("PRAGMA journal_mode=MEMORY")
        self.conn.executescript(f"BEGIN;{self.SQLITE_SCHEMA}COMMIT;")
        self.cursor = self.conn.cursor()
        self._rows: list = []

    def write(self, connection, timestamp: int, data) -> None:
        self._rows.append((connection.id, timestamp, data))
        if len(self._rows) >= _INSERT_BATCH:
            self._flush()

    def write_rows(self, rows: list) -> None:
        """Insert (connection id, timestamp, data) rows (in order, after any written by ``write``)."""
        self._flush()
        self.cursor.executemany("INSERT INTO messages (topic_id, timestamp, data) VALUES(?, ?, ?)", rows)

    def _flush(self) -> None:
        rows, self._rows = self._rows, []
        self.cursor.executemany("INSERT INTO messages (topic_id, timestamp, data) VALUES(?, ?, ?)", rows)

    def close(self, version: int, metadata: str) -> None:
        self._flush()
        super().close(version, metadata)


class _Writer(Writer):
    """rosbags' Writer with the batching sqlite3 storage and a lean ``write``: ``_write_all`` only
    passes connections it added, never compresses, and sets the time range once (messages arrive in
    receive-time order)."""

    STORAGE_PLUGINS = {**Writer.STORAGE_PLUGINS, StoragePlugin.SQLITE3: _BatchSqlite3Writer}

    def write(self, connection, timestamp: int, data) -> None:
        self.storage.write(connection, timestamp, data)
        self.counts[connection.id] += 1

    def set_time_range(self, first_ns: int, last_ns: int) -> None:
        self.min_timestamp, self.max_timestamp = first_ns, last_ns


def _memoise_qos_dump() -> None:
    """rosbags dumps the offered-QoS list with a fresh ruamel YAML for every topic, twice per bag (~1/3
    of writing a small bag); the text depends only on the profiles (hashable NamedTuples), so keep it.
    Same text, just not recomputed (tested: metadata.yaml and the topics table are unchanged)."""
    original = getattr(rosbags_writer_module, "dump_qos_v8", None)
    if original is None or getattr(original, "memoised", False):
        return
    texts: dict = {}

    def dump_qos_v8(qos):
        try:
            key = tuple(qos)
            text = texts.get(key)
        except TypeError:  # unhashable profiles: nothing to reuse
            return original(qos)
        if text is None:
            text = texts[key] = original(qos)
        return text

    dump_qos_v8.memoised = True
    rosbags_writer_module.dump_qos_v8 = dump_qos_v8


_memoise_qos_dump()


@functools.lru_cache(maxsize=64)
def _definition(store: Typestore, msgtype: str) -> tuple:
    """(message definition text, RIHS01 hash) of a type: what rosbags embeds, computed once."""
    return store.generate_msgdef(msgtype, ros_version=2)[0], store.hash_rihs01(msgtype)


def write_bag(path, messages: Iterable, storage: str = "sqlite3", typestore: Typestore | None = None,
              extra_files: Mapping[str, str] | None = None, overwrite: bool = False) -> Path:
    """Write ``messages`` — (recv_ns, topic, msgtype, msg) in non-decreasing recv_ns — as a rosbag2 bag.

    ``msg`` is a rosbags message object (serialised with ``typestore``, default Humble + sbg_driver
    3.1) or already-serialised CDR bytes (copied as they are, e.g. ``BagReader.raw_messages`` of a
    ROS 2 bag, or the ``bags.messages.*_cdr`` builders: the fast path, no per-message serialisation).
    ``storage``: "sqlite3" (default) or "mcap".  ``extra_files`` {name: text} are written inside the
    bag directory before the rename (e.g. ``run.yaml``); a text may be a callable, called after the last
    message is written (a summary of a stream that is written while it runs), with the bag directory
    when it takes one argument (to record the written files).  Every topic is recorded with
    reliable QoS.  Returns the final path.
    """
    final = Path(path)
    if storage not in STORAGES:
        raise UserError(f"storage: unknown bag storage {storage!r} (expected sqlite3 or mcap)")
    extra_files = dict(extra_files or {})
    for name in extra_files:
        if (not name or "/" in name or name.startswith(".") or name in _RESERVED
                or name.endswith((".db3", ".mcap"))):
            raise UserError(f"{final}: extra file name {name!r} is not allowed inside a bag directory")
    store = typestore if typestore is not None else get_typestore()

    with atomic_directory(final, overwrite=overwrite, empty=False) as temp:
        # rosbags names the storage file after its directory: build in temp/<final name>, then move up,
        # so the file is "<final name>.db3" rather than the temp directory's random name.
        inner = temp / _storage_stem(final.name)
        writer = _Writer(inner, version=METADATA_VERSION, storage_plugin=STORAGES[storage])
        try:
            writer.open()
            _write_all(writer, messages, store, final)
            writer.close()
        except BaseException as exc:
            try:
                writer.abort()
            except Exception:  # noqa: BLE001 - the original error is the one to report
                pass
            if isinstance(exc, apsw.FullError) or (isinstance(exc, sqlite3.Error) and "full" in str(exc)):
                raise UserError(f"{final}: no space left on device") from None
            if isinstance(exc, (WriterError, apsw.Error, sqlite3.Error)):
                raise UserError(f"{final}: cannot write bag ({exc})") from None
            raise
        for item in inner.iterdir():
            item.rename(temp / item.name)
        inner.rmdir()
        for name, text in extra_files.items():
            (temp / name).write_text(_render(text, temp), encoding="utf-8")
    return final


def _storage_stem(name: str) -> str:
    """The storage file's name: the bag folder's (as rosbag2 names it), or "bag" when that name is not
    UTF-8 (metadata.yaml lists the file by name, as UTF-8 text)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "bag"
    return name


def _render(text, directory: Path) -> str:
    """An extra file's text: as given, or what a callable returns — called with the bag directory
    (before its rename) when it takes an argument (e.g. run.yaml recording the data files' SHA-256)."""
    if not callable(text):
        return text
    try:
        wants_directory = bool(inspect.signature(text).parameters)
    except (TypeError, ValueError):
        wants_directory = False
    return text(directory) if wants_directory else text()


def _write_all(writer: _Writer, messages: Iterable, store: Typestore, final: Path) -> None:
    """Every message through ``writer``; with the sqlite3 storage the rows go in batches straight to
    ``write_rows`` and the per-topic counts are added per batch (a bag is mostly small messages: the
    per-message Python work is most of writing it)."""
    connections: dict = {}  # topic → (connection, its id)
    first_ns = last_ns = None
    serialize = store.serialize_cdr
    storage = writer.storage
    batched = isinstance(storage, _BatchSqlite3Writer)
    rows: list = []
    add = rows.append
    raw_types = (bytes, bytearray, memoryview)

    def flush() -> None:
        if batched:
            for cid, count in Counter(row[0] for row in rows).items():
                writer.counts[cid] += count
            storage.write_rows(rows)
        else:
            by_id = {cid: conn for conn, cid in connections.values()}
            for cid, timestamp, data in rows:
                writer.write(by_id[cid], timestamp, data)
        rows.clear()

    for recv_ns, topic, msgtype, msg in messages:
        recv_ns = int(recv_ns)
        if last_ns is None:
            first_ns = recv_ns
        elif recv_ns < last_ns:
            raise ValueError(f"{final}: messages must come in receive-time order ({topic} at {recv_ns} ns "
                             f"after {last_ns} ns); sort the records by receive time first")
        last_ns = recv_ns
        known = connections.get(topic)
        if known is None:
            if msgtype not in store.fielddefs:
                raise UserError(f"{final}: topic {topic}: message type {msgtype} is unknown to the typestore")
            msgdef, rihs01 = _definition(store, msgtype)
            conn = writer.add_connection(topic, msgtype, msgdef=msgdef, rihs01=rihs01,
                                         offered_qos_profiles=[RELIABLE_QOS])
            known = connections[topic] = (conn, conn.id)
        elif known[0].msgtype != msgtype:
            raise ValueError(f"{final}: topic {topic} written with two types ({known[0].msgtype}, {msgtype})")
        if isinstance(msg, raw_types):
            data = msg
        else:
            try:
                data = serialize(msg, msgtype)
            except (SerdeError, TypeError, AttributeError, ValueError, OverflowError) as exc:
                raise ValueError(f"{final}: topic {topic}: cannot serialise {msgtype} ({exc})") from exc
        add((known[1], recv_ns, data))
        if len(rows) >= _INSERT_BATCH:
            flush()
    flush()
    if first_ns is not None:
        writer.set_time_range(first_ns, last_ns)
