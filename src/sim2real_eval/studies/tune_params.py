"""The searched parameters of ``tune``: ``NAME=LOW:HIGH[:log]`` ranges parsed and checked against the
resolved model dicts (``parse_params``), the names that can be searched (``tunable_names``), and a
candidate's values written into a copy of the models (``apply_params``).

Parameter names are dotted paths into the resolved model dicts (``gps.position.sigma``); a unique
suffix is enough (``gps.sigma``).  A list-valued parameter (per-axis) is set to the same value on every
axis.  Ranges: ``NAME=LOW:HIGH`` (uniform) or ``NAME=LOW:HIGH:log`` (log-uniform).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from ..errors import UserError


@dataclass(frozen=True)
class ParamRange:
    """A searched parameter: ``path`` into the {"gps": …, "imu": …} model dicts, bounds, scale."""

    name: str         # as the user wrote it
    path: tuple       # full key path, e.g. ("gps", "position", "sigma")
    low: float
    high: float
    log: bool = False
    choices: tuple = ()  # a categorical parameter (``fit``'s reported-covariance model): low/high unused

    @property
    def full_name(self) -> str:
        return ".".join(self.path)


def tunable_names(models: dict) -> list[str]:
    """Every numeric leaf (or list of numbers) of {"gps": dict, "imu": dict}, as dotted paths."""
    names = []

    def walk(node, prefix):
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, prefix + (str(key),))
        elif _is_number(node) or (isinstance(node, list) and node and all(_is_number(v) for v in node)):
            names.append(".".join(prefix))

    walk(models, ())
    return names


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_bound(text: str, item: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--params: {item!r}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UserError(f"--params: {item!r}: bounds must be finite")
    return value


def parse_params(text: str, models: dict) -> list[ParamRange]:
    """``"gps.sigma=0.01:0.1,gps.v_max=0.005:0.05:log"`` → ParamRanges, checked against ``models``.

    Unknown or ambiguous names and empty ranges are UserErrors listing the valid names.
    """
    valid = tunable_names(models)
    listing = ", ".join(valid) or "none"
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    if not items:
        raise UserError(f"--params: give at least one NAME=LOW:HIGH; valid names: {listing}")
    ranges, seen = [], set()
    for item in items:
        name, low, high, log = _parse_item(item, listing)
        full = _full_name(name, valid, listing)
        if not low < high:
            raise UserError(f"--params: {name}: empty range {low:g}:{high:g} (need LOW < HIGH); "
                            f"valid names: {listing}")
        if log and low <= 0:
            raise UserError(f"--params: {name}: a log range needs LOW > 0, got {low:g}")
        if full in seen:
            raise UserError(f"--params: {full} is given twice")
        seen.add(full)
        ranges.append(ParamRange(name, tuple(full.split(".")), low, high, log))
    return ranges


def _parse_item(item: str, listing: str) -> tuple:
    """``NAME=LOW:HIGH[:log|:linear]`` → (name, low, high, log)."""
    if "=" not in item:
        raise UserError(f"--params: {item!r} is not NAME=LOW:HIGH[:log]; valid names: {listing}")
    name, bounds = (part.strip() for part in item.split("=", 1))
    parts = bounds.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("log", "linear")):
        raise UserError(f"--params: {item!r}: expected LOW:HIGH or LOW:HIGH:log")
    low, high = _parse_bound(parts[0], item), _parse_bound(parts[1], item)
    return name, low, high, len(parts) == 3 and parts[2] == "log"


def _full_name(name: str, valid: list, listing: str) -> str:
    """The tunable parameter ``name`` means: itself, or the one ``KIND.….LEAF`` its ``KIND.LEAF`` names."""
    kind, _, leaf = name.partition(".")
    matches = [v for v in valid if v == name] or [
        v for v in valid if leaf and v.startswith(kind + ".") and v.endswith("." + leaf)]
    if not matches:
        raise UserError(f"--params: unknown parameter {name!r}; valid names: {listing}")
    if len(matches) > 1:
        raise UserError(f"--params: {name!r} is ambiguous ({', '.join(matches)}); valid names: {listing}")
    return matches[0]


def apply_params(models: dict, ranges: list, values: dict) -> dict:
    """A deep copy of ``models`` with each range's leaf set to ``values[full_name]`` (lists: every axis)."""
    out = copy.deepcopy(models)
    for rng in ranges:
        node = out
        for key in rng.path[:-1]:
            node = node[key]
        value = values[rng.full_name] if rng.choices else float(values[rng.full_name])
        old = node[rng.path[-1]]
        node[rng.path[-1]] = [value] * len(old) if isinstance(old, list) else value
    return out


# ------------------------------------------------------------------------------------ one trial
