"""node.recording: the recorder's temporary layout, stale leftovers, early messages, CDR header stamps."""
from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from sim2real_eval.node import recording


def cdr(sec, nanosec, little=True):
    header = b"\x00\x01\x00\x00" if little else b"\x00\x00\x00\x00"
    return header + struct.pack("<iI" if little else ">iI", sec, nanosec) + b"\x03\x00\x00\x00gps\x00"


def test_header_stamp_of_a_cdr_message():
    assert recording.cdr_header_stamp_ns(cdr(1707998410, 5)) == 1707998410 * 10**9 + 5
    assert recording.cdr_header_stamp_ns(cdr(12, 7, little=False)) == 12 * 10**9 + 7
    assert recording.cdr_header_stamp_ns(b"\x00\x01") is None


def test_header_stamp_matches_the_project_serialiser():
    bags = pytest.importorskip("sim2real_eval.bags")
    store = bags.get_typestore()
    types = store.types
    msg = types["sensor_msgs/msg/NavSatFix"](
        types["std_msgs/msg/Header"](types["builtin_interfaces/msg/Time"](1707998410, 151645829), "gps"),
        types["sensor_msgs/msg/NavSatStatus"](0, 1), 43.0, -89.0, 260.0, np.zeros(9), 2)
    raw = bytes(store.serialize_cdr(msg, "sensor_msgs/msg/NavSatFix"))
    assert recording.cdr_header_stamp_ns(raw) == 1707998410151645829


def test_early_messages_take_the_first_clock_time_or_their_header_stamp():
    early = recording.EarlyMessages()
    early.hold("/fix", cdr(10, 0))
    early.hold("/imu", cdr(10, 5))
    assert list(early.release(42)) == [("/fix", cdr(10, 0), 42), ("/imu", cdr(10, 5), 42)]
    assert list(early.release(42)) == []
    early.hold("/fix", cdr(11, 0))
    assert list(early.release(None)) == [("/fix", cdr(11, 0), 11 * 10**9)]  # the clock never came


def test_stale_temporaries_are_those_of_dead_recorders(tmp_path):
    output = tmp_path / "run"
    alive = tmp_path / (recording.temporary_name(output) + "alive")
    dead = tmp_path / (recording.temporary_name(output) + "dead")
    foreign = tmp_path / ".other.tmp-x"          # no pid file: not ours (atomic.py's), left alone
    for path in (alive, dead, foreign):
        path.mkdir()
    (alive / recording.PID_FILE).write_text(f"{os.getpid()}\n")
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    (dead / recording.PID_FILE).write_text(finished.stdout)
    assert recording.stale_temporaries(tmp_path) == [dead]
    assert recording.stale_temporaries(tmp_path / "missing") == []
