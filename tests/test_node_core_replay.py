"""replay.read_ahead: what evaluate.launch.py publishes is the offline replay's run, byte for byte."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sim2real_eval.replay.read_ahead import load_replay, replaced

pytest.importorskip("sim2real_eval.bags")  # the offline stack (Python >= 3.10)

REPO = Path(__file__).resolve().parents[1]
LINE = REPO / "bags" / "reference" / "line" / "run_00"


def test_modes_replace_the_streams_of_the_offline_variants():
    assert replaced("real", "ch_rw", "mavs_mems") == {}
    assert replaced("sim_imu", "ch_rw", "mavs_mems") == {"imu": "mavs_mems"}
    assert replaced("sim_both", "ch_rw", "mavs_mems") == {"gps": "ch_rw", "imu": "mavs_mems"}


@pytest.mark.parametrize("mode", ["real", "sim_imu", "sim_gps", "sim_both"])
def test_records_are_the_offline_run_bags_messages(mode, tmp_path):
    """The offline replay writes its run bag from the same records: same receive times, same bytes,
    the real streams cropped to window_ns, the truth at 50 Hz."""
    from sim2real_eval.bags import open_bag
    from sim2real_eval.replay.offline import BagReplay
    from sim2real_eval.runs import read_run_info

    replay_ = load_replay(str(LINE), mode, "ch_gauss", "chrono_paper_demo", 5)
    records = replay_.records()
    window = replay_.streams.window_ns
    sims = () if replay_.sim is None else (replay_.sim,)
    BagReplay(replay_.spec, sims, real=replay_.sim is None).execute(tmp_path / "runs")
    path = replay_.directory(tmp_path / "runs")
    offline_info = read_run_info(path)
    assert offline_info.run == replay_.run
    ours = replay_.info().to_dict()
    assert ours["recorded_by"].startswith("recorder_node")
    theirs = offline_info.to_dict()
    for key in ("side", "variant", "scenario", "k", "seed", "source", "gps", "imu", "window_ns",
                "ground_truth_rate", "ground_truth_source", "topics"):
        assert ours[key] == theirs[key], key
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


def test_runs_are_named_by_the_real_bag_rule(tmp_path):
    """DIR/<scenario>/<run>: the scenario is the folder, k the bag's position in it (runs.name_real_bag)."""
    for name in ("run_00", "run_07"):
        shutil.copytree(LINE, tmp_path / "sine" / name)
    replay_ = load_replay(str(tmp_path / "sine" / "run_07"), "sim_gps", "ch_gauss", "chrono_paper_demo", 0)
    assert (replay_.run.scenario, replay_.run.k, replay_.run.variant) == ("sine", 1, "sim_gps-ch_gauss")
    named = load_replay(str(tmp_path / "sine" / "run_07"), "real", "ch_gauss", "chrono_paper_demo", 0,
                        scenario="lot17", k=4)
    assert named.run.label == "real/real/lot17/4"
