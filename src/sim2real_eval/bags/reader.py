"""Read-only, streaming access to rosbag2 (sqlite3 / MCAP, metadata v4–v9) and ROS 1 bags via rosbags.

Types: definitions embedded in the bag (MCAP, Iron+ sqlite3, ROS 1, and every bag we write) win;
types without an embedded definition come from the typestore (ROS 2 Humble + sbg_driver, see
``typestore.py``).  When the caller gives no typestore and the bag has sbg_driver messages without
definitions (Humble .db3), the sbg_driver layout is detected from the first message of each such topic.

The input is never modified: sqlite files are opened ``immutable`` (rosbags) so no -wal/-shm file is
created or changed.  A bag left with a non-empty ``-wal`` (recorder killed) is copied to a temporary
directory and checkpointed there, so the messages still in the WAL are read too.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import apsw
import rosbags.rosbag2.reader as rosbags_reader_module
from rosbags.interfaces import MessageDefinitionFormat
from rosbags.rosbag1 import Reader as Reader1
from rosbags.rosbag1 import ReaderError as ReaderError1
from rosbags.rosbag2 import Reader as Reader2
from rosbags.rosbag2 import ReaderError as ReaderError2
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg
from rosbags.typesys import get_typestore as _rosbags_typestore
from rosbags.typesys.store import Typestore

from ..errors import UserError, exception_line
from .typestore import LAYOUT_DEPENDENT, detect_sbg_layout, get_typestore, types_from_msg_dir

# What a damaged storage file raises inside rosbags / apsw / the mcap parser.
_STORAGE_ERRORS = (ReaderError1, ReaderError2, apsw.Error, struct.error, EOFError, OSError, ValueError,
                   KeyError, IndexError, AssertionError, RuntimeError)


def _memoise_qos_parse() -> None:
    """rosbags parses every topic's offered-QoS YAML text (v4-v8 metadata) with a fresh pure-Python
    ruamel loader: ~70 % of opening a small bag.  The result depends only on the text, so parse each
    distinct text once (a fresh list each time: callers never share a mutable result)."""
    original = getattr(rosbags_reader_module, "parse_qos", None)
    if original is None or getattr(original, "memoised", False):
        return
    parsed: dict = {}

    def parse_qos(dcts):
        if not isinstance(dcts, str):  # v9 lists, or nothing: no text to key on
            return original(dcts)
        if dcts not in parsed:
            parsed[dcts] = tuple(original(dcts))
        return list(parsed[dcts])

    parse_qos.memoised = True
    rosbags_reader_module.parse_qos = parse_qos


_memoise_qos_parse()

# The first bytes of each storage format: checked before rosbags reads a file, so a file of another
# kind (a 1 GB sparse file of NULs named .bag) is one line at once, not gigabytes read first.
MAGIC = {".db3": b"SQLite format 3\x00", ".mcap": b"\x89MCAP0\r\n", ".bag": b"#ROSBAG V2.0\n"}
FORMATS = {".db3": "SQLite (rosbag2 sqlite3)", ".mcap": "MCAP", ".bag": "ROS 1 bag (v2.0)"}


def _not_a_bag_folder(path: Path) -> str:
    """Why the folder ``path`` (no metadata.yaml) is not a bag, and what to give instead: a folder of bags
    (a scenario's runs) names one of them; storage files without metadata.yaml can be reindexed."""
    def bags_in(folder: Path) -> list:
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
        return [p for p in entries if (p.is_dir() and (p / "metadata.yaml").is_file()) or p.suffix == ".bag"]

    entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    bags = bags_in(path)
    if bags:
        names = ", ".join(p.name for p in bags[:3]) + (", …" if len(bags) > 3 else "")
        return f"a folder of {len(bags)} bag(s) ({names}), not a bag: give one of them, e.g. {bags[0]}"
    if any(p.suffix in (".db3", ".mcap") for p in entries):
        return "not a rosbag2 directory (metadata.yaml is missing; `ros2 bag reindex` can rebuild it)"
    deeper = [bag for folder in entries if folder.is_dir() for bag in bags_in(folder)]
    if deeper:   # DIR/<scenario>/<run>/, as make-reference and import write
        return (f"a folder of scenario folders with {len(deeper)} bag(s), not a bag: give one of them, "
                f"e.g. {deeper[0]}")
    return "not a rosbag2 directory (no metadata.yaml and no .db3/.mcap storage file in it)"


def _check_magic(path: Path) -> None:
    magic = MAGIC[path.suffix]
    try:
        with open(path, "rb") as stream:
            head = stream.read(len(magic))
    except OSError as exc:
        raise UserError(f"{path}: cannot read bag ({exc.strerror})") from None
    if head != magic:
        raise UserError(f"{path}: not a {FORMATS[path.suffix]} file (it does not start with the format's "
                        "magic bytes)")


def _check_storage_files(bag_dir: Path) -> None:
    """metadata.yaml is a bounded YAML file (``yamlio.load_yaml``: regular, <= 16 MiB, no alias bomb)
    and every storage file it names that exists starts with its format's magic."""
    from ..yamlio import load_yaml

    info = load_yaml(bag_dir / "metadata.yaml")
    try:
        names = info["rosbag2_bagfile_information"]["relative_file_paths"]
    except (KeyError, TypeError):
        return  # rosbags reports what is wrong with the metadata
    for name in names if isinstance(names, list) else []:
        path = bag_dir / str(name)
        if path.suffix in MAGIC and path.is_file():
            _check_magic(path)


def _is_loop(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _bytes(folder: Path) -> str:
    return f"{sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6:.0f} MB"


@dataclass(frozen=True)
class TopicInfo:
    msgtype: str
    count: int


class BagMessage(NamedTuple):
    """One message: receive (record) time in int64 ns, topic, type name, deserialised message."""

    recv_ns: int
    topic: str
    msgtype: str
    msg: Any


class RawMessage(NamedTuple):
    """One message still serialised (CDR for rosbag2, ROS 1 wire format for .bag)."""

    recv_ns: int
    topic: str
    msgtype: str
    data: bytes


def _embedded_types(msgtype: str, fmt, data: str) -> dict:
    if fmt == MessageDefinitionFormat.MSG:
        return get_types_from_msg(data, msgtype)
    types: dict = {}
    sep = "=" * 80 + "\n"
    if data.startswith(f"{sep}IDL: "):
        for block in data.split(sep)[1:]:
            types.update(get_types_from_idl(block.split("\n", 1)[1]))
    else:
        types.update(get_types_from_idl(data))
    return types


@lru_cache(maxsize=32)
def _store_with_embedded(embedded: tuple, base: Typestore | None) -> Typestore:
    """A store holding the bag's embedded definitions, completed by ``base`` for the other types."""
    store = _rosbags_typestore(Stores.EMPTY)
    types: dict = {}
    for msgtype, fmt, data in embedded:
        types.update(_embedded_types(msgtype, fmt, data))
    store.register(types)
    if base is not None:
        store.register({name: defn for name, defn in base.fielddefs.items() if name not in store.fielddefs})
    return store


class BagReader:
    """An open bag.  Use as a context manager; see ``open_bag``.

    ``topics``: {topic: TopicInfo(msgtype, count)}; ``start_ns`` / ``end_ns``: receive times of the
    first and last message (None for an empty bag); ``messages(topics)``: deserialised messages in
    receive-time order, one at a time (memory does not grow with the bag).
    """

    def __init__(self, path, typestore: Typestore | None = None, msg_path=None):
        self.path = Path(path)
        self._tempdir: tempfile.TemporaryDirectory | None = None
        self._reader = None
        self._is_ros1 = False
        self._open(typestore, msg_path)

    # -- opening -----------------------------------------------------------------------------
    def _open(self, typestore, msg_path) -> None:
        path = self.path
        if path.is_symlink() and not path.exists():
            problem = "a symbolic link loop" if _is_loop(path) else "a symbolic link to nothing"
            raise UserError(f"{path}: bag not found ({problem})")
        if not path.exists():
            raise UserError(f"{path}: bag not found")
        try:
            if path.is_dir():
                if not (path / "metadata.yaml").is_file():
                    raise UserError(f"{path}: {_not_a_bag_folder(path)}")
                _check_storage_files(path)
                read_path = self._checkpointed_copy(path)
            elif path.suffix in (".db3", ".mcap"):
                _check_magic(path)
                read_path = path
            elif path.suffix == ".bag":
                _check_magic(path)
                self._is_ros1 = True
                read_path = path
            else:
                raise UserError(f"{path}: unknown bag format (expected a rosbag2 directory, .db3, .mcap or "
                                ".bag)")
            read_path = self._utf8_alias(read_path)
        except BaseException:
            self.close()
            raise
        try:
            self._reader = Reader1(read_path) if self._is_ros1 else Reader2(read_path)
            self._reader.open()
            self._connections = list(self._reader.connections)
            self._topics = self._summarise()
            count = sum(info.count for info in self._topics.values())
            # rosbags reports rosbag2 end as last stamp + 1 ns, rosbag1 end as the last stamp.
            end_offset = 0 if self._is_ros1 else 1
            self._span = ((int(self._reader.start_time), int(self._reader.end_time) - end_offset)
                          if count else (None, None))
            self._store = self._build_store(typestore, msg_path)
        except UserError:
            self.close()
            raise
        except _STORAGE_ERRORS as exc:
            self.close()
            raise UserError(f"{path}: cannot read bag ({exception_line(exc)})") from None

    def _scratch(self) -> Path:
        """This reader's temporary folder (in TMPDIR; removed by ``close``)."""
        if self._tempdir is None:
            try:
                self._tempdir = tempfile.TemporaryDirectory(prefix="sim2real_eval-bag-")
            except OSError as exc:
                raise UserError(f"{self.path}: cannot make a temporary folder in TMPDIR "
                                f"{tempfile.gettempdir()} ({exc.strerror})") from None
        return Path(self._tempdir.name)

    def _utf8_alias(self, read_path: Path) -> Path:
        """``read_path``, or a link to it with an ASCII name when its path is not UTF-8 (a \\xff byte in a
        folder name): sqlite (apsw) takes its file name as UTF-8 text."""
        try:
            str(read_path.resolve()).encode("utf-8")
            return read_path
        except UnicodeEncodeError:
            alias = self._scratch() / ("bag" + ("" if read_path.is_dir() else read_path.suffix))
            alias.symlink_to(read_path.resolve())
            return alias

    def _checkpointed_copy(self, bag_dir: Path) -> Path:
        """Return ``bag_dir``, or a checkpointed temporary copy when a .db3 has a non-empty -wal."""
        wal_files = [p for p in bag_dir.glob("*.db3-wal") if p.stat().st_size > 0]
        if not wal_files:
            return bag_dir
        copy = self._scratch() / "bag"
        try:
            shutil.copytree(bag_dir, copy)
        except (OSError, shutil.Error) as exc:  # shutil.Error: a list of the files it could not copy
            reason = exc.args[0][0][2] if isinstance(exc, shutil.Error) and exc.args and exc.args[0] \
                else (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
            raise UserError(f"{bag_dir}: its -wal file holds messages not yet in the database; reading them "
                            f"needs a copy of the bag in TMPDIR {tempfile.gettempdir()}, which failed "
                            f"({reason}); set TMPDIR to a folder with {_bytes(bag_dir)} free") from None
        for wal in wal_files:
            db_file = copy / wal.name[: -len("-wal")]
            try:
                with sqlite3.connect(os.fsencode(db_file)) as conn:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise UserError(f"{bag_dir / db_file.name}: cannot recover the WAL ({exc})") from None
        return copy

    def _summarise(self) -> dict:
        topics: dict = {}
        for conn in self._connections:
            if conn.topic in topics and topics[conn.topic].msgtype != conn.msgtype:
                raise UserError(f"{self.path}: topic {conn.topic} carries two types "
                                f"({topics[conn.topic].msgtype}, {conn.msgtype})")
            count = conn.msgcount + (topics[conn.topic].count if conn.topic in topics else 0)
            topics[conn.topic] = TopicInfo(conn.msgtype, count)
        return topics

    def _build_store(self, typestore: Typestore | None, msg_path) -> Typestore:
        embedded = {}
        for conn in self._connections:
            if conn.msgdef.format != MessageDefinitionFormat.NONE and conn.msgdef.data:
                embedded[conn.msgtype] = (conn.msgtype, conn.msgdef.format, conn.msgdef.data)
        self_described = all(conn.msgtype in embedded for conn in self._connections)
        if self._is_ros1 or (self_described and typestore is None and msg_path is None):
            # ROS 1 types differ from ROS 2 (Header.seq): only the bag's own definitions apply.  A fully
            # self-describing rosbag2 bag (all ours) needs no other store, which keeps opening cheap.
            base = None
        elif typestore is not None:
            base = typestore
        else:
            base = get_typestore(msg_path, self._detect_layout(embedded, msg_path))
        if not embedded:
            return base if base is not None else _rosbags_typestore(Stores.EMPTY)
        try:
            return _store_with_embedded(tuple(sorted(embedded.values(), key=lambda e: e[0])), base)
        except TypesysError as exc:
            raise UserError(f"{self.path}: message definitions in the bag conflict ({exc})") from None

    def _detect_layout(self, embedded: dict, msg_path) -> str:
        candidates = [c for c in self._connections
                      if c.msgtype in LAYOUT_DEPENDENT and c.msgtype not in embedded and c.msgcount > 0]
        if msg_path is not None:
            # sbg types the user supplied are used as given; detection is only for the shipped ones.
            user_names = set(types_from_msg_dir(msg_path))
            candidates = [c for c in candidates if c.msgtype not in user_names]
        samples = {}
        for conn in candidates:
            if conn.msgtype in samples:
                continue
            for _conn, _stamp, data in self._reader.messages(connections=[conn]):
                samples[conn.msgtype] = bytes(data)
                break
        return detect_sbg_layout(samples, str(self.path)) or "3.1"

    # -- properties -----------------------------------------------------------------------------
    @property
    def topics(self) -> dict:
        return dict(self._topics)

    @property
    def typestore(self) -> Typestore:
        return self._store

    @property
    def is_ros1(self) -> bool:
        """A ROS 1 bag: ``raw_messages`` yields ROS 1 serialisation, not CDR."""
        return self._is_ros1

    @property
    def message_count(self) -> int:
        return sum(info.count for info in self._topics.values())

    @property
    def start_ns(self) -> int | None:
        """Receive time of the first message (None when the bag is empty)."""
        return self._span[0]

    @property
    def end_ns(self) -> int | None:
        """Receive time of the last message (None when the bag is empty)."""
        return self._span[1]

    # -- reading --------------------------------------------------------------------------------
    def _connections_for(self, topics: Iterable[str] | None, allow_empty: bool) -> list:
        if topics is None:
            return list(self._connections)
        if isinstance(topics, str):
            topics = [topics]
        wanted = list(dict.fromkeys(topics))
        for topic in wanted:
            if topic not in self._topics:
                have = ", ".join(sorted(self._topics)) or "none"
                raise UserError(f"{self.path}: topic {topic} is not in the bag (topics: {have})")
            if self._topics[topic].count == 0 and not allow_empty:
                raise UserError(f"{self.path}: topic {topic} has no messages")
        return [c for c in self._connections if c.topic in wanted]

    def raw_messages(self, topics: Iterable[str] | None = None, allow_empty: bool = False
                     ) -> Iterator[RawMessage]:
        """Serialised messages of ``topics`` (all when None) in receive-time order."""
        connections = self._connections_for(topics, allow_empty)
        if not connections:
            return
        iterator = self._reader.messages(connections=connections)
        while True:
            try:
                conn, stamp, data = next(iterator)
            except StopIteration:
                return
            except _STORAGE_ERRORS as exc:
                raise UserError(f"{self.path}: bag is damaged ({exception_line(exc)})") from None
            yield RawMessage(int(stamp), conn.topic, conn.msgtype, data)

    def messages(self, topics: Iterable[str] | None = None, allow_empty: bool = False
                 ) -> Iterator[BagMessage]:
        """Deserialised messages of ``topics`` (all when None) in receive-time order, streaming.

        A requested topic that is absent or (unless ``allow_empty``) empty, and a topic whose type has
        no definition, raise UserError before the first message.
        """
        connections = self._connections_for(topics, allow_empty)
        store = self._store
        for conn in connections:
            if conn.msgtype not in store.fielddefs:
                raise UserError(
                    f"{self.path}: topic {conn.topic}: no definition for message type {conn.msgtype} "
                    "(give its .msg files with --msg-path)"
                )
        deserialize = store.deserialize_ros1 if self._is_ros1 else store.deserialize_cdr
        for raw in self.raw_messages(topics, allow_empty):
            try:
                msg = deserialize(raw.data, raw.msgtype)
            except (SerdeError, struct.error, ValueError, IndexError) as exc:
                raise UserError(
                    f"{self.path}: topic {raw.topic}: cannot decode {raw.msgtype} at {raw.recv_ns} ns "
                    f"({exception_line(exc)}; wrong message definitions?)"
                ) from None
            yield BagMessage(raw.recv_ns, raw.topic, raw.msgtype, msg)

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - closing a half-opened reader must not mask the real error
                pass
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, *exc_info) -> bool:
        self.close()
        return False


def require_topic(reader, topic: str, msgtype: str, role: str = "", what: str = "topic") -> TopicInfo:
    """The ``TopicInfo`` of ``topic`` in the open bag ``reader``, which must hold it with type ``msgtype``:
    the one check of "topic present, with the right type".  A one-line UserError names the bag, the
    topic (with its ``role`` in parentheses, e.g. an option or a truth role) and, when it is absent, the
    bag's topics, or, when it has another type, both types."""
    info = reader.topics.get(topic)
    label = f"{what} {topic}" + (f" ({role})" if role else "")
    if info is None:
        raise UserError(f"{reader.path}: {label} is not in the bag "
                        f"(topics: {', '.join(sorted(reader.topics)) or 'none'})")
    if info.msgtype != msgtype:
        raise UserError(f"{reader.path}: {label} has type {info.msgtype}, expected {msgtype}")
    return info


def open_bag(path, typestore: Typestore | None = None, msg_path=None) -> BagReader:
    """Open a bag read-only: a rosbag2 directory (sqlite3 or MCAP), a bare .db3/.mcap, or a ROS 1 .bag.

    ``typestore`` overrides the default (Humble + detected sbg_driver layout + ``msg_path`` types).
    Every failure is a one-line UserError naming the file.
    """
    return BagReader(path, typestore=typestore, msg_path=msg_path)
