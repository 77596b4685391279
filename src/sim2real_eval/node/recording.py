"""recorder_node's rules that need no ROS: where it writes, what it stamps, when a run is complete.

Layout while recording (``OUT`` = the run directory to produce)::

    OUT/../.OUT.tmp-<random>/      the recorder's temporary directory (hidden, one per recorder)
        recorder.pid               the recording process id
        OUT/                       the rosbag2 bag: rosbag2 names its data file after this
            OUT_0.db3 | OUT_0.mcap, metadata.yaml, run.yaml (on close)

On a clean end ``.../OUT`` is renamed to ``OUT`` (so the data file has the run's name, never a
hidden temporary one) and the temporary directory is removed: ``OUT`` is complete or absent.  A
recorder killed with SIGKILL cannot clean up; the next recorder writing into the same directory
removes every ``.*.tmp-*`` sibling whose ``recorder.pid`` names a process that no longer runs
(``stale_temporaries``), and ``sim2real-eval`` never reads hidden directories.

A run directory that exists is whole, but not necessarily a whole run: a judge node that dies mid-bag
ends the launch early and the recorder still closes a valid bag.  So evaluate.launch.py records with
run.yaml ``complete: false`` and marks the run complete only when the bag was played to its end with
no process failing (``RunCompletion``); ``score`` and ``tune`` refuse incomplete runs.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

from ..runs import mark_run

PID_FILE = "recorder.pid"


def temporary_name(output: Path) -> str:
    """The prefix of the recorder's temporary sibling of ``output``."""
    return f".{Path(output).name}.tmp-"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_temporaries(parent: Path) -> List[Path]:
    """Temporary recorder directories in ``parent`` whose recorder no longer runs."""
    stale = []
    parent = Path(parent)
    if not parent.is_dir():
        return stale
    for path in sorted(parent.glob(".*.tmp-*")):
        pid_file = path / PID_FILE
        if not path.is_dir() or not pid_file.is_file():
            continue
        try:
            pid = int(pid_file.read_text(encoding="utf-8").strip())
        except ValueError:
            pid = -1
        if pid <= 0 or not process_alive(pid):
            stale.append(path)
    return stale


def cdr_header_stamp_ns(raw: bytes) -> Optional[int]:
    """``header.stamp`` (ns) of a CDR message whose first field is a std_msgs/Header (the recorded
    sensor and odometry types all are), or None when ``raw`` is too short to hold one."""
    if len(raw) < 12:
        return None
    little = raw[1] == 1  # encapsulation: 0x0000 big-endian CDR, 0x0001 little-endian CDR
    sec, nanosec = struct.unpack("<iI" if little else ">iI", bytes(raw[4:12]))
    return sec * 1_000_000_000 + nanosec


class EarlyMessages:
    """Messages that arrive before the first /clock (the node clock reads 0 under sim time).

    They are held and written with the first valid clock time, so no message is stored at time 0;
    if the clock never comes, they are written at their own header stamps.
    """

    def __init__(self):
        self.held: List[Tuple[str, bytes]] = []

    def hold(self, topic: str, raw: bytes) -> None:
        self.held.append((topic, raw))

    def release(self, now_ns: Optional[int]) -> Iterable[Tuple[str, bytes, int]]:
        """(topic, bytes, stamp) of every held message: ``now_ns`` or, if None, the header stamp."""
        held, self.held = self.held, []
        for topic, raw in held:
            stamp = now_ns if now_ns else (cdr_header_stamp_ns(raw) or 0)
            yield topic, raw, stamp


# A run recorded by evaluate.launch.py is marked incomplete when the recorder writes it; the launch
# marks it complete only when it saw the bag played to its end with every process healthy.
UNCONFIRMED = ("the launch did not confirm the run: it was stopped, failed or was killed before the "
               "bag was played to its end")


class RunCompletion:
    """evaluate.launch.py's verdict on the run it records (rclpy-free; ``ros/launch_actions`` feeds it).

    The run is complete only if the player exited by itself with code 0 before any shutdown (the whole
    bag was played), no process failed, and the recorder wrote its directory.  Anything else — a node
    that died (ekf_node killed), a failed process, Ctrl-C, an exception in the launch — leaves the run
    marked incomplete with the first reason seen.  The verdict is written into the run's run.yaml when
    the recorder has exited, and written again if a failure is reported after that.
    """

    def __init__(self, output, player: str = "bag_player", recorder: str = "recorder_node"):
        self.output = Path(output)
        self.player, self.recorder = player, recorder
        self.failures: List[str] = []
        self.player_finished = False
        self.shutdown_reason: Optional[str] = None
        self.recorded = False

    def failed(self, reason: str) -> None:
        self.failures.append(reason)
        self.write()

    def shutdown(self, reason: str) -> None:
        if self.shutdown_reason is None:
            self.shutdown_reason = str(reason)

    def exited(self, name: str, code: int, shutting_down: bool) -> None:
        """A process exited (before any failure it caused is reported through ``failed``)."""
        if name == self.player and code == 0 and not shutting_down:
            self.player_finished = True
        if name == self.recorder:
            self.recorded = self.output.is_dir()
            self.write()

    def verdict(self) -> Optional[str]:
        """None when the run is complete, else why it is not (one line)."""
        if self.failures:
            return self.failures[0]
        if not self.player_finished:
            why = f" ({self.shutdown_reason})" if self.shutdown_reason else ""
            return f"the launch stopped before the bag was played to its end{why}"
        return None

    def write(self) -> None:
        """Mark the recorded run (once the recorder has written it)."""
        if not self.recorded:
            return

        mark_run(self.output, self.verdict())
