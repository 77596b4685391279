"""The demo's configuration: a demo file (``config/studies/demo.yaml``, a template ``import`` records,
``demo_car.yaml`` with its ``real_sample:`` section) parsed once, into the frozen ``DemoConfig`` every
step of the demo, the real sample and the CLI take.  Errors name ``file: key``.  The ``judge:`` section
is read by ``pipeline.study.load_judge_config``, the one reader of a judge section (study files have
one too)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bags.records import check_ground_truth_rate
from ..importer.vehicle import recorded_template
from ..noise_floor.compute import DRAWS
from ..resources import config_path
from ..yamlio import Section, load_yaml
from .judges import from_section

DEFAULT_CONFIG = ("studies", "demo.yaml")
REAL_SAMPLE_CONFIG = ("studies", "demo_car.yaml")  # --real-sample: the car study and its real_sample section
TOP_KEYS = ("name", "seed", "repeats", "quick_repeats", "reference", "gps_study", "imu_study", "judge",
            "ground_truth_rate", "score", "paper_variants", "real_sample", "judges")
REAL_SAMPLE_KEYS = ("segment", "scenario", "window_s", "held_out_windows", "estimate_mounting",
                    "fix_covariance", "sensitivity", "pseudorange_policy", "calibrate", "tune", "fit")
EVERY_SCENARIO = "*"       # imu_study.scenario: the IMU study on every scenario
# The paper's GPS variants, the names its findings (``findings``) are stated in.
PAPER_VARIANTS = ("ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim")


@dataclass(frozen=True)
class RealSampleConfig:
    """The ``real_sample:`` section of a demo file (``real_sample``'s choices)."""

    source: str
    segment: str | None          # None: the shipped comma2k19 segment
    scenario: str
    window_s: float
    held_out_windows: int
    estimate_mounting: bool
    fix_covariance: float
    sensitivity: tuple
    pseudorange_policy: bool
    t_b: float
    min_imu_duration: float
    tune_variant: str
    tune_params: str
    tune_budget: int
    tune_seed: int
    fit: tuple = ()              # (budget, seeds, folds, seed) of `fit` on the held-out windows (issue 31)


@dataclass(frozen=True)
class DemoConfig:
    """A demo file, parsed (``load_demo_config``)."""

    source: str
    name: str
    seed: int
    repeats: int
    quick_repeats: int
    reference: str            # path of the reference setup YAML
    gps_variants: tuple       # GPS presets (variant names = preset names)
    gps_study_imu: str | dict  # an IMU preset name, YAML path or mapping
    imu_scenario: str
    imu_study_imu: str | dict
    judge: Any                # judge.config.JudgeConfig
    ground_truth_rate: float
    bootstrap: int
    permutations: int
    score_seed: int
    noise_floor_draws: int = 4
    static_tfs_by_layout: bool = True  # no judge.static_tfs: each bag gets its default (ART layout → ART)
    paper_variants: tuple = ()  # ((paper name, variant), …): which variant plays which paper variant
    real_sample: RealSampleConfig | None = None  # --real-sample: its section, or None
    judges: tuple = ()          # judge names every run is also judged by (judges.py; --judges)


def _paper_variants(sec: Section, variants) -> tuple:
    """``paper_variants:`` {paper name: GPS variant}; default: each paper name that is a variant itself."""
    if not sec.has("paper_variants"):
        return tuple((name, name) for name in PAPER_VARIANTS if name in variants)
    mapping = sec.section("paper_variants")
    mapping.unknown_keys(PAPER_VARIANTS)
    for name, variant in mapping.data.items():
        if variant not in variants:
            raise mapping.error(name, f"{variant!r} is not a variant of gps_study.gps "
                                      f"({', '.join(variants)})")
    return tuple((name, mapping.data[name]) for name in PAPER_VARIANTS if name in mapping.data)


def load_demo_config(path=None) -> DemoConfig:
    """Parse the demo YAML (default: config/studies/demo.yaml); errors name file: key."""
    from ..pipeline.study import check_name, load_judge_config

    path = Path(path) if path is not None else config_path(*DEFAULT_CONFIG)
    sec = Section(load_yaml(path), str(path))
    sec.unknown_keys(TOP_KEYS)
    gps = sec.section("gps_study", required=True)
    gps.unknown_keys(("gps", "imu"))
    variants = gps.data.get("gps")
    if not isinstance(variants, list) or not variants:
        raise gps.error("gps", f"expected a non-empty list of GPS presets, got {variants!r}")
    for i, name in enumerate(variants):
        check_name(gps, f"gps[{i}]", name, "GPS preset")
    if len(set(variants)) != len(variants):
        raise gps.error("gps", "a preset is listed twice")
    imu = sec.section("imu_study", required=True)
    imu.unknown_keys(("scenario", "imu"))
    imu_scenario = imu.string("scenario", "line")
    if imu_scenario != EVERY_SCENARIO:
        check_name(imu, "scenario", imu_scenario, f"scenario (or {EVERY_SCENARIO!r}: every scenario)")
    score = sec.section("score")
    score.unknown_keys(("bootstrap", "permutations", "seed", "noise_floor_draws"))
    judge_section = sec.section("judge")
    by_layout = not judge_section.has("static_tfs")
    judge = load_judge_config(judge_section, path.parent)
    if by_layout:  # decided per real bag (bags.layout.default_static_tfs), said on stderr
        judge = dataclasses.replace(judge, static_tfs=())
    reference = Path(sec.string("reference", "demo_reference.yaml"))
    if not reference.is_absolute():
        reference = path.parent / reference
    sample = _real_sample_config(sec.section("real_sample"), path.parent) if sec.has("real_sample") else None
    return DemoConfig(
        source=str(path),
        name=sec.string("name", path.stem),
        seed=sec.integer("seed", required=True, minimum=0),
        repeats=sec.integer("repeats", 10, minimum=1),
        quick_repeats=sec.integer("quick_repeats", 3, minimum=1),
        reference=str(reference),
        gps_variants=tuple(variants),
        gps_study_imu=_model(gps, "imu"),
        imu_scenario=imu_scenario,
        imu_study_imu=_model(imu, "imu"),
        judge=judge,
        ground_truth_rate=check_ground_truth_rate(sec.number("ground_truth_rate", 50.0, positive=True),
                                                  f"{path}: ground_truth_rate"),
        bootstrap=score.integer("bootstrap", 1000, minimum=0),
        permutations=score.integer("permutations", 1000, minimum=0),
        score_seed=score.integer("seed", 0, minimum=0),
        noise_floor_draws=score.integer("noise_floor_draws", DRAWS, minimum=2),
        static_tfs_by_layout=by_layout,
        paper_variants=_paper_variants(sec, variants),
        real_sample=sample,
        judges=from_section(sec),
    )


def _model(sec: Section, key: str) -> Any:
    value = sec.data.get(key)
    if (isinstance(value, str) and value) or (isinstance(value, dict) and value):
        return value
    raise sec.error(key, f"expected a preset name, YAML path or mapping, got {value!r}")


def _real_sample_config(section: Section, base_dir: Path) -> RealSampleConfig:
    """The ``real_sample:`` section of a demo file; errors name file: key."""
    from ..pipeline.study import check_name

    section.unknown_keys(REAL_SAMPLE_KEYS)
    calibrate = section.section("calibrate")
    calibrate.unknown_keys(("t_b", "min_imu_duration"))
    tune = section.section("tune", required=True)
    tune.unknown_keys(("variant", "params", "budget", "seed"))
    fit = section.section("fit")
    fit.unknown_keys(("budget", "seeds", "folds", "seed"))
    scales = section.data.get("sensitivity", [0.5, 2.0])
    if not isinstance(scales, list) or not all(isinstance(s, (int, float)) and not isinstance(s, bool)
                                               and 0 < s < float("inf") and s != 1 for s in scales):
        raise section.error("sensitivity", f"expected a list of factors > 0 other than 1, got {scales!r}")
    segment = section.string("segment", None)
    if segment is not None and not Path(segment).is_absolute():
        segment = str(base_dir / segment)
    scenario = check_name(section, "scenario", section.string("scenario", "highway"), "scenario")
    return RealSampleConfig(
        source=section.source, segment=segment, scenario=scenario,
        window_s=section.number("window_s", required=True, positive=True),
        held_out_windows=section.integer("held_out_windows", required=True, minimum=2),
        estimate_mounting=section.boolean("estimate_mounting", True),
        fix_covariance=section.number("fix_covariance", required=True, positive=True),
        sensitivity=tuple(float(s) for s in scales),
        pseudorange_policy=section.boolean("pseudorange_policy", True),
        t_b=calibrate.number("t_b", 0.1, positive=True),
        min_imu_duration=calibrate.number("min_imu_duration", 30.0, positive=True),
        tune_variant=tune.string("variant", required=True),
        tune_params=tune.string("params", required=True),
        tune_budget=tune.integer("budget", 16, minimum=1),
        tune_seed=tune.integer("seed", 0, minimum=0),
        fit=(fit.integer("budget", 40, minimum=1), fit.integer("seeds", 3, minimum=1),
             fit.integer("folds", 2, minimum=2), fit.integer("seed", 0, minimum=0)),
    )


def recorded_template_config(real, notice):
    """The demo file of the study template ``import`` recorded for the imported drives in ``real``
    (DIR/import.yaml: ``vehicle.template``), said in one line; None (the default demo file) for bags that
    are no import."""
    recorded = recorded_template(real)
    if recorded is None:
        return None
    name, reason = recorded
    if notice is not None:
        notice(f"--real {real}: the template import recorded, config/studies/{name} ({reason}); "
               "--config overrides it")
    return config_file(("studies", name))


def config_file(parts: tuple) -> Path:
    """A file of the installed ``config/`` folder (``resources.config_path``)."""
    return config_path(*parts)
