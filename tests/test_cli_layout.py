"""How a command is written (docs/architecture.md, "cli — how a command is written", issue 32): each
command module has ``add_arguments(parser)`` and ``run(args)``; ``run`` parses → calls one service
function → prints, within 40 lines; numbers are checked while parsing by the shared validators of
``cli/validators.py``, never by hand after it; a refused value is one line naming the option, exit 2."""
from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import pytest

from sim2real_eval.cli import COMMANDS, main
from sim2real_eval.cli import validators as v

SRC = Path(__file__).resolve().parents[1] / "src" / "sim2real_eval"
RUN_MAX_LINES = 40
SERVICE_MAX_LINES = 700


def _functions(path: Path) -> dict:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_module_is_add_arguments_and_a_short_run(command):
    module = COMMANDS[command][0]
    functions = _functions(SRC / "cli" / f"{module}.py")
    assert {"add_arguments", "run"} <= set(functions), f"cli/{module}.py"
    run = functions["run"]
    length = run.end_lineno - run.lineno + 1
    assert length <= RUN_MAX_LINES, f"cli/{module}.py: run() is {length} lines (at most {RUN_MAX_LINES})"


def _hand_checked_numbers(path: Path) -> list:
    """``args.X < 0``-style comparisons of a parsed option with a number: a check a validator does."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        options = [s for s in sides if isinstance(s, ast.Attribute) and isinstance(s.value, ast.Name)
                   and s.value.id == "args"]
        numbers = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, (int, float))
                   and not isinstance(s.value, bool)]
        if options and numbers and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
            found.append(f"{path.name}:{node.lineno}: args.{options[0].attr}")
    return found


def test_no_command_checks_a_number_by_hand_after_parsing():
    """"--k and --seed must be >= 0" was written four times after parsing; validators do it now."""
    found = [hit for path in sorted((SRC / "cli").glob("*.py")) for hit in _hand_checked_numbers(path)]
    assert not found, found


def test_the_detector_sees_a_hand_check(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def run(args):\n    if args.seed < 0:\n        raise ValueError\n")
    assert _hand_checked_numbers(sample) == ["sample.py:2: args.seed"]


def test_service_modules_stay_small():
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines())
             for path in (SRC / "service").glob("*.py")}
    assert not {name: n for name, n in sizes.items() if n > SERVICE_MAX_LINES}, sizes


# --------------------------------------------------------------------------------- the validators
@pytest.mark.parametrize("function, text, value", [
    (v.integer, "-3", -3), (v.integer, "+7", 7),
    (v.non_negative_int, "0", 0), (v.non_negative_int, "12", 12),
    (v.positive_int, "1", 1),
    (v.positive_float, "2.5", 2.5), (v.positive_float, "1e-3", 0.001),
    (v.finite_float, "-1.5", -1.5), (v.finite_float, "0", 0.0),
])
def test_validators_accept(function, text, value):
    assert function(text) == value


@pytest.mark.parametrize("function, text, message", [
    (v.integer, "\u0662", "ASCII digits"),          # int() reads the Arabic-Indic two as 2
    (v.integer, "1_0", "ASCII digits"),             # and 1_0 as 10
    (v.non_negative_int, "-1", "must be >= 0, got '-1'"),
    (v.positive_int, "0", "must be >= 1, got '0'"),
    (v.positive_float, "0", "must be a finite number > 0, got '0'"),
    (v.positive_float, "-2", "> 0"),
    (v.positive_float, "nan", "> 0"),
    (v.positive_float, "inf", "> 0"),
    (v.positive_float, "fast", "expected a number, got 'fast'"),
    (v.finite_float, "inf", "expected a finite number"),
])
def test_validators_refuse_with_the_reason(function, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message.replace("(", r"\(")):
        function(text)


def test_existing_path(tmp_path):
    assert v.existing_path(str(tmp_path)) == str(tmp_path)
    (tmp_path / "bag.db3").write_bytes(b"")
    assert v.existing_path(str(tmp_path / "bag.db3")) == str(tmp_path / "bag.db3")
    with pytest.raises(argparse.ArgumentTypeError, match="absent: No such file or directory"):
        v.existing_path(str(tmp_path / "absent"))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(argparse.ArgumentTypeError, match="loop: a symbolic link loop"):
        v.existing_path(str(tmp_path / "loop"))


# ------------------------------------------------------------------ refused values, end to end
@pytest.mark.parametrize("argv, option", [
    (["scenario", "line", "--k", "-1", "--out", "{tmp}/t.npz"], "--k"),
    (["scenario", "line", "--seed", "-1", "--out", "{tmp}/t.npz"], "--seed"),
    (["sensors", "--scenario", "line", "--seed", "-2", "--out", "{tmp}/s"], "--seed"),
    (["replay", "bags/reference/line", "--replace", "imu=mavs_mems", "--out", "{tmp}/o", "--k", "-1"], "--k"),
    (["replay", "bags/reference/line", "--replace", "imu=mavs_mems", "--out", "{tmp}/o", "--workers", "0"],
     "--workers"),
    (["replay", "bags/reference/line", "--replace", "imu=mavs_mems", "--out", "{tmp}/o",
      "--ground-truth-rate", "0"], "--ground-truth-rate"),
    (["make-reference", "--out", "{tmp}/o", "--seed", "-1"], "--seed"),
    (["demo", "--out", "{tmp}/o", "--workers", "0"], "--workers"),
    (["score", "{tmp}", "--out", "{tmp}/o", "--seed", "-1"], "--seed"),
    (["tune", "--study", "tiny.yaml", "--real", "{tmp}", "--params", "gps.sigma=0.1:1", "--out", "{tmp}/o",
      "--seed", "-1"], "--seed"),
    (["calibrate", "{tmp}/absent", "--out", "{tmp}/p.yaml"], "STANDSTILL_BAG"),
    (["calibrate", "bags/reference/line/run_00", "--out", "{tmp}/p.yaml", "--max-speed", "0"], "--max-speed"),
    (["judge", "{tmp}/absent", "--config", "ekf_art_iros2024.yaml", "--output", "{tmp}/o"], "bag"),
])
def test_a_refused_value_is_one_line_naming_the_option(tmp_path, capsys, monkeypatch, argv, option):
    monkeypatch.chdir(SRC.parents[1])  # bags/reference/... as written
    argv = [part.format(tmp=tmp_path) for part in argv]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"sim2real-eval {argv[0]}: error: argument {option}"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is written"


def test_every_command_module_imports_its_validators_from_one_place():
    """No command defines its own copy of a shared validator."""
    shared = {name for name in dir(v) if not name.startswith("_") and callable(getattr(v, name))}
    for module, _help in COMMANDS.values():
        functions = set(_functions(SRC / "cli" / f"{module}.py"))
        assert not functions & shared, f"cli/{module}.py redefines {functions & shared}"
        importlib.import_module(f"sim2real_eval.cli.{module}")
