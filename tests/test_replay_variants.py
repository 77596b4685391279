"""``replay`` with several ``--replace`` variants in one call (issue 18 item 9): the real bag is read and
judged once, each variant once."""
from __future__ import annotations

import pytest
import yaml
from test_pipeline_replay import art_like_truth, make_art_bag

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.replay.real_bag import parse_replace


def variants(*items):
    return [(sim.variant, sim.replace) for sim in parse_replace(list(items))]


def test_replace_models_are_crossed_per_sensor():
    assert variants("imu=a") == [("sim_imu-a", {"imu": "a"})]
    assert variants("imu=a", "gps=x") == [("sim_gps-x_imu-a", {"gps": "x", "imu": "a"})]  # as before
    assert variants("imu=a", "imu=b") == [("sim_imu-a", {"imu": "a"}), ("sim_imu-b", {"imu": "b"})]
    assert variants("gps=x", "gps=y", "imu=a") == [("sim_gps-x_imu-a", {"gps": "x", "imu": "a"}),
                                                   ("sim_gps-y_imu-a", {"gps": "y", "imu": "a"})]
    with pytest.raises(UserError, match="'imu=a': imu model 'a' is given twice"):
        parse_replace(["imu=a", "imu=a"])
    with pytest.raises(UserError, match="both make the variant 'sim_imu-m'"):
        parse_replace(["imu=one/m.yaml", "imu=two/m.yaml"])
    with pytest.raises(UserError, match="expected imu=PRESET"):
        parse_replace(["lidar=x"])


def test_one_call_judges_the_real_bag_once(tmp_path, monkeypatch, capsys):
    from sim2real_eval.replay import offline as replay_module

    bag = make_art_bag(tmp_path / "bags" / "line" / "run_00", art_like_truth(6.0))
    calls = []
    real_judge_run = replay_module.judge_run

    def counting(judge, records, *args):
        records = list(records)
        calls.append(sorted({r[1] for r in records}))
        return real_judge_run(judge, records, *args)

    monkeypatch.setattr(replay_module, "judge_run", counting)
    reads = []
    real_read = replay_module.read_real_streams
    monkeypatch.setattr(replay_module, "read_real_streams",
                        lambda spec: reads.append(spec.bag) or real_read(spec))
    out = tmp_path / "out"
    assert main(["replay", str(bag), "--replace", "imu=chrono_paper_demo", "--replace", "imu=mavs_mems",
                 "--out", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert len(reads) == 1 and len(calls) == 3  # one reading, the real run + two variants
    runs = sorted(str(p.parent.relative_to(out)) for p in out.rglob("run.yaml"))
    assert runs == ["real/real/line/0", "sim/sim_imu-chrono_paper_demo/line/0",
                    "sim/sim_imu-mavs_mems/line/0"]
    assert printed.count(str(out)) == 3
    for run in runs[1:]:
        record = yaml.safe_load((out / run / "run.yaml").read_text())
        assert record["replaced"] == ["imu"] and record["imu"]["frame_id"] == "imu"
        assert record["imu"]["mounting_rpy"] == [0.0, -1.5708, 3.1416]  # the real IMU's frame and mount
    # Adding a variant later resumes: the real run and the first variant are not judged again.
    calls.clear()
    assert main(["replay", str(bag), "--replace", "imu=chrono_paper_demo", "--replace", "imu=ideal",
                 "--out", str(out), "--workers", "1"]) == 0
    assert len(calls) == 1 and (out / "sim" / "sim_imu-ideal" / "line" / "0" / "run.yaml").is_file()
