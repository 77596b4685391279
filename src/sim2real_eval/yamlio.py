"""YAML reading with errors that name the file and the key (robot-side: Python 3.8).

Two readings, one module:

* ``load_yaml`` — the project's own files (sensor presets, studies, scenarios, demo and reference
  setups, run.yaml, calibrate outputs).  YAML 1.1 as PyYAML reads it, plus the numbers ROS reads as
  doubles and YAML 1.1 leaves as strings (``1e-9``, ``3e-2``, ``1e9``, ``1.0e7``, ``-.5``), so a value
  is the same number whichever of our files it sits in.  A key given twice in one mapping is an error.
* ``load_ros_params`` — ROS 2 parameter files (``node: {ros__parameters: {...}}``), typed exactly as
  Humble's rcl_yaml_param_parser types them (see ``rcl_scalar``) and refused where rcl or rclcpp
  refuses them.  robot_localization's parameter semantics live in ``judge.params``.

Both read the file the same way: a missing, unreadable or non-UTF-8 file is a one-line UserError.
"""
from __future__ import annotations

import copy
import math
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from .errors import UserError
from .limits import YAML_VALUES, read_file

# libyaml's parser when PyYAML was built with it (~10x faster, same documents); pure Python otherwise.
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FLOAT_TAG = "tag:yaml.org,2002:float"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Decimal numbers rcl (strtod) reads as doubles that YAML 1.1's float pattern misses: an exponent
# without a dot or without a sign (1e-9, 1e9, 1.0e7) and a signed leading dot (-.5).  Resolvers are
# tried in registration order, so YAML 1.1 ints (30, 0x1F, 010) stay ints.
_EXTRA_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_FLOAT_FIRST = list("-+0123456789.")


class _ProjectLoader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """libyaml's safe loader, plus the extra float forms and an error on a repeated key."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            first_line: Dict[Any, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first_line.get(key)
                except TypeError:  # unhashable: the base class reports it
                    continue
                if seen is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice (first at line {seen})", key_node.start_mark
                    )
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class _ProjectDumper(yaml.SafeDumper):
    """Quotes the strings ``_ProjectLoader`` would read back as numbers (e.g. the text ``1e5``)."""


for _cls in (_ProjectLoader, _ProjectDumper):
    _cls.add_implicit_resolver(_FLOAT_TAG, _EXTRA_FLOAT, _FLOAT_FIRST)


def _represent_str(dumper, value: str):
    """A string as YAML text; a file name that is not UTF-8 (a \\xff byte, a surrogate escape in Python)
    is written with the byte spelled ``\\xff``: YAML cannot hold a lone surrogate, and the same name
    always gives the same text (resume compares records through this dump)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return dumper.represent_str(value)


_ProjectDumper.add_representer(str, _represent_str)


def _read_text(path: Path, note: str = "") -> str:
    """The file's text; every way of not getting it is one line naming the file.  Regular files of at
    most ``limits.FILE_BYTES`` only (``limits.read_file``: a FIFO or a device is refused, not read)."""
    data = read_file(path, "YAML file")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a byte-order mark: YAML allows it
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise UserError(f"{path}: invalid UTF-16 text") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UserError(
            f"{path}: line {line} column {column}: byte 0x{data[exc.start]:02X} is not UTF-8 "
            f"(e.g. a Latin-1 degree sign){note}; save the file as UTF-8"
        ) from None


def expanded_values(root, limit: int) -> int:
    """How many values (scalars, lists, mappings) the composed document ``root`` holds with every alias
    expanded, counted without expanding (each node once, its size memoised); stops above ``limit``.
    A recursive alias (a node inside itself) counts as unbounded."""
    sizes: Dict[int, int] = {}
    pending = set()
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            continue
        children = ([part for pair in node.value for part in pair] if isinstance(node, MappingNode)
                    else node.value)
        if ready:
            pending.discard(key)
            sizes[key] = min(limit + 1, 1 + sum(sizes[id(child)] for child in children))
            continue
        if key in pending:
            return limit + 1
        pending.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in pending:  # the node contains itself
                return limit + 1
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes.get(id(root), 0)


def _yaml_error(path, exc: yaml.YAMLError) -> UserError:
    mark = getattr(exc, "problem_mark", None)
    where = f" line {mark.line + 1}" if mark is not None else ""
    return UserError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', None) or exc})")


def load_yaml(path) -> Any:
    """Parse one of the project's YAML files; any problem is a one-line UserError naming it.  Aliases
    may not expand the document beyond ``limits.YAML_VALUES`` values (an alias bomb of a few hundred
    bytes expands to billions: refused before anything walks it)."""
    path = Path(path)
    text = _read_text(path)
    # A study loads the same presets and configs for every run: parsed once per text (a copy each time:
    # callers may change what they get).
    key = (str(path), text)
    if key not in _PARSED:
        if len(_PARSED) >= 64:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = _parse_yaml(path, text)
    return copy.deepcopy(_PARSED[key])


_PARSED: Dict[tuple, Any] = {}  # (path, text) -> document (load_yaml)


def _parse_yaml(path: Path, text: str) -> Any:
    loader = _ProjectLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        limit = int(YAML_VALUES.high)
        if expanded_values(node, limit) > limit:
            raise UserError(f"{path}: YAML aliases (*name) expand the document to more than {limit:,} values "
                            "(an alias bomb?); write the values out or use fewer aliases")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except (ValueError, OverflowError) as exc:  # e.g. a timestamp with month 13
        raise UserError(f"{path}: invalid YAML value ({exc})") from None
    except RecursionError:
        raise UserError(f"{path}: invalid YAML (nested too deeply)") from None
    finally:
        loader.dispose()


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_ProjectDumper, sort_keys=False, default_flow_style=None)


# ---------------------------------------------------------------------------------------------------
# ROS 2 parameter files, typed as Humble's rcl_yaml_param_parser types them (parse.c, get_value):
# an unquoted scalar is a bool if it is one of the 22 YAML 1.1 spellings below, else an integer if C's
# strtoll(text, base 0) reads all of it without overflow, else a double if strtod does (overflow and
# inexact underflow set ERANGE: a string), else a string.  Quoted scalars are always strings; tags are
# ignored.  A list holds one type.  Nothing else (no null, no timestamps, no 1_000, no 0b1).

_RCL_TRUE = frozenset("Y y yes Yes YES true True TRUE on On ON".split())
_RCL_FALSE = frozenset("N n no No NO false False FALSE off Off OFF".split())
_RCL_SPECIAL_FLOATS = {  # spelled out in parse.c; strtod then reads the letters
    **{s: math.nan for s in (".nan", ".NaN", ".NAN")},
    **{s: math.inf for s in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{s: -math.inf for s in ("-.inf", "-.Inf", "-.INF")},
}
_C_SPACE = "[ \t\n\v\f\r]*"  # C isspace(), skipped by strtoll/strtod
_STRTOLL = re.compile(_C_SPACE + r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_STRTOD_DECIMAL = re.compile(_C_SPACE + r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")
_STRTOD_HEX = re.compile(
    _C_SPACE + r"([+-]?)0[xX]([0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)(?:[pP]([+-]?[0-9]+))?"
)
_STRTOD_INF_NAN = re.compile(_C_SPACE + r"([+-]?)(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DBL_MIN = sys.float_info.min


def _strtoll(text: str) -> Optional[int]:
    match = _STRTOLL.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    if digits[:2] in ("0x", "0X"):
        value = int(digits[2:], 16)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits, 8)
    else:
        value = int(digits)
    value = -value if sign == "-" else value
    return value if _INT64_MIN <= value <= _INT64_MAX else None  # ERANGE


def _checked(value: float, nonzero: bool, exact) -> Optional[float]:
    """strtod's value, or None where glibc sets ERANGE: overflow, and a non-zero number that comes out
    below DBL_MIN inexactly (``exact`` computes the written value as a Fraction, only then)."""
    if math.isinf(value):
        return None
    if nonzero and abs(value) < _DBL_MIN and (value == 0 or Fraction(value) != exact()):
        return None
    return value


def _strtod(text: str) -> Optional[float]:
    match = _STRTOD_DECIMAL.fullmatch(text)
    if match is not None:
        sign, mantissa, exponent = match.groups()
        literal = f"{sign}{mantissa}e{exponent or 0}"
        return _checked(float(literal), mantissa.strip("0.") != "", lambda: Fraction(literal))
    match = _STRTOD_HEX.fullmatch(text)
    if match is not None:
        sign, mantissa, exponent = match.groups()
        whole, _, fraction = mantissa.partition(".")
        digits = int((whole + fraction) or "0", 16)
        power = int(exponent or 0) - 4 * len(fraction)
        try:
            value = float.fromhex(f"{sign}0x{mantissa}p{exponent or 0}")
        except OverflowError:
            return None
        signed = -digits if sign == "-" else digits
        return _checked(value, digits != 0, lambda: signed * Fraction(2) ** power)  # lazy: power may be huge
    match = _STRTOD_INF_NAN.fullmatch(text)
    if match is not None:
        sign, word = match.groups()
        value = math.nan if word[0] in "nN" else math.inf
        return -value if sign == "-" else value
    return None


def rcl_scalar(text: str, quoted: bool = False):
    """The value Humble's rcl gives one YAML scalar: bool, int (int64), float (double) or str."""
    if quoted:
        return text
    if text in _RCL_TRUE:
        return True
    if text in _RCL_FALSE:
        return False
    integer = _strtoll(text)
    if integer is not None:
        return integer
    if text in _RCL_SPECIAL_FLOATS:
        return _RCL_SPECIAL_FLOATS[text]
    double = _strtod(text)
    return text if double is None else double


_SCALAR_TYPES = ((bool, "bool"), (int, "integer"), (float, "double"), (str, "string"))


def ros_type(value) -> str:
    """rclcpp's name of a parameter value's type: bool, integer, double, string, or <that>_array."""
    if isinstance(value, (list, tuple)):
        return f"{ros_type(value[0])}_array" if value else "not set"
    for python_type, name in _SCALAR_TYPES:  # bool first: it is an int in Python
        if isinstance(value, python_type):
            return name
    return type(value).__name__


@dataclass
class RosParam:
    """One parameter as rcl read it: the value and the 1-based line it was written on."""

    value: Any
    line: int
    node: str = ""  # the section it was written in


@dataclass
class RosNodeSection:
    """The ``ros__parameters`` of one node name (wildcards ``/**``, ``*`` included), merged as rcl merges
    repeated node names, with dotted names for nested mappings."""

    name: str
    line: int
    params: Dict[str, RosParam] = field(default_factory=dict)

    @property
    def is_wildcard(self) -> bool:
        return "*" in self.name

    def applies_to(self, fqn: str) -> bool:
        """Whether rclcpp gives these parameters to the node ``fqn`` ("/ns/name"), wildcards included."""
        name = self.name if self.name.startswith("/") else "/" + self.name
        pattern = re.escape(name).replace(r"/\*\*", r"(?:/\w+)*").replace(r"/\*", r"(?:/\w+)")
        return re.fullmatch(pattern, fqn, flags=re.ASCII) is not None

    def values(self) -> Dict[str, Any]:
        return {name: param.value for name, param in self.params.items()}


@dataclass
class RosParamsFile:
    source: str
    sections: List[RosNodeSection]

    def for_node(self, name: str) -> Dict[str, RosParam]:
        """Parameters rclcpp gives node ``name``: every section that applies, later ones winning."""
        fqn = name if name.startswith("/") else "/" + name
        merged: Dict[str, RosParam] = {}
        for section in self.sections:
            if section.applies_to(fqn) or section.name == name:
                merged.update(section.params)
        return merged


_PARAMS_KEY = "ros__parameters"  # rcl compares a prefix (strncmp with its length)
_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\*\*?")


def _join(prefix: str, name: str, separator: str) -> str:
    if not prefix:
        return name
    return prefix + name if prefix.endswith(separator) else prefix + separator + name


class _RosParamsBuilder:
    """Walks the composed YAML the way parse.c walks its events, refusing what rcl refuses."""

    def __init__(self, source: str):
        self.source = source
        self.sections: Dict[str, RosNodeSection] = {}
        self.visited: set = set()

    def error(self, node, message: str) -> UserError:
        return UserError(f"{self.source}:{node.start_mark.line + 1}: {message}")

    def visit(self, node) -> None:
        if id(node) in self.visited:  # the composer hands an alias back as the anchored node itself
            raise self.error(node, "a YAML alias (*name) of this value: rcl refuses aliases")
        self.visited.add(id(node))

    def keys(self, mapping: MappingNode, where: str):
        first: Dict[str, int] = {}
        for key_node, value in mapping.value:
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, f"{where}a list or mapping used as a key: rcl refuses the file")
            key = key_node.value
            if key == "":
                raise self.error(key_node, f"{where}an empty key: rcl refuses the file ('No key')")
            if key in first:
                raise self.error(key_node, f"{where}{key}: given twice (first at line {first[key]}); rcl "
                                           "silently keeps the last one, or both if their types differ")
            first[key] = key_node.start_mark.line + 1
            self.visit(value)
            yield key_node, key, value

    def document(self, root) -> None:
        if root is None or isinstance(root, ScalarNode):
            return  # rcl: no node, no parameters
        self.visit(root)
        if not isinstance(root, MappingNode):
            raise self.error(root, "a list at the top level: expected 'node_name: {ros__parameters: {...}}'")
        self.node_names(root, "")

    def node_names(self, mapping: MappingNode, path: str) -> None:
        keys = list(self.keys(mapping, f"{path}: " if path else ""))
        for key_node, key, value in keys:
            if key.startswith(_PARAMS_KEY):
                if not path:
                    raise self.error(key_node, f"{key} before any node name: rcl refuses the file")
                if len(keys) > 1:
                    other = next(k for k in keys if k[1] != key)
                    raise self.error(other[0], f"{path}: {other[1]!r} next to {key!r}: rcl refuses the file "
                                               "(a node's mapping holds only its ros__parameters)")
                self.check_node_name(key_node, path)
                if not isinstance(value, MappingNode):
                    raise self.error(value, f"{path}.{key}: expected a mapping of parameters")
                section = self.sections.setdefault(path, RosNodeSection(path, key_node.start_mark.line + 1))
                self.parameters(value, section, "")
            elif isinstance(value, MappingNode):
                self.node_names(value, _join(path, key, "/"))
            else:
                name = _join(path, key, "/")
                raise self.error(
                    key_node,
                    f"{name}: a value outside any 'ros__parameters:' mapping: rcl refuses the file "
                    "(ROS 2 expects 'node_name: {ros__parameters: {...}}'; a ROS 1 parameter file?)",
                )

    def check_node_name(self, key_node, name: str) -> None:
        tokens = name.split("/")
        if tokens[0] == "":
            tokens = tokens[1:]
        if not tokens or not all(_NAME_TOKEN.fullmatch(token) for token in tokens):
            raise self.error(
                key_node,
                f"{name}: not a valid node name (letters, digits and _, not starting with a digit; "
                "'/' between namespaces; * and ** wildcards): rcl refuses the file",
            )

    def parameters(self, mapping: MappingNode, section: RosNodeSection, prefix: str) -> None:
        for key_node, key, value in self.keys(mapping, f"{section.name}: "):
            name = _join(prefix, key, ".")
            where = f"{section.name}.{name}"
            if isinstance(value, MappingNode):
                if not value.value:
                    raise self.error(value, f"{where}: an empty mapping has no value: rclcpp refuses it when "
                                            "the node starts ('No parameter value set')")
                self.parameters(value, section, name)
                continue
            if isinstance(value, SequenceNode):
                parsed = self.sequence(value, where)
            else:
                quoted = value.style in ("'", '"')
                if not quoted and value.value == "":
                    raise self.error(value, f"{where}: no value: rcl refuses the file ('No value')")
                parsed = rcl_scalar(value.value, quoted)
            if name in section.params:
                raise self.error(key_node, f"{where}: given twice for node {section.name} (first at line "
                                           f"{section.params[name].line}); rcl would keep both values")
            section.params[name] = RosParam(parsed, key_node.start_mark.line + 1, section.name)

    def sequence(self, node: SequenceNode, where: str) -> list:
        items = []
        for item in node.value:
            self.visit(item)
            if not isinstance(item, ScalarNode):
                raise self.error(item, f"{where}: a list or mapping inside a list: rcl refuses the file")
            quoted = item.style in ("'", '"')
            if not quoted and item.value == "":
                raise self.error(item, f"{where}: an empty list item: rcl refuses the file ('No value')")
            value = rcl_scalar(item.value, quoted)
            if items and ros_type(value) != ros_type(items[0]):
                raise self.error(
                    item,
                    f"{where}: a list mixing {ros_type(items[0])} and {ros_type(value)} ({item.value!r}): "
                    "rcl refuses the file ('Sequence should be of same type'); write all numbers alike, "
                    "e.g. 0.0",
                )
            items.append(value)
        if not items:
            raise self.error(node, f"{where}: an empty list has no type: rclcpp refuses it when the node "
                                   "starts ('No parameter value set')")
        return items


def parse_ros_params(text: str, source: str = "<text>") -> RosParamsFile:
    """A ROS 2 parameter file's text → its node sections, typed as rcl types them."""
    try:
        documents = list(yaml.compose_all(text, Loader=_BASE_LOADER))
    except yaml.YAMLError as exc:
        raise _yaml_error(source, exc) from None
    except RecursionError:
        raise UserError(f"{source}: invalid YAML (nested too deeply)") from None
    builder = _RosParamsBuilder(source)
    for document in documents:
        builder.document(document)
    return RosParamsFile(source, list(builder.sections.values()))


def load_ros_params(path) -> RosParamsFile:
    """Read a ROS 2 parameter file (see parse_ros_params)."""
    path = Path(path)
    return parse_ros_params(_read_text(path, ", which rcl refuses too"), str(path))


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
