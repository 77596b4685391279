"""Study files: parsing, validation (errors name file and key), expansion into runs, run.yaml checks."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from sim2real_eval.errors import UserError
from sim2real_eval.judge.config import JudgeConfig, load_imu, model_parameters
from sim2real_eval.pipeline.simulated_run import SimRunSpec
from sim2real_eval.pipeline.study import load_study
from sim2real_eval.runs import existing_run, first_difference, remove_stale_temporaries

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def judge_files(tmp_path):
    ekf = tmp_path / "ekf.yaml"
    navsat = tmp_path / "navsat.yaml"
    ekf.write_text("ekf_filter_node:\n  ros__parameters:\n    frequency: 35.0\n")
    navsat.write_text("navsat_transform:\n  ros__parameters:\n    zero_altitude: true\n")
    return ekf, navsat


def write_study(tmp_path, judge_files, body: str, name: str = "s.yaml") -> Path:
    ekf, navsat = judge_files
    text = textwrap.dedent(body).replace("EKF", str(ekf)).replace("NAVSAT", str(navsat))
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = """
    seed: 3
    repeats: 2
    scenarios: [line, circle]
    variants:
      a: {gps: ch_gauss, imu: chrono_paper_demo}
      b: {gps: {model: gaussian, sigma: 0.05}, imu: chrono_paper_text}
    judge: {ekf: EKF, navsat: NAVSAT}
"""


def test_expansion_order_and_fields(tmp_path, judge_files):
    study = load_study(write_study(tmp_path, judge_files, BASE))
    runs = study.runs()
    assert study.name == "s" and study.seed == 3 and study.repeats == 2
    assert [(r.variant, r.scenario, r.k) for r in runs] == [
        ("a", "line", 0), ("a", "line", 1), ("a", "circle", 0), ("a", "circle", 1),
        ("b", "line", 0), ("b", "line", 1), ("b", "circle", 0), ("b", "circle", 1),
    ]
    assert runs[4].gps == {"model": "gaussian", "sigma": 0.05}
    assert runs[0].storage == "sqlite3" and study.runs(storage="mcap")[0].storage == "mcap"
    assert runs[0].ground_truth_rate == 50.0
    # Default static TFs: the ART ones.
    assert runs[0].judge.static_tfs == ("base_link imu 0 0 0 3.1416 -1.5708 0", "base_link gps 0 0 0 0 0 0")
    assert runs[0].directory(tmp_path / "out") == tmp_path / "out" / "sim" / "a" / "line" / "0"


def test_matrix_names(tmp_path, judge_files):
    body = """
        seed: 1
        repeats: 1
        scenarios: {line: null, sine: {duration: 20}}
        matrix:
          gps: [ch_gauss, {name: wide, model: gaussian, sigma: 1.0}]
          imu: [chrono_paper_demo]
        judge: {ekf: EKF, navsat: NAVSAT}
    """
    study = load_study(write_study(tmp_path, judge_files, body))
    assert [v.name for v in study.variants] == ["ch_gauss", "wide"]
    assert study.variants[1].gps == {"model": "gaussian", "sigma": 1.0}  # 'name' removed
    assert study.scenarios == {"line": None, "sine": {"duration": 20}}
    body2 = body.replace("imu: [chrono_paper_demo]", "imu: [chrono_paper_demo, airsim]")
    study2 = load_study(write_study(tmp_path, judge_files, body2, "s2.yaml"))
    assert [v.name for v in study2.variants] == [
        "ch_gauss+chrono_paper_demo", "ch_gauss+airsim", "wide+chrono_paper_demo", "wide+airsim"]


A = "a: {gps: ch_gauss, imu: chrono_paper_demo}"
J = "judge: {ekf: EKF, navsat: NAVSAT}"
S = "scenarios: [line, circle]"


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("seed: 3", "seed: 3\nbogus: 1", "top level: unknown key(s) bogus"),
        ("seed: 3", "seed: -1", "seed: must be >= 0"),
        ("repeats: 2", "repeats: 0", "repeats: must be >= 1"),
        ("repeats: 2", "repeats: two", "repeats: expected an integer"),
        (S, "scenarios: [line, line]", "scenarios[1]: scenario 'line' listed twice"),
        (S, "scenarios: []", "scenarios: expected a non-empty list"),
        (S, "scenarios: [../up]", "scenarios[0]: scenario name '../up'"),
        (A, "a: {gps: ch_gauss}", "variants.a.imu: missing key"),
        (A, "a: {gps: 3, imu: x}", "variants.a.gps: expected a preset"),
        (A, "a: {gps: g, imu: i, mag: m}", "variants.a: unknown key(s) mag"),
        (A, "real: {gps: g, imu: i}", "variants.real: 'real' is reserved"),
        (J, "judge: {ekf: /nonexistent/ekf.yaml, navsat: NAVSAT}",
         "judge.ekf: file '/nonexistent/ekf.yaml' not found"),
        (J, "judge: {ekf: EKF, navsat: NAVSAT, static_tfs: [base_link imu 0 0]}",
         "judge.static_tfs[0]: static TF 'base_link imu 0 0': expected"),
        (J, "judge: {ekf: EKF, navsat: NAVSAT, frequency: 3}",
         "judge: unknown key(s) frequency"),
    ],
)
def test_bad_values_name_file_and_key(tmp_path, judge_files, old, new, expected):
    body = textwrap.dedent(BASE).replace(old, new)
    assert body != textwrap.dedent(BASE)
    path = write_study(tmp_path, judge_files, body)
    with pytest.raises(UserError) as info:
        load_study(path)
    message = str(info.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message


def test_missing_variants_and_file(tmp_path, judge_files):
    lines = textwrap.dedent(BASE).splitlines()
    body = "\n".join(line for line in lines if not line.startswith(("  ", "variants")))
    with pytest.raises(UserError, match="needs 'variants' or 'matrix'"):
        load_study(write_study(tmp_path, judge_files, body))
    with pytest.raises(UserError, match="file not found"):
        load_study(tmp_path / "absent.yaml")


def test_shipped_studies_parse():
    paper = REPO / "config" / "studies" / "paper_gps.yaml"
    if not (REPO / "config" / "ekf_art_iros2024.yaml").is_file():
        pytest.skip("config/ekf_art_iros2024.yaml (judge issue) not in the tree yet")
    study = load_study(paper)
    names = ["ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim"]
    assert [v.name for v in study.variants] == names
    assert list(study.scenarios) == ["line", "sine", "circle"] and study.repeats == 10
    assert len(study.runs()) == 150
    assert all(v.imu == "chrono_paper_demo" for v in study.variants)
    assert len(load_study(REPO / "config" / "studies" / "tiny.yaml").runs()) == 4


def test_imu_model_is_mounted_like_the_judge_tf(judge_files):
    judge = JudgeConfig(str(judge_files[0]), str(judge_files[1]))
    # static_transform_publisher order: yaw pitch roll -> mounting (roll, pitch, yaw).
    assert judge.mounting_rpy() == [0.0, -1.5708, 3.1416]
    model = load_imu({"mounting_rpy": [0.1, 0.2, 0.3]}, judge)
    assert list(model.mounting_rpy) == [0.0, -1.5708, 3.1416]  # the TF wins over the preset
    assert model_parameters("imu", {}, judge)["mounting_rpy"] == [0.0, -1.5708, 3.1416]
    no_imu_tf = JudgeConfig(judge.ekf, judge.navsat, ("base_link imu2 0 0 0 0 0 0",))
    with pytest.raises(UserError, match="frame_id 'imu' has no static TF in the judge"):
        load_imu({}, no_imu_tf)


def test_existing_run_resume_and_mismatch(tmp_path, judge_files):
    judge = JudgeConfig(str(judge_files[0]), str(judge_files[1]))
    spec = SimRunSpec("a", "line", 0, 3, "ch_gauss", {}, judge)
    path = spec.directory(tmp_path)
    assert spec.record()["gps"]["rate"] == 10.0  # run.yaml holds the effective model parameters
    assert spec.record()["models"] == {"gps": "ch_gauss", "imu": {}}
    assert existing_run(path, spec.record()) is False
    path.mkdir(parents=True)
    with pytest.raises(UserError, match="has no run.yaml"):
        existing_run(path, spec.record())
    record = spec.record()
    record["version"] = "0.0.0-other"  # the version alone does not invalidate a run
    record["judge"]["ekf"] = "/moved/ekf.yaml"  # nor a moved judge file with the same content
    record["files"] = {}  # the data files as written (none here): what resume checks
    (path / "run.yaml").write_text(yaml.safe_dump(record))
    assert existing_run(path, spec.record()) is True
    other = SimRunSpec("a", "line", 0, 4, "ch_gauss", {}, judge)
    with pytest.raises(UserError, match="differs from the requested one at 'seed'"):
        existing_run(path, other.record())
    judge_files[0].write_text("ekf_filter_node:\n  ros__parameters:\n    frequency: 30.0\n")
    with pytest.raises(UserError, match="judge.ekf_sha256"):
        existing_run(path, spec.record())


def test_stale_temporaries_are_removed(tmp_path):
    final = tmp_path / "sim" / "a" / "line" / "0"
    stale = final.parent / ".0.tmp-abc123"
    stale.mkdir(parents=True)
    (stale / "half.db3").write_bytes(b"x")
    keep = final.parent / ".1.tmp-zzz"  # another run's temporary: not ours to remove
    keep.mkdir()
    remove_stale_temporaries(final)
    assert not stale.exists() and keep.exists()


# ------------------------------------------------------------------------------ property tests
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_names = st.text("abcdefgh_-", min_size=1, max_size=6).filter(lambda s: s[0].isalpha())
_leaves = st.one_of(st.integers(-5, 5), st.floats(-1e3, 1e3, allow_nan=False), st.text("xyz", max_size=3),
                    st.booleans(), st.none())
_records = st.recursive(_leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(_names, inner, max_size=3)),
                        max_leaves=12)


@settings(max_examples=25, deadline=None)
@given(variants=st.lists(_names, min_size=1, max_size=4, unique=True),
       scenarios=st.lists(_names, min_size=1, max_size=3, unique=True), repeats=st.integers(1, 4))
def test_expansion_covers_every_cell_once(tmp_path_factory, variants, scenarios, repeats):
    tmp = tmp_path_factory.mktemp("prop")
    ekf, navsat = tmp / "e.yaml", tmp / "n.yaml"
    ekf.write_text("a: 1\n")
    navsat.write_text("a: 1\n")
    variants = [v for v in variants if v != "real"] or ["v"]
    study = {"seed": 1, "repeats": repeats, "scenarios": scenarios,
             "variants": {v: {"gps": "g", "imu": "i"} for v in variants},
             "judge": {"ekf": str(ekf), "navsat": str(navsat)}}
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(study))
    runs = load_study(path).runs()
    cells = [(r.variant, r.scenario, r.k) for r in runs]
    assert len(cells) == len(set(cells)) == len(variants) * len(scenarios) * repeats
    assert len({r.directory(tmp) for r in runs}) == len(runs)


@settings(max_examples=50, deadline=None)
@given(record=st.dictionaries(_names, _records, min_size=1, max_size=4), data=st.data())
def test_first_difference_names_the_changed_key(record, data):
    assert first_difference(record, yaml.safe_load(yaml.safe_dump(record))) is None
    key = data.draw(st.sampled_from(sorted(record)))
    changed = dict(record, **{key: ["<changed>"]})
    diff = first_difference(record, changed)
    assert diff is not None and diff.split(".")[0].split("[")[0] == key


def test_simulate_cli_bad_study_is_one_line_and_writes_nothing(tmp_path, judge_files, capsys):
    from sim2real_eval.cli import main

    path = write_study(tmp_path, judge_files, textwrap.dedent(BASE).replace("repeats: 2", "repeats: -2"))
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sim2real-eval simulate: error: {path}: repeats: must be >= 1, got -2"
    assert not out.exists()
