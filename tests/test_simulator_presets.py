"""The simulators' study (config/studies/simulators.yaml) and its generated table in docs/models.md."""

import json
from pathlib import Path

from fixtures.benchmarks import load_benchmark

from sim2real_eval.models import load_gps_model, load_imu_model
from sim2real_eval.studies.config import load_demo_config

REPO = Path(__file__).resolve().parents[1]


def table_script():
    return load_benchmark("simulator_table")


def test_study_file_loads_and_names_every_simulator_model():
    config = load_demo_config(REPO / "config" / "studies" / "simulators.yaml")
    assert config.real_sample is not None  # it runs with demo --real-sample
    assert set(config.gps_variants) == {"ideal", "ch_rw", "airsim_default", "hector", "carla_leaderboard",
                                        "gz_navsat"}
    for name in config.gps_variants:
        load_gps_model(name, 0)
    for name in table_script().IMUS:
        load_imu_model(name, 0)


def test_docs_region_is_the_last_recorded_run_rendered():
    script = table_script()
    record = json.loads(script.RECORD.read_text(encoding="utf-8"))
    region = script.regions(script.DOC.read_text(encoding="utf-8"))[script.NAME]
    assert region == script.render(record)
    assert set(record["runs"]) == set(script.IMUS)
    for numbers in record["runs"].values():  # every run scored the GPS study and its IMU, with a floor
        assert set(numbers["gps"]) >= {"ideal", "carla_leaderboard", "gz_navsat"}
        assert numbers["gps_floor"]["interval"][0] <= numbers["gps_floor"]["VEPD"] <= \
            numbers["gps_floor"]["interval"][1]
    assert "carla_leaderboard" in region and "judge-noise floor" in region
