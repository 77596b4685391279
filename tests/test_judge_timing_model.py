"""The judge timing model (runs.timing): options, study files, per-run draws with common random
numbers across variants, run.yaml records and resume."""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.bags import open_bag
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.pipeline.study import load_study
from sim2real_eval.resources import config_path
from sim2real_eval.runs import RunInfo, existing_run, timing
from sim2real_eval.runs.timing import LATENCY_HIGH_NS, RunTiming, TimingModel
from sim2real_eval.yamlio import Section

PERIODS = (28_571_429, 100_000_000)  # the ART judge: 35 Hz EKF, 10 Hz navsat


def parse(*argv):
    parser = argparse.ArgumentParser()
    timing.add_arguments(parser)
    return timing.from_args(parser.parse_args(list(argv)))


def test_command_line_options():
    assert parse() is None  # nothing given: the study's / the default model
    assert parse("--timer-phase-ms", "12") == TimingModel("fixed", 12_000_000, 12_000_000, 0)
    assert parse("--timer-phase-ms", "12.5,9", "--tick-latency-ms", "3") == \
        TimingModel("fixed", 12_500_000, 9_000_000, 3_000_000)
    assert parse("--timing", "random") == TimingModel("random")
    assert parse("--timing", "random", "--timing-seed", "4") == TimingModel("random", seed=4)
    assert parse("--timing", "fixed").is_default


@pytest.mark.parametrize("argv, text", [
    (("--timing", "random", "--timer-phase-ms", "3"), "draws the phases"),
    (("--timing", "random", "--tick-latency-ms", "3"), "draws the phases"),
    (("--timing-seed", "3",), "only applies to --timing random"),
    (("--timer-phase-ms", "1,2,3"), "expected EKF or EKF,NAVSAT"),
    (("--timer-phase-ms", "x"), "not a number"),
    (("--timer-phase-ms", "-1"), ">= 0"),
    (("--tick-latency-ms", "nan"), ">= 0"),
    (("--timing", "random", "--timing-seed", "-1"), ">= 0"),
])
def test_bad_options_are_one_line_errors(argv, text):
    with pytest.raises(UserError, match=text):
        parse(*argv)


def test_fixed_values_and_their_period_check():
    model = TimingModel("fixed", 12_000_000, 9_000_000, 1_000_000)
    assert model.run_timing(PERIODS, 0, "line", 0) == RunTiming(12_000_000, 9_000_000, 1_000_000)
    assert model.run_timing((PERIODS[0], None), 0) == RunTiming(12_000_000, 0, 1_000_000)  # no navsat
    with pytest.raises(UserError, match=r"EKF timer: 30 ms is not inside its period \[0, 28.5714 ms\)"):
        TimingModel("fixed", 30_000_000).run_timing(PERIODS, 0)


def test_random_draws_are_seeded_per_run_without_the_variant():
    model = TimingModel("random")
    a = model.run_timing(PERIODS, 7, "line", 0)
    assert a == model.run_timing(PERIODS, 7, "line", 0)  # reproducible
    assert a != model.run_timing(PERIODS, 7, "line", 1)
    assert a != model.run_timing(PERIODS, 7, "sine", 0)
    assert a != model.run_timing(PERIODS, 8, "line", 0)
    assert TimingModel("random", seed=8).run_timing(PERIODS, 7, "line", 0) == \
        model.run_timing(PERIODS, 8, "line", 0)  # --timing-seed replaces the run's seed
    assert all(isinstance(v, int) for v in a)


def test_random_draws_are_uniform_over_the_periods_and_the_latency_range():
    draws = np.array([TimingModel("random").run_timing(PERIODS, 0, "line", k) for k in range(4000)])
    for column, high in zip(draws.T, (PERIODS[0], PERIODS[1], LATENCY_HIGH_NS)):
        assert column.min() >= 0 and column.max() < high
        # Uniform: each quarter of the range holds a quarter of the draws (± 5 sigma of a binomial).
        counts = np.histogram(column, bins=4, range=(0, high))[0]
        assert np.all(np.abs(counts - 1000) < 5 * np.sqrt(4000 * 0.25 * 0.75))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 50))
def test_random_values_stay_inside_the_periods(seed, k):
    values = TimingModel("random").run_timing(PERIODS, seed, "circle", k)
    assert 0 <= values.ekf_phase_ns < PERIODS[0]
    assert 0 <= values.navsat_phase_ns < PERIODS[1]
    assert 0 <= values.tick_latency_ns < LATENCY_HIGH_NS


def test_records():
    values = RunTiming(1, 2, 3)
    assert TimingModel().record(RunTiming(), 0) is None  # the default: no run.yaml key
    assert TimingModel("fixed", 1, 2, 3).record(values, 5) == {
        "model": "fixed", "ekf_phase_ns": 1, "navsat_phase_ns": 2, "tick_latency_ns": 3}
    assert TimingModel("random").record(values, 5) == {
        "model": "random", "seed": 5, "latency": "uniform(0, 25 ms)", "ekf_phase_ns": 1, "navsat_phase_ns": 2,
        "tick_latency_ns": 3}
    assert TimingModel("random", seed=9).record(values, 5)["seed"] == 9


def test_study_section():
    def section(text):
        return Section({"timing": __import__("yaml").safe_load(text)}, "s.yaml").section("timing")

    assert TimingModel.from_section(section("{model: random}")) == TimingModel("random")
    assert TimingModel.from_section(section("{model: random, seed: 2}")) == TimingModel("random", seed=2)
    assert TimingModel.from_section(section("{ekf_phase_ms: 12, navsat_phase_ms: 9.5}")) == \
        TimingModel("fixed", 12_000_000, 9_500_000)
    for text, message in (("{model: random, ekf_phase_ms: 3}", "s.yaml: timing.ekf_phase_ms: model random"),
                          ("{model: fixed, seed: 3}", "timing.seed: only model random"),
                          ("{model: often}", "timing.model: unknown value"),
                          ("{ekf_phase: 3}", "unknown key"),
                          ("{tick_latency_ms: -2}", "timing.tick_latency_ms: must be >= 0")):
        with pytest.raises(UserError, match=message):
            TimingModel.from_section(section(text))


@pytest.fixture
def study_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent("""
        seed: 3
        repeats: 2
        scenarios: [line, circle]
        variants:
          a: {gps: ch_gauss, imu: chrono_paper_demo}
          b: {gps: ch_rw, imu: chrono_paper_demo}
        judge: {ekf: ekf_art_iros2024.yaml, navsat: navsat_art_iros2024.yaml, timing: {model: random}}
    """))
    return path


def test_study_runs_share_timing_across_variants_and_record_it(study_file):
    runs = load_study(study_file).runs()
    by_key = {}
    for spec in runs:
        by_key.setdefault((spec.scenario, spec.k), set()).add(spec.timing)
    assert len(by_key) == 4 and all(len(v) == 1 for v in by_key.values())  # common random numbers
    assert len({next(iter(v)) for v in by_key.values()}) == 4             # but one draw per run
    record = runs[0].info().to_dict()
    assert list(record).index("timing") == list(record).index("judge") + 1
    assert record["timing"]["model"] == "random" and record["timing"]["seed"] == 3
    assert record["timing"]["ekf_phase_ns"] == runs[0].timing.ekf_phase_ns
    assert RunInfo.from_dict(record, "run.yaml").timing == record["timing"]


def test_default_timing_writes_no_key_so_earlier_runs_resume(tmp_path):
    study = tmp_path / "d.yaml"
    study.write_text("seed: 1\nrepeats: 1\nscenarios: [line]\n"
                     "variants: {a: {gps: ch_gauss, imu: chrono_paper_demo}}\n")
    record = load_study(study).runs()[0].info().to_dict()
    assert "timing" not in record


def test_resume_refuses_a_run_judged_with_other_timing(study_file, tmp_path):
    spec = load_study(study_file).runs()[0]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = spec.info().to_dict()
    other = dict(record, timing=dict(record["timing"], ekf_phase_ns=record["timing"]["ekf_phase_ns"] + 1))
    (run_dir / "run.yaml").write_text(RunInfo.from_dict(other, "x").to_yaml())
    with pytest.raises(UserError, match="differs from the requested one at 'timing.ekf_phase_ns'"):
        existing_run(run_dir, spec.info())
    (run_dir / "run.yaml").write_text(spec.info().with_files(run_dir).to_yaml())  # its files, as written
    assert existing_run(run_dir, spec.info())


@pytest.mark.parametrize("timing_value, text", [
    ("fast", "expected a mapping"),
    ({"model": "sometimes", "ekf_phase_ns": 0, "navsat_phase_ns": 0, "tick_latency_ns": 0}, "timing.model"),
    ({"model": "fixed", "ekf_phase_ns": -1, "navsat_phase_ns": 0, "tick_latency_ns": 0},
     "timing.ekf_phase_ns"),
    ({"model": "fixed", "navsat_phase_ns": 0, "tick_latency_ns": 0}, "timing.ekf_phase_ns: missing key"),
])
def test_run_yaml_timing_is_validated(timing_value, text):
    data = {"side": "sim", "variant": "a", "scenario": "line", "k": 0, "timing": timing_value}
    with pytest.raises(UserError, match=text):
        RunInfo.from_dict(data, "run.yaml")


# ------------------------------------------------------------------------------ end to end
REFERENCE = Path(__file__).resolve().parents[1] / "bags" / "reference"
ART_TFS = ["--static-tf", "base_link imu 0 0 0 3.1416 -1.5708 0", "--static-tf", "base_link gps 0 0 0 0 0 0"]


def judge_cli(out, *timing_args):
    config = [str(config_path(name)) for name in ("ekf_art_iros2024.yaml", "navsat_art_iros2024.yaml")]
    code = main(["judge", str(REFERENCE / "line" / "run_00"), "--config", config[0], "--navsat", config[1],
                 *ART_TFS, "--output", str(out), "--no-progress", *timing_args])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    with open_bag(out) as reader:
        messages = [(m.recv_ns, m.topic, bytes(m.data)) for m in reader.raw_messages()]
    return summary, messages


def test_judge_command_timing(tmp_path):
    default, default_messages = judge_cli(tmp_path / "a")
    assert default["timing"] == {"model": "fixed", **dict.fromkeys(RunTiming._fields, 0)}
    zero, zero_messages = judge_cli(tmp_path / "b", "--timer-phase-ms", "0,0", "--tick-latency-ms", "0")
    assert zero_messages == default_messages  # fixed 0/0/0 is the historical judge, bit for bit
    shifted, shifted_messages = judge_cli(tmp_path / "c", "--timer-phase-ms", "12.5,9")
    assert shifted["timing"] == {"model": "fixed", "ekf_phase_ns": 12_500_000, "navsat_phase_ns": 9_000_000,
                                 "tick_latency_ns": 0}
    assert shifted_messages != default_messages
    stamps = [r for r, topic, _d in shifted_messages if topic == "/odometry/filtered"]
    assert len(stamps) > 1000
    drawn, _ = judge_cli(tmp_path / "d", "--timing", "random", "--timing-seed", "3")
    assert drawn["timing"]["model"] == "random" and drawn["timing"]["seed"] == 3
    expected = TimingModel("random", seed=3).run_timing(PERIODS, 0)
    assert [drawn["timing"][k] for k in RunTiming._fields] == list(expected)


def test_replay_judges_the_real_run_and_its_variants_with_one_timing(tmp_path, capsys):
    out = tmp_path / "runs"
    bag = str(REFERENCE / "line" / "run_00")
    args = ["replay", bag, "--replace", "imu=chrono_paper_demo", "--out", str(out), "--timing", "random",
            "--no-progress"]
    assert main(args) == 0
    real = yaml.safe_load((out / "real" / "real" / "line" / "0" / "run.yaml").read_text())
    sim = yaml.safe_load((out / "sim" / "sim_imu-chrono_paper_demo" / "line" / "0" / "run.yaml").read_text())
    assert real["timing"] == sim["timing"]
    assert real["timing"]["model"] == "random" and real["timing"]["seed"] == 0
    assert main(args) == 0  # resume: the same timing
    assert "already complete" in capsys.readouterr().out
    assert main([*args, "--timing-seed", "1"]) == 2
    assert "differs from the requested one at 'timing." in capsys.readouterr().err


def test_simulate_with_random_timing_shares_it_across_variants(tmp_path):
    study = Path(__file__).resolve().parents[1] / "config" / "studies" / "tiny.yaml"
    out = tmp_path / "out"
    assert main(["simulate", str(study), "--out", str(out), "--workers", "1", "--no-progress",
                 "--timing", "random"]) == 0
    records = {f"{path.parents[2].name}/{path.parent.name}": yaml.safe_load(path.read_text())["timing"]
               for path in sorted(out.glob("sim/*/line/*/run.yaml"))}
    assert len(records) == 4  # 2 variants x K = 2
    assert records["ch_gauss/0"] == records["ch_rw/0"] != records["ch_gauss/1"] == records["ch_rw/1"]
    assert records["ch_gauss/0"]["seed"] == 7  # the study's seed
