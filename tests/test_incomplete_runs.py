"""Only a finished run may look finished: run.yaml ``complete``/``failure``, the launch's verdict
(node.recording.RunCompletion) and the readers that refuse incomplete runs (score, tune, resume)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml
from test_score_bags import FAST, make_run, write_run_bag

from sim2real_eval import runs
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.metrics import ScoreOptions
from sim2real_eval.node.recording import UNCONFIRMED, RunCompletion
from sim2real_eval.runs import RunId, RunInfo

EKF_DEATH = "ekf_filter_node exited with code -9"


def record(side="real", variant="real", scenario="line", k=0, **keys) -> dict:
    topics = {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom", "gps": "/fix",
              "imu": "/imu"}
    return {"side": side, "variant": variant, "scenario": scenario, "k": k, "seed": 0, "topics": topics,
            **keys}


# ------------------------------------------------------------------------------------- run.yaml
def test_the_mark_round_trips_in_the_documented_key_order():
    info = RunInfo(RunId("real", "real", "line", 0), seed=1, recorded_by="recorder_node", version="0.1.0")
    marked = info.marked(EKF_DEATH)
    data = marked.to_dict()
    assert list(data)[-4:] == ["recorded_by", "version", "complete", "failure"]
    assert data["complete"] is False and data["failure"] == EKF_DEATH
    assert marked.incomplete == EKF_DEATH
    again = RunInfo.from_dict(yaml.safe_load(marked.to_yaml()), "run.yaml")
    assert again == marked and again.to_yaml() == marked.to_yaml()
    done = marked.marked(None)
    assert done.complete is True and done.failure is None and done.incomplete is None
    assert "failure" not in done.to_dict()


def test_the_judge_outcome_marks_an_offline_run_complete_and_stays_last():
    class Result:
        inputs, dropped, published, warnings = {"/imu": 5}, {}, 2, []

    data = RunInfo(RunId("sim", "a", "line", 0), version="0.1.0").with_outcome(Result()).to_dict()
    assert list(data)[-3:] == ["version", "complete", "judge_outcome"] and data["complete"] is True


def test_files_without_the_key_are_read_as_they_are_and_not_refused():
    data = record()
    info = RunInfo.from_dict(data, "run.yaml")
    assert info.complete is None and info.incomplete is None and info.to_dict() == data
    assert RunInfo.from_dict(record(complete=False), "run.yaml").incomplete == "marked incomplete"


@pytest.mark.parametrize("change, message", [
    ({"complete": "no"}, "complete: expected true/false"),
    ({"complete": False, "failure": 3}, "failure: expected a string"),
])
def test_a_bad_mark_names_the_file_and_key(change, message):
    with pytest.raises(UserError, match=f"^runs/x/run.yaml: {message}"):
        RunInfo.from_dict(record(**change), "runs/x/run.yaml")


def test_mark_run_rewrites_only_the_mark(tmp_path):
    info = RunInfo.from_dict(record(recorded_by="recorder_node", version="0.1.0"), "x").marked(UNCONFIRMED)
    (tmp_path / "run.yaml").write_text(info.to_yaml())
    runs.mark_run(tmp_path, None)
    text = (tmp_path / "run.yaml").read_text()
    assert text == info.marked(None).to_yaml() and "failure" not in text
    runs.mark_run(tmp_path, "ekf_filter_node exited\nwith code -9")  # one line in the file
    assert runs.read_run_info(tmp_path).failure == EKF_DEATH
    assert [p.name for p in tmp_path.iterdir()] == ["run.yaml"]  # no temporary left


def test_resume_refuses_an_incomplete_run(tmp_path):
    info = RunInfo.from_dict(record(files={}), "x")  # a run of no data files (the files it records)
    path = info.run.directory(tmp_path)
    path.mkdir(parents=True)
    (path / "run.yaml").write_text(info.marked(EKF_DEATH).to_yaml())
    with pytest.raises(UserError, match=f"an incomplete run \\({EKF_DEATH}\\); remove it"):
        runs.existing_run(path, info)
    (path / "run.yaml").write_text(info.marked(None).to_yaml())
    assert runs.existing_run(path, info) is True  # the mark is not compared


# ------------------------------------------------------------------------- the launch's verdict
def recorded_run(tmp_path):
    output = tmp_path / "runs" / "real" / "real" / "line" / "0"
    output.mkdir(parents=True)
    (output / "run.yaml").write_text(RunInfo.from_dict(record(), "x").marked(UNCONFIRMED).to_yaml())
    return output


def mark_of(output):
    info = runs.read_run_info(output)
    return info.complete, info.failure


def test_a_bag_played_to_its_end_is_confirmed(tmp_path):
    output = recorded_run(tmp_path)
    completion = RunCompletion(output)
    completion.exited("bag_player", 0, shutting_down=False)
    completion.shutdown("bag_player finished")
    for name in ("ekf_filter_node", "navsat_transform", "replay_node"):
        completion.exited(name, -2, shutting_down=True)  # stopped by the shutdown: fine
    completion.exited("recorder_node", 0, shutting_down=True)
    assert mark_of(output) == (True, None)


def test_a_node_killed_mid_run_marks_the_run(tmp_path):
    """ekf_node SIGKILLed while the bag plays: launch_actions.watch reports the failure, the launch
    shuts down, the player is stopped, the recorder still closes a valid bag."""
    output = recorded_run(tmp_path)
    completion = RunCompletion(output)
    completion.exited("ekf_filter_node", -9, shutting_down=False)
    completion.failed(EKF_DEATH)
    completion.shutdown(f"Caught exception in launch (see debug for traceback): {EKF_DEATH}")
    completion.exited("bag_player", 0, shutting_down=True)
    assert mark_of(output) == (False, UNCONFIRMED)  # the recorder has not closed the run yet
    completion.exited("recorder_node", 0, shutting_down=True)
    assert mark_of(output) == (False, EKF_DEATH)


def test_ctrl_c_marks_the_run_with_the_shutdown_reason(tmp_path):
    output = recorded_run(tmp_path)
    completion = RunCompletion(output)
    completion.shutdown("ctrl-c (SIGINT)")
    completion.exited("bag_player", 0, shutting_down=True)
    completion.exited("recorder_node", 0, shutting_down=True)
    assert mark_of(output) == (False, "the launch stopped before the bag was played to its end "
                                      "(ctrl-c (SIGINT))")


def test_a_failure_after_the_run_was_confirmed_marks_it_again(tmp_path):
    output = recorded_run(tmp_path)
    completion = RunCompletion(output)
    completion.exited("bag_player", 0, shutting_down=False)
    completion.exited("recorder_node", 0, shutting_down=True)
    assert mark_of(output) == (True, None)
    completion.failed("replay_node exited with code 1")
    assert mark_of(output) == (False, "replay_node exited with code 1")


def test_a_recorder_that_wrote_nothing_leaves_nothing_to_mark(tmp_path):
    output = tmp_path / "runs" / "real" / "real" / "line" / "0"
    completion = RunCompletion(output)
    completion.failed("recorder_node exited with code 2")
    completion.exited("recorder_node", 2, shutting_down=True)
    assert not output.exists()


# ------------------------------------------------------------------------------- the readers
@pytest.fixture
def runs_tree(tmp_path):
    """Two real and two sim runs of one scenario; real/real/line/1 is marked incomplete."""
    rng = np.random.default_rng(3)
    root = tmp_path / "OUT"
    for side, variant in (("real", "real"), ("sim", "gauss")):
        for k in (0, 1):
            info = record(side, variant, k=k, complete=True)
            if (side, k) == ("real", 1):
                info.update(complete=False, failure=EKF_DEATH)
            write_run_bag(root / side / variant / "line" / str(k), make_run(rng, 0.05), run_yaml=info)
    return root


def test_score_refuses_an_incomplete_run_in_one_line(runs_tree, tmp_path, capsys):
    code = main(["score", str(runs_tree), "--out", str(tmp_path / "rep"), *FAST])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and not (tmp_path / "rep").exists()
    assert str(runs_tree / "real" / "real" / "line" / "1") in err[0]
    assert f"incomplete run, not scored ({EKF_DEATH})" in err[0]


def test_score_skips_it_with_skip_bad_runs(runs_tree, tmp_path):
    # Two more complete real runs so that the scenario still has two per side.
    rng = np.random.default_rng(4)
    for k in (2, 3):
        write_run_bag(runs_tree / "real" / "real" / "line" / str(k), make_run(rng, 0.05),
                      run_yaml=record(k=k, complete=True))
    assert main(["score", str(runs_tree), "--out", str(tmp_path / "rep"), "--skip-bad-runs", *FAST]) == 0
    skipped = json.loads((tmp_path / "rep" / "vepd.json").read_text())["options"]["skipped_runs"]
    assert len(skipped) == 1 and "incomplete run" in skipped[0]["reason"]


def test_a_manifest_naming_an_incomplete_run_is_refused(runs_tree, tmp_path, capsys):
    entries = [{"path": str(runs_tree / side / variant / "line" / str(k)), "side": side, "scenario": "line",
                **({"variant": variant} if side == "sim" else {})}
               for side, variant in (("real", "real"), ("sim", "gauss")) for k in (0, 1)]
    manifest = tmp_path / "runs.yaml"
    manifest.write_text(yaml.safe_dump({"runs": entries}))
    assert main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "rep"), *FAST]) == 2
    assert "incomplete run, not scored" in capsys.readouterr().err


def test_tune_refuses_an_incomplete_real_run(runs_tree):
    from sim2real_eval.studies.tune import load_real_records

    with pytest.raises(UserError, match=r"real/real/line/1: incomplete run, not scored \(ekf_filter_node"):
        load_real_records(runs_tree, ("line",), ScoreOptions())


def test_old_runs_without_the_mark_are_scored(runs_tree, tmp_path):
    tree = tmp_path / "old"
    shutil.copytree(runs_tree, tree)
    for run_yaml in tree.glob("*/*/line/*/run.yaml"):
        data = yaml.safe_load(run_yaml.read_text())
        data.pop("complete"), data.pop("failure", None)
        run_yaml.write_text(yaml.safe_dump(data))
    assert main(["score", str(tree), "--out", str(tmp_path / "rep"), *FAST]) == 0
