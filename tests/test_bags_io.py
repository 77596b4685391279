"""Bag I/O: round trips (sqlite3, MCAP), rosbag2 v8 metadata, ROS 1 reading, bad input, read-only."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from fixtures.bags import header, merge_by_time
from fixtures.optional import requires
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import Writer

from sim2real_eval.bags import get_typestore, open_bag, write_bag
from sim2real_eval.bags.messages import imu_messages, navsatfix_messages, truth_odometry_messages
from sim2real_eval.bags.reader import require_topic
from sim2real_eval.errors import UserError
from sim2real_eval.models.samples import GpsSamples, ImuSamples
from sim2real_eval.truth import GroundTruth

NEEDS_MCAP = requires("mcap", "test", "reads the file with the mcap library")

STRING = "std_msgs/msg/String"


def _gps(n=20, t0_ns=10_000_000_000):
    rng = np.random.default_rng(1)
    stamps = t0_ns + np.arange(n, dtype=np.int64) * 100_000_000
    cov = np.zeros((n, 9))
    cov[:, 0] = cov[:, 4] = rng.uniform(0.01, 1, n)
    return GpsSamples(stamp_ns=stamps, receive_ns=stamps + 5_000_000, latitude=43.07 + rng.normal(0, 1e-5, n),
                      longitude=-89.4 + rng.normal(0, 1e-5, n), altitude=260 + rng.normal(0, 0.1, n),
                      status=np.zeros(n), service=np.ones(n), position_covariance=cov,
                      position_covariance_type=np.ones(n), enu_error=rng.normal(0, 0.03, (n, 3)))


def _imu(n=200, t0_ns=10_000_000_000):
    rng = np.random.default_rng(2)
    stamps = t0_ns + np.arange(n, dtype=np.int64) * 10_000_000
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    cov = np.tile(np.diag([1e-4, 1e-4, 1e-4]).ravel(), (n, 1))
    return ImuSamples(stamp_ns=stamps, receive_ns=stamps, orientation=q, orientation_covariance=cov,
                      angular_velocity=rng.normal(size=(n, 3)), angular_velocity_covariance=cov,
                      linear_acceleration=rng.normal(size=(n, 3)) + [0, 0, 9.8],
                      linear_acceleration_covariance=cov)


def _truth(n=300):
    t = 10.0 + np.arange(n) * 0.01
    pos = np.stack([t, 0.5 * t, 0 * t], axis=1)
    vel = np.tile([1.0, 0.5, 0.0], (n, 1))
    q = np.tile([0, 0, np.sin(0.2), np.cos(0.2)], (n, 1))
    return GroundTruth.from_kinematics(t, pos, q, vel)


def _stream():
    streams = (navsatfix_messages(_gps()), imu_messages(_imu()), truth_odometry_messages(_truth()))
    return list(merge_by_time(*streams))


def _digest(directory: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("bags")
    stream = _stream()
    bags = {storage: write_bag(root / storage, stream, storage=storage) for storage in ("sqlite3", "mcap")}
    return stream, bags


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_round_trip_reads_back_identically_with_rosbags(written, storage):
    stream, bags = written
    store = get_typestore()
    expected = [(ns, topic, bytes(store.serialize_cdr(msg, t))) for ns, topic, t, msg in stream]
    # Plain rosbags, no help from our reader: the bag is self-describing.
    with AnyReader([bags[storage]]) as reader:
        got = [(ns, conn.topic, bytes(raw)) for conn, ns, raw in reader.messages()]
    assert sorted(got) == sorted(expected)
    with open_bag(bags[storage]) as bag:
        assert bag.topics["/fix"].count == 20 and bag.topics["/imu"].count == 200
        assert bag.topics["/ground_truth/odom"].msgtype == "nav_msgs/msg/Odometry"
        ours = list(bag.messages())
    assert [m.recv_ns for m in ours] == sorted(m.recv_ns for m in ours)
    assert bag.start_ns == min(e[0] for e in expected) and bag.end_ns == max(e[0] for e in expected)
    fixes = [m.msg for m in ours if m.topic == "/fix"]
    gps = _gps()
    np.testing.assert_array_equal([f.latitude for f in fixes], gps.latitude)
    np.testing.assert_array_equal(np.stack([f.position_covariance for f in fixes]), gps.position_covariance)
    assert [f.header.stamp.sec * 10**9 + f.header.stamp.nanosec for f in fixes] == gps.stamp_ns.tolist()
    assert {m.recv_ns for m in ours if m.topic == "/fix"} == set(gps.receive_ns.tolist())


def test_metadata_is_rosbag2_version_8(written):
    _stream_, bags = written
    info = yaml.safe_load((bags["sqlite3"] / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 8
    assert info["storage_identifier"] == "sqlite3"
    for key in ("relative_file_paths", "duration", "starting_time", "message_count",
                "topics_with_message_count", "compression_format", "compression_mode", "files",
                "custom_data", "ros_distro"):
        assert key in info, key
    assert info["relative_file_paths"] == ["sqlite3.db3"]
    assert (bags["sqlite3"] / "sqlite3.db3").is_file()
    assert info["message_count"] == 520 == sum(t["message_count"] for t in info["topics_with_message_count"])
    assert isinstance(info["duration"]["nanoseconds"], int)
    assert isinstance(info["starting_time"]["nanoseconds_since_epoch"], int)
    assert info["files"][0]["path"] == "sqlite3.db3" and info["files"][0]["message_count"] == 520
    for entry in info["topics_with_message_count"]:
        meta = entry["topic_metadata"]
        assert set(meta) == {"name", "type", "serialization_format", "offered_qos_profiles",
                             "type_description_hash"}
        assert meta["serialization_format"] == "cdr"
        assert meta["type_description_hash"].startswith("RIHS01_")
        # v8 (unlike v9) stores QoS as a YAML string; Humble parses it as such.
        assert isinstance(meta["offered_qos_profiles"], str)
        qos = yaml.safe_load(meta["offered_qos_profiles"])
        assert qos[0]["reliability"] == 1 and qos[0]["durability"] == 2  # reliable, volatile


@NEEDS_MCAP
def test_mcap_file_readable_by_mcap_library(written):
    from mcap.reader import make_reader

    stream, bags = written
    with open(bags["mcap"] / "mcap.mcap", "rb") as stream_file:
        reader = make_reader(stream_file)
        summary = reader.get_summary()
        schemas = {s.name for s in summary.schemas.values()}
        assert {"sensor_msgs/msg/NavSatFix", "sensor_msgs/msg/Imu", "nav_msgs/msg/Odometry"} <= schemas
        assert all(s.encoding == "ros2msg" for s in summary.schemas.values())
        records = list(reader.iter_messages())
    assert len(records) == len(stream)
    assert {ch.message_encoding for _s, ch, _m in records} == {"cdr"}
    store = get_typestore()
    first_fix = next(m for m in stream if m.topic == "/fix")
    raw = next(m.data for _s, ch, m in records if ch.topic == "/fix")
    assert raw == bytes(store.serialize_cdr(first_fix.msg, first_fix.msgtype))


def test_ros1_peer_bag_reads_and_is_unchanged(peer_bag):
    before = hashlib.sha256(peer_bag.read_bytes()).hexdigest()
    with open_bag(peer_bag) as bag:
        assert bag.topics["/fix"].msgtype == "sensor_msgs/msg/NavSatFix"
        assert bag.topics["/imu/data"].count > 0
        stamps, n_fix = [], 0
        for message in bag.messages(["/fix", "/imu/data"]):
            stamps.append(message.recv_ns)
            if message.topic == "/fix":
                n_fix += 1
                assert -90 <= message.msg.latitude <= 90
        assert n_fix == bag.topics["/fix"].count
        assert stamps == sorted(stamps) and stamps[0] == bag.start_ns and stamps[-1] <= bag.end_ns
    assert hashlib.sha256(peer_bag.read_bytes()).hexdigest() == before


def test_existing_output_refused_unless_overwrite(tmp_path):
    store = get_typestore()
    msgs = [(1, "/s", STRING, store.types[STRING]("a"))]
    write_bag(tmp_path / "b", msgs)
    with pytest.raises(UserError, match="already exists"):
        write_bag(tmp_path / "b", msgs)
    msgs2 = [(1, "/s", STRING, store.types[STRING]("b"))]
    write_bag(tmp_path / "b", msgs2, overwrite=True)
    with open_bag(tmp_path / "b") as bag:
        assert [m.msg.data for m in bag.messages()] == ["b"]


def test_failure_while_writing_leaves_nothing(tmp_path):
    store = get_typestore()

    def broken():
        yield (1, "/s", STRING, store.types[STRING]("a"))
        raise RuntimeError("producer crashed")

    with pytest.raises(RuntimeError):
        write_bag(tmp_path / "b", broken(), extra_files={"run.yaml": "x: 1\n"})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="receive-time order"):
        write_bag(tmp_path / "c", [(5, "/s", STRING, store.types[STRING]("a")),
                                   (4, "/s", STRING, store.types[STRING]("b"))])
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = get_typestore()
    with pytest.raises(UserError, match="file"):
        write_bag(blocker / "bag", [(1, "/s", STRING, store.types[STRING]("a"))])


def test_extra_files_inside_bag_and_bad_names(tmp_path):
    store = get_typestore()
    msgs = [(1, "/s", STRING, store.types[STRING]("a"))]
    out = write_bag(tmp_path / "run", msgs, extra_files={"run.yaml": "side: sim\n"})
    assert (out / "run.yaml").read_text() == "side: sim\n"
    for bad in ("metadata.yaml", "../x", ".hidden", "run.db3"):
        with pytest.raises(UserError, match="not allowed"):
            write_bag(tmp_path / "other", msgs, extra_files={bad: ""})
    with pytest.raises(UserError, match="storage"):
        write_bag(tmp_path / "other", msgs, storage="rosbag1")


# --- bad input ----------------------------------------------------------------------------------

def test_missing_path_and_metadata(tmp_path):
    with pytest.raises(UserError, match="not found"):
        open_bag(tmp_path / "nope")
    (tmp_path / "dir").mkdir()
    with pytest.raises(UserError, match=r"dir: .*metadata.yaml"):
        open_bag(tmp_path / "dir")
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(UserError, match="unknown bag format"):
        open_bag(tmp_path / "x.txt")


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_storage_is_a_clean_user_error(written, tmp_path, storage, damage):
    bag = _copy(written[1][storage], tmp_path / "bag")
    data_file = next(p for p in bag.iterdir() if p.suffix in (".db3", ".mcap"))
    raw = data_file.read_bytes()
    data_file.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else b"\x00garbage" * 100)
    with pytest.raises(UserError, match=str(bag)) as err:
        with open_bag(bag) as reader:
            for _ in reader.messages():
                pass
    assert "\n" not in str(err.value)


def test_truncated_ros1_bag(peer_bag, tmp_path):
    cut = tmp_path / "cut.bag"
    cut.write_bytes(peer_bag.read_bytes()[:50_000])
    with pytest.raises(UserError, match="cut.bag"):
        with open_bag(cut) as reader:
            for _ in reader.messages():
                pass


def test_absent_and_empty_topics(tmp_path):
    store = get_typestore()
    with Writer(tmp_path / "b", version=8) as writer:
        conn = writer.add_connection("/s", STRING, typestore=store)
        writer.add_connection("/empty", STRING, typestore=store)
        writer.write(conn, 5, store.serialize_cdr(store.types[STRING]("a"), STRING))
    with open_bag(tmp_path / "b") as bag:
        assert bag.topics["/empty"].count == 0
        with pytest.raises(UserError, match="topic /missing is not in the bag"):
            list(bag.messages(["/missing"]))
        with pytest.raises(UserError, match="topic /empty has no messages"):
            list(bag.messages(["/s", "/empty"]))
        assert [m.msg.data for m in bag.messages(["/s", "/empty"], allow_empty=True)] == ["a"]


def test_require_topic_names_the_bag_the_topic_its_role_and_the_types(tmp_path):
    store = get_typestore()
    with Writer(tmp_path / "b", version=8) as writer:
        conn = writer.add_connection("/s", STRING, typestore=store)
        writer.write(conn, 5, store.serialize_cdr(store.types[STRING]("a"), STRING))
    with open_bag(tmp_path / "b") as bag:
        assert require_topic(bag, "/s", STRING) == bag.topics["/s"]
        with pytest.raises(UserError) as absent:
            require_topic(bag, "/fix", "sensor_msgs/msg/NavSatFix", "--gps-topic")
        assert str(absent.value) == f"{bag.path}: topic /fix (--gps-topic) is not in the bag (topics: /s)"
        with pytest.raises(UserError) as wrong:
            require_topic(bag, "/s", "sensor_msgs/msg/Imu", what="ground-truth topic")
        assert str(wrong.value) == (f"{bag.path}: ground-truth topic /s has type {STRING}, "
                                    "expected sensor_msgs/msg/Imu")


def _strip_definitions(bag: Path) -> None:
    """Make one of our bags look like Humble's sqlite3 (no message_definitions rows)."""
    db = next(bag.glob("*.db3"))
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM message_definitions")
    conn.close()


def test_unknown_type_without_definitions_and_msg_path(tmp_path):
    msg_dir = tmp_path / "defs" / "my_pkg" / "msg"
    msg_dir.mkdir(parents=True)
    (msg_dir / "Reading.msg").write_text("std_msgs/Header header\nfloat64 value  # volts\n")
    store = get_typestore(msg_path=tmp_path / "defs")
    reading = store.types["my_pkg/msg/Reading"]
    msgs = [(7, "/volts", "my_pkg/msg/Reading", reading(header(7, "x", store), 1.5)),
            (8, "/s", STRING, store.types[STRING]("ok"))]
    bag = write_bag(tmp_path / "bag", msgs, typestore=store)
    _strip_definitions(bag)
    with open_bag(bag) as reader:
        assert [m.msg.data for m in reader.messages(["/s"])] == ["ok"]  # other topics still readable
        with pytest.raises(UserError, match=r"topic /volts: no definition for message type my_pkg/msg/"):
            list(reader.messages())
    with open_bag(bag, msg_path=tmp_path / "defs") as reader:
        assert [m.msg.value for m in reader.messages(["/volts"])] == [1.5]
    with pytest.raises(UserError, match="not a directory"):
        get_typestore(msg_path=tmp_path / "nowhere")


def test_reading_never_modifies_input_even_with_wal(written, tmp_path):
    """A recorder killed mid-bag leaves -wal/-shm files: we read the WAL's messages, touch nothing."""
    live = _copy(written[1]["sqlite3"], tmp_path / "live")
    db = live / "sqlite3.db3"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    topic_id = conn.execute("SELECT id FROM topics WHERE name='/fix'").fetchone()[0]
    raw = conn.execute("SELECT data FROM messages WHERE topic_id=? LIMIT 1", (topic_id,)).fetchone()[0]
    conn.execute("INSERT INTO messages(topic_id, timestamp, data) VALUES(?, ?, ?)",
                 (topic_id, 99 * 10**9, raw))
    conn.commit()
    crashed = _copy(live, tmp_path / "crashed")  # copy while the writer still holds the WAL
    conn.close()
    assert (crashed / "sqlite3.db3-wal").stat().st_size > 0 and (crashed / "sqlite3.db3-shm").exists()
    before = _digest(crashed)
    with open_bag(crashed) as bag:
        stamps = [m.recv_ns for m in bag.messages(["/fix"])]
    assert stamps[-1] == 99 * 10**9 and len(stamps) == 21
    assert _digest(crashed) == before
    # And a clean bag: no -wal/-shm appear, bytes unchanged.
    clean_before = _digest(written[1]["sqlite3"])
    with open_bag(written[1]["sqlite3"]) as bag:
        sum(1 for _ in bag.messages())
    assert _digest(written[1]["sqlite3"]) == clean_before


# --- older / newer rosbag2 versions -------------------------------------------------------------

def _as_humble(bag: Path, version: int) -> None:
    """Rewrite one of our bags the way Humble (v5) or older records it: sqlite schema 3 without
    definitions or type hashes, metadata without the v6+ keys."""
    db = next(bag.glob("*.db3"))
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE message_definitions")
        conn.execute("ALTER TABLE topics DROP COLUMN type_description_hash")
        conn.execute("UPDATE schema SET schema_version = 3")
    conn.close()
    meta_path = bag / "metadata.yaml"
    meta = yaml.safe_load(meta_path.read_text())
    info = meta["rosbag2_bagfile_information"]
    info["version"] = version
    for key in ("custom_data", "ros_distro"):
        info.pop(key)
    for entry in info["topics_with_message_count"]:
        entry["topic_metadata"].pop("type_description_hash")
    meta_path.write_text(yaml.safe_dump(meta))


@pytest.mark.parametrize("version", [4, 5])
def test_humble_style_bag_without_definitions(written, tmp_path, version):
    bag = _copy(written[1]["sqlite3"], tmp_path / "humble")
    _as_humble(bag, version)
    with open_bag(bag) as reader:
        fixes = [m.msg for m in reader.messages(["/fix"])]
    np.testing.assert_array_equal([f.longitude for f in fixes], _gps().longitude)


def test_version_9_and_bare_mcap(tmp_path):
    store = get_typestore()
    with Writer(tmp_path / "v9", version=9) as writer:
        conn = writer.add_connection("/s", STRING, typestore=store)
        writer.write(conn, 5, store.serialize_cdr(store.types[STRING]("nine"), STRING))
    with open_bag(tmp_path / "v9") as bag:
        assert [m.msg.data for m in bag.messages()] == ["nine"]
    bag = write_bag(tmp_path / "m", [(3, "/s", STRING, store.types[STRING]("bare"))], storage="mcap")
    with open_bag(bag / "m.mcap") as reader:  # an .mcap file on its own, no metadata.yaml
        assert [m.msg.data for m in reader.messages()] == ["bare"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2**62), st.sampled_from(["/a", "/b", "/c"]), st.text(max_size=20)),
                min_size=1, max_size=30),
       st.sampled_from(["sqlite3", "mcap"]))
def test_any_stream_round_trips(tmp_path, items, storage):
    store = get_typestore()
    items = sorted(items, key=lambda item: item[0])
    stream = [(ns, topic, STRING, store.types[STRING](text)) for ns, topic, text in items]
    out = tmp_path / f"rt-{len(list(tmp_path.iterdir()))}"
    write_bag(out, stream, storage=storage)
    with open_bag(out) as bag:
        got = [(m.recv_ns, m.topic, m.msg.data) for m in bag.messages()]
        counts = {topic: info.count for topic, info in bag.topics.items()}
    # Same multiset (equal stamps may come back in any order), non-decreasing stamps, exact counts.
    assert sorted(got) == sorted(items)
    assert [g[0] for g in got] == sorted(g[0] for g in got)
    assert counts == {t: sum(1 for i in items if i[1] == t) for t in {i[1] for i in items}}


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from sim2real_eval.bags import get_typestore, write_bag
from sim2real_eval.errors import UserError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit then fail with EFBIG
store = get_typestore()
text = store.types["std_msgs/msg/String"]("x" * 1000)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    stream = ((i, "/s", "std_msgs/msg/String", text) for i in range(1000))
    write_bag(Path(sys.argv[1]), stream, storage=sys.argv[2])
except UserError as exc:
    print("UserError:", exc)
"""


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_write_failure_on_full_disk_leaves_nothing(tmp_path, storage):
    """A file-size limit makes the storage writes fail like a full disk: clean error, no directory."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path / "bag"), storage],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith(f"UserError: {tmp_path / 'bag'}: cannot write"), out.stdout + out.stderr
    assert list(tmp_path.iterdir()) == []
