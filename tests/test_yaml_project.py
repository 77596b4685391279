"""The project's own YAML (presets, studies, scenarios, demo, run.yaml): one loader, ROS's number reading.

yamlio.load_yaml is YAML 1.1 (libyaml's safe loader) plus the doubles rcl reads and YAML 1.1 leaves as
strings, a refused repeated key, and one-line errors for every way of not reading a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sim2real_eval import limits
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.models import load_gps_model
from sim2real_eval.resources import config_path
from sim2real_eval.yamlio import dump_yaml, load_yaml

CONFIG = Path(config_path("ekf_art_iros2024.yaml")).parent


def load_text(tmp_path, text: str, name="f.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return load_yaml(path)


@pytest.mark.parametrize(
    "text, value",
    [
        ("3e-2", 0.03), ("1e-9", 1e-9), ("1e9", 1e9), ("1.0e7", 1e7), ("-.5", -0.5), ("+2E+3", 2000.0),
        # YAML 1.1 as before
        ("30", 30), ("30.0", 30.0), ("1.0e-7", 1e-7), ("0x1F", 31), ("010", 8), ("1_000", 1000),
        ("yes", True),
        (".inf", float("inf")), ("1e", "1e"), ("abc1e5", "abc1e5"), ("'1e5'", "1e5"),
    ],
)
def test_number_reading(tmp_path, text, value):
    got = load_text(tmp_path, f"sigma: {text}\n")["sigma"]
    assert got == value and type(got) is type(value)


def test_every_shipped_config_loads_to_the_same_values_as_plain_yaml_1_1():
    files = sorted(CONFIG.rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        assert load_yaml(path) == yaml.load(path.read_text(), Loader=yaml.SafeLoader), path


def test_a_gps_preset_with_an_exponent_sigma(tmp_path):
    text = Path(config_path("sensors", "gps", "ch_gauss.yaml")).read_text()
    text = text.replace("sigma: 0.03", "sigma: 3e-2")
    assert "3e-2" in text
    preset = tmp_path / "gauss_exp.yaml"
    preset.write_text(text)
    assert load_gps_model(preset).noise.params["sigma"] == [0.03, 0.03, 0.03]


def test_a_repeated_key_is_an_error_naming_both_lines(tmp_path):
    message = r"f\.yaml: line 3 invalid YAML \(key 'sigma' given twice \(first at line 2\)\)"
    with pytest.raises(UserError, match=message):
        load_text(tmp_path, "position_noise:\n  sigma: 0.1\n  sigma: 0.2\n")
    assert load_text(tmp_path, "base: &b {a: 1, b: 2}\nuse:\n  <<: *b\n  a: 3\n")["use"] == {"a": 3, "b": 2}


def test_dump_quotes_strings_that_would_read_back_as_numbers():
    record = {"name": "1e5", "version": "1.0e7", "value": 1e-9, "n": 3}
    text = dump_yaml(record)
    assert "'1e5'" in text and "'1.0e7'" in text
    assert yaml.load(text, Loader=yaml.SafeLoader) == record


def test_unreadable_files_are_one_line(tmp_path, monkeypatch):
    latin1 = tmp_path / "study.yaml"
    latin1.write_bytes(b"name: x   # heading 90\xb0\nseed: 1\n")
    with pytest.raises(UserError, match=r"study\.yaml: line 1 column 23: byte 0xB0 is not UTF-8"):
        load_yaml(latin1)
    with pytest.raises(UserError, match="invalid YAML value"):
        load_text(tmp_path, "date: 2024-13-01\n")
    with pytest.raises(UserError, match="file not found"):
        load_yaml(tmp_path / "absent.yaml")
    with pytest.raises(UserError, match="is a directory"):
        load_yaml(tmp_path)
    # The test may run as root, who reads any file: the OS's refusal is simulated here.
    def refuse(path, *args):
        raise PermissionError(13, "Permission denied", str(path))

    with monkeypatch.context() as patch:
        patch.setattr(limits.os, "open", refuse)
        with pytest.raises(UserError, match=r"study\.yaml: permission denied \(the file cannot be read\)"):
            load_yaml(latin1)


def test_cli_latin1_study_is_one_line_and_exit_2(tmp_path, capsys):
    study = tmp_path / "study.yaml"
    text = Path(config_path("studies", "tiny.yaml")).read_bytes()
    study.write_bytes(text.replace(b"# A small", b"# \xb0 A small"))
    code = main(["simulate", str(study), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "byte 0xB0 is not UTF-8" in err
    assert not (tmp_path / "out").exists()
