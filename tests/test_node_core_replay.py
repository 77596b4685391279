"""node.replay: what evaluate.launch.py publishes is the offline replay's run, byte for byte."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sim2real_eval.node.replay import load_replay, replaced, run_key

pytest.importorskip("sim2real_eval.bags")  # the offline stack (Python >= 3.10)

REPO = Path(__file__).resolve().parents[1]
LINE = REPO / "bags" / "reference" / "line" / "run_00"


def test_run_key_follows_the_reference_layout(tmp_path):
    assert run_key(str(LINE)) == ("line", 0)
    assert run_key(str(tmp_path / "circle" / "run_12")) == ("circle", 12)
    assert run_key(str(tmp_path / "lot17_run1")) == ("lot17_run1", 0)
    assert run_key(str(tmp_path / "drive.bag")) == ("drive", 0)


def test_modes_replace_the_streams_of_the_offline_variants():
    assert replaced("real", "ch_rw", "mavs_mems") == {}
    assert replaced("sim_imu", "ch_rw", "mavs_mems") == {"imu": "mavs_mems"}
    assert replaced("sim_both", "ch_rw", "mavs_mems") == {"gps": "ch_rw", "imu": "mavs_mems"}


@pytest.mark.parametrize("mode", ["real", "sim_imu", "sim_gps", "sim_both"])
def test_records_are_the_offline_run_bags_messages(mode, tmp_path):
    """The offline replay writes its run bag from the same records: same receive times, same bytes,
    the real streams cropped to window_ns, the truth at 50 Hz."""
    from sim2real_eval.bags import open_bag
    from sim2real_eval.pipeline.replay import replay

    replay_ = load_replay(str(LINE), mode, "ch_gauss", "chrono_paper_demo", 5)
    records = replay_.records()
    window = replay_.streams.window_ns
    spec = replay_.spec
    if mode == "real":  # the offline replay needs a stream to replace; its real run is the same
        spec = load_replay(str(LINE), "sim_imu", "ch_gauss", "chrono_paper_demo", 5).spec
    real_run, sim_run = replay(spec, tmp_path / "runs")
    path = Path(real_run.path if mode == "real" else sim_run.path)
    assert path == replay_.directory(tmp_path / "runs")
    with open_bag(path) as reader:
        offline = [(m.recv_ns, m.topic, bytes(m.data)) for m in reader.raw_messages(
            topics=["/fix", "/imu", "/ground_truth/odom"])]
    assert sorted(offline) == sorted(records)
    stamps = [int.from_bytes(raw[4:8], "little") * 10**9 + int.from_bytes(raw[8:12], "little")
              for _r, topic, raw in records if topic in ("/fix", "/imu")]
    assert window[0] <= min(stamps) and max(stamps) <= window[1]


def test_a_missing_truth_source_fails_in_one_line():
    from sim2real_eval.errors import UserError
    with pytest.raises(UserError) as info:
        load_replay(str(LINE), "real", "ch_gauss", "chrono_paper_demo", 0, truth_source="sbg_ekf")
    assert "\n" not in str(info.value)


def test_copied_bag_keeps_its_key(tmp_path):
    copy = tmp_path / "sine" / "run_03"
    shutil.copytree(LINE, copy)
    replay_ = load_replay(str(copy), "sim_gps", "ch_gauss", "chrono_paper_demo", 0)
    assert (replay_.spec.scenario, replay_.spec.k) == ("sine", 3)
