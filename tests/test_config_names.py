"""Inputs named as a user names them (issue 19): bare config, study and preset file names resolve from any
working directory as study files resolve them; ``tune --real`` takes replay's and the demo's outputs as
they are; a wrong layout is refused by an error naming the expected one."""
from __future__ import annotations

from pathlib import Path

import pytest

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.resources import config_candidates, config_path, find_config
from sim2real_eval.studies.tune import REAL_LAYOUT, real_runs_dir

REPO = Path(__file__).resolve().parents[1]
BAG = REPO / "bags" / "reference" / "line" / "run_00"


def test_bare_names_are_looked_up_in_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_config("ekf_art_iros2024.yaml") == config_path("ekf_art_iros2024.yaml")
    assert find_config("demo.yaml", "studies") == config_path("studies", "demo.yaml")
    assert find_config("studies/tiny.yaml") == config_path("studies", "tiny.yaml")  # relative to config/ too
    (tmp_path / "ekf_art_iros2024.yaml").write_text("mine: true\n")  # the working directory comes first
    assert find_config("ekf_art_iros2024.yaml") == Path("ekf_art_iros2024.yaml")
    assert config_candidates("/abs/x.yaml", "studies") == [Path("/abs/x.yaml")]
    with pytest.raises(UserError, match=r"--config nope\.yaml: file not found \(looked in: nope\.yaml, "):
        find_config("nope.yaml", option="--config")


def test_commands_take_bare_names_from_any_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["judge", str(BAG), "--config", "ekf_art_iros2024.yaml", "--navsat",
                 "navsat_art_iros2024.yaml", "--output", "judged", "--no-progress"]) == 0
    assert main(["judge", "--check", "ekf_art_iros2024.yaml"]) == 0
    assert main(["sensors", "--scenario", "line", "--gps", "ch_rw.yaml", "--imu", "chrono_paper_demo.yaml",
                 "--out", "sensors"]) == 0
    assert main(["replay", str(BAG), "--config", "ekf_art_iros2024.yaml", "--replace",
                 "imu=chrono_paper_demo", "--out", "runs", "--workers", "1", "--no-progress"]) == 0
    assert main(["simulate", "tiny.yaml", "--out", "simulated", "--workers", "1", "--no-progress"]) == 0
    assert len(list((tmp_path / "simulated").rglob("run.yaml"))) == 4
    capsys.readouterr()
    assert main(["simulate", "nothing.yaml", "--out", "x"]) == 2
    assert "STUDY nothing.yaml: file not found (looked in: nothing.yaml" in capsys.readouterr().err


def test_tune_takes_replay_and_demo_outputs_as_they_are(tmp_path):
    replayed = tmp_path / "replayed"
    (replayed / "real" / "real" / "line" / "0").mkdir(parents=True)
    assert real_runs_dir(replayed) == replayed
    demo = tmp_path / "demo"
    (demo / "runs" / "real" / "real" / "line" / "0").mkdir(parents=True)
    (demo / "demo.json").write_text("{}")
    assert real_runs_dir(demo) == demo / "runs"
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "demo.json").write_text("{}")
    with pytest.raises(UserError, match="a demo output without its run bags") as error:
        real_runs_dir(tmp_path / "memory")
    assert REAL_LAYOUT in str(error.value)
    (tmp_path / "bags" / "line" / "run_00").mkdir(parents=True)  # real bags, not judged runs
    for where in (tmp_path / "bags", tmp_path / "missing"):
        with pytest.raises(UserError) as error:
            real_runs_dir(where)
        assert "DIR/real/real/<scenario>/<k>/" in str(error.value)
        assert "DIR/runs/real/real/<scenario>/<k>/" in str(error.value)


def test_demo_real_names_its_layout(tmp_path, capsys):
    flat = tmp_path / "flat"
    flat.mkdir()
    for run in ("run_00", "run_01"):
        (flat / run).symlink_to(REPO / "bags" / "reference" / "line" / run)
    assert main(["demo", "--real", str(flat), "--out", str(tmp_path / "o"), "--k", "2"]) == 2
    err = capsys.readouterr().err
    assert "holds the runs of one scenario (run_00, run_01)" in err and "DIR/<scenario>/<run>/" in err
    assert f"--real {tmp_path} (scenarios there: flat)" in err and not (tmp_path / "o").exists()
    spaced = tmp_path / "my runs"   # a folder name that cannot name a scenario: say how to make one
    flat.rename(spaced)
    assert main(["demo", "--real", str(spaced), "--out", str(tmp_path / "o"), "--k", "2"]) == 2
    assert "move its runs into NEW/<scenario>/ (a scenario name)" in capsys.readouterr().err
