"""User-facing text stands on the repository alone: a user's clone has no ``../shared`` and none of
this machine's paths.  Checked: README, docs, the launch files, every launch argument's description
(what ``ros2 launch … --show-args`` prints) and every command's ``--help``."""
from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = re.compile(r"\.\./shared|(?<![\w.])shared/(?:peer|spec|real|tools)|/work/|/root/|/home/\w")


def texts():
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
                 *sorted((REPO / "launch").glob("*.launch.py"))]:
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")
    from sim2real_eval.node import launch_plan

    for table in ("EVALUATE_ARGUMENTS", "SENSORS_ARGUMENTS", "JUDGE_ARGUMENTS"):
        for name, (default, description) in getattr(launch_plan, table).items():
            yield f"{table}[{name}]", f"{default} {description}"
    from sim2real_eval.cli import COMMANDS

    for command, (module_name, _summary) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"sim2real-eval {command}")
        importlib.import_module(f"sim2real_eval.cli.{module_name}").add_arguments(parser)
        yield f"sim2real-eval {command} --help", parser.format_help()


@pytest.mark.parametrize("where, text", list(texts()), ids=lambda value: str(value)[:60])
def test_no_user_text_points_outside_the_repository(where, text):
    found = [f"line {text.count(chr(10), 0, m.start()) + 1}: {text[max(0, m.start() - 40):m.end() + 40]!r}"
             for m in FORBIDDEN.finditer(text)]
    assert not found, f"{where} names a path a user's clone does not have: {found}"
