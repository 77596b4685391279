"""YAML reading with errors that name the file and the key (robot-side: Python 3.8)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import yaml

from .errors import UserError

# libyaml's parser when PyYAML was built with it (~10x faster, same documents); pure Python otherwise.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path) -> Any:
    """Parse a YAML file; a missing file or a syntax error is a one-line UserError naming it."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.load(stream, Loader=_SAFE_LOADER)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a YAML file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


class Section:
    """Typed, validated access to one mapping of a YAML file.

    Every accessor names ``<source>: <prefix>.<key>`` in its error, so a user sees exactly which
    key of which file is wrong.  ``unknown_keys()`` lets callers reject typos.
    """

    def __init__(self, data: Optional[Mapping], source: str, prefix: str = ""):
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise UserError(f"{source}: {prefix or 'top level'} must be a mapping, got {type(data).__name__}")
        self.data = dict(data)
        self.source = str(source)
        self.prefix = prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def error(self, key: str, message: str) -> UserError:
        return UserError(f"{self.source}: {self.name(key)}: {message}")

    def has(self, key: str) -> bool:
        return key in self.data

    def section(self, key: str, required: bool = False) -> Section:
        if key not in self.data:
            if required:
                raise self.error(key, "missing key")
            return Section({}, self.source, self.name(key))
        return Section(self.data[key], self.source, self.name(key))

    def _get(self, key, default, required):
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.error(key, "missing key")
            return default, False
        return self.data[key], True

    def number(self, key: str, default: Optional[float] = None, *, required: bool = False,
               positive: bool = False, nonnegative: bool = False) -> Optional[float]:
        value, present = self._get(key, default, required)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {value!r}")
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            raise self.error(key, f"expected a finite number, got {value!r}")
        if positive and not value > 0:
            raise self.error(key, f"must be > 0, got {value!r}")
        if nonnegative and value < 0:
            raise self.error(key, f"must be >= 0, got {value!r}")
        return value

    def integer(self, key: str, default: Optional[int] = None, *, required: bool = False,
                minimum: Optional[int] = None) -> Optional[int]:
        value, present = self._get(key, default, required)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value!r}")
        return value

    def boolean(self, key: str, default: Optional[bool] = None, *, required: bool = False) -> Optional[bool]:
        value, present = self._get(key, default, required)
        if present and not isinstance(value, bool):
            raise self.error(key, f"expected true/false, got {value!r}")
        return value

    def string(self, key: str, default: Optional[str] = None, *, required: bool = False,
               choices: Optional[Iterable[str]] = None) -> Optional[str]:
        value, present = self._get(key, default, required)
        if not present:
            return value
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {value!r}")
        if choices is not None:
            choices = list(choices)
            if value not in choices:
                raise self.error(key, f"unknown value {value!r}; expected one of {', '.join(choices)}")
        return value

    def vector(self, key: str, length: int, default=None, *, required: bool = False,
               nonnegative: bool = False):
        value, present = self._get(key, default, required)
        if not present:
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value] * length  # a scalar applies to every axis
        if not isinstance(value, (list, tuple)) or len(value) != length:
            raise self.error(key, f"expected a number or a list of {length} numbers, got {value!r}")
        out = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
                raise self.error(key, f"expected finite numbers, got {value!r}")
            if nonnegative and item < 0:
                raise self.error(key, f"must be >= 0, got {value!r}")
            out.append(float(item))
        return out

    def unknown_keys(self, allowed: Iterable[str]) -> None:
        allowed = set(allowed)
        extra = sorted(k for k in self.data if k not in allowed)
        if extra:
            raise UserError(
                f"{self.source}: {self.prefix or 'top level'}: unknown key(s) {', '.join(map(str, extra))}; "
                f"expected some of {', '.join(sorted(allowed))}"
            )
