"""ROS 2 parameter files typed as Humble's rcl_yaml_param_parser types them (yamlio.load_ros_params).

The expectations are read off rcl's humble parse.c (get_value, parse_value, parse_file_events) and
glibc's strtoll/strtod; where the real C library or the real librcl_yaml_param_parser.so is present
(set AMENT_PREFIX_PATH to a Humble install), the same inputs are compared with them directly.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim2real_eval.errors import UserError
from sim2real_eval.yamlio import load_ros_params, parse_ros_params, rcl_scalar, ros_type

# (text as written, unquoted) -> (rcl type, value), by parse.c's rules.
TABLE = [
    ("true", "bool", True), ("y", "bool", True), ("On", "bool", True), ("n", "bool", False),
    ("OFF", "bool", False), ("tRue", "string", "tRue"),
    ("30", "integer", 30), ("-7", "integer", -7), ("+5", "integer", 5), ("0x1F", "integer", 31),
    ("010", "integer", 8), ("-0x10", "integer", -16), ("9223372036854775807", "integer", 2**63 - 1),
    ("08", "double", 8.0),  # strtoll stops at the 8 (octal); strtod reads it
    ("9223372036854775808", "double", 9.223372036854775808e18),  # int64 overflow -> strtod
    ("1e-9", "double", 1e-9), ("3e-2", "double", 0.03), ("1e9", "double", 1e9), ("1.0e7", "double", 1e7),
    ("30.0", "double", 30.0), ("1.", "double", 1.0), (".5", "double", 0.5), ("-.5", "double", -0.5),
    ("0x1p3", "double", 8.0), ("1e400", "string", "1e400"),  # overflow: ERANGE
    ("1e-310", "string", "1e-310"),  # inexact below DBL_MIN: ERANGE
    ("0x1p-1074", "double", 5e-324),  # exact subnormal: no ERANGE
    (".inf", "double", math.inf), ("-.Inf", "double", -math.inf), ("+.INF", "double", math.inf),
    ("inf", "double", math.inf), ("Infinity", "double", math.inf), ("-nan", "double", math.nan),
    (".NaN", "double", math.nan), (".nAN", "string", ".nAN"), (".infinf", "string", ".infinf"),
    ("-.nan", "string", "-.nan"),
    ("1_000", "string", "1_000"), ("0b101", "string", "0b101"), ("1:30", "string", "1:30"),
    ("~", "string", "~"), ("null", "string", "null"), ("2024-01-02", "string", "2024-01-02"),
    ("1e", "string", "1e"), ("0x", "string", "0x"), ("/odom", "string", "/odom"),
]


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("text, kind, value", TABLE)
def test_scalar_typing_table(text, kind, value):
    got = rcl_scalar(text)
    assert ros_type(got) == kind and same(got, value)
    parsed = parse_ros_params(f"n:\n  ros__parameters:\n    p: {text}\n").sections[0].params["p"].value
    assert same(parsed, value)


def test_quoted_scalars_stay_strings_block_scalars_are_typed_and_tags_are_ignored():
    text = """n:
  ros__parameters:
    a: "5"
    b: '1e-9'
    c: |-
      7
    d: !!str 5
    e: ""
    f: ["7", "x"]
"""
    params = parse_ros_params(text).sections[0].values()
    assert params == {"a": "5", "b": "1e-9", "c": 7, "d": 5, "e": "", "f": ["7", "x"]}


def test_structure_namespaces_nested_names_and_arrays():
    f = parse_ros_params("""ns:
  ekf:
    ros__parameters:
      frequency: 30.0
      sub:
        a: [1, 2]
        b.c: [true, false]
/**:
  ros__parameters:
    use_sim_time: true
""")
    assert [s.name for s in f.sections] == ["ns/ekf", "/**"]
    assert f.sections[0].values() == {"frequency": 30.0, "sub.a": [1, 2], "sub.b.c": [True, False]}
    assert ros_type([1, 2]) == "integer_array" and ros_type([0.5]) == "double_array"
    merged = f.for_node("ns/ekf")
    assert set(merged) == {"frequency", "sub.a", "sub.b.c", "use_sim_time"}
    assert f.sections[1].applies_to("/any/node") and not f.sections[0].applies_to("/ekf")
    assert f.sections[0].params["sub.a"].line == 6


@pytest.mark.parametrize(
    "body, message",
    [
        ("    a: [1.0, 2]", "n.a: a list mixing double and integer ('2'): rcl refuses the file"),
        ("    a: []", "n.a: an empty list has no type: rclcpp refuses it when the node starts"),
        ("    a: {}", "n.a: an empty mapping has no value"),
        ("    a:", "n.a: no value: rcl refuses the file"),
        ("    a: &x 1\n    b: *x", "a YAML alias"),
        ("    a: [[1], [2]]", "n.a: a list or mapping inside a list"),
        ("    a: [{b: 1}]", "n.a: a list or mapping inside a list"),
        ("    a: 1\n    a: 2", "n: a: given twice (first at line 3)"),
        ('    "": 1', "an empty key"),
    ],
)
def test_what_rcl_refuses_is_one_line_naming_the_line(body, message):
    with pytest.raises(UserError, match=re.escape(message)) as info:
        parse_ros_params(f"n:\n  ros__parameters:\n{body}\n", "f.yaml")
    assert str(info.value).startswith("f.yaml:") and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("frequency: 30.0\n",
         "frequency: a value outside any 'ros__parameters:' mapping.*a ROS 1 parameter file"),
        ("n:\n  ros__parameters:\n", "expected a mapping of parameters"),
        ("1bad:\n  ros__parameters:\n    a: 1\n", "1bad: not a valid node name"),
        ("n:\n  ros__parameters:\n    a: 1\n  other: {}\n", "'other' next to 'ros__parameters'"),
        ("- a\n", "a list at the top level"),
        ("n:\n  ros__parameters:\n    a: 1\n/n:\n  ros__parameters:\n    b: 1\nn:\n  x: 1\n",
         "n: given twice"),
        ("n:\n  ros__parameters:\n    a: [1\n", "invalid YAML"),
    ],
)
def test_file_structure_errors(text, message):
    with pytest.raises(UserError, match=message):
        parse_ros_params(text, "f.yaml")


def test_the_same_node_in_two_places_merges_and_a_repeated_parameter_is_an_error():
    text = "ns:\n  n:\n    ros__parameters:\n      a: 1\nns/n:\n  ros__parameters:\n      b: 2\n"
    f = parse_ros_params(text)
    assert f.sections[0].values() == {"a": 1, "b": 2}
    with pytest.raises(UserError, match=r"f\.yaml:7: ns/n\.a: given twice for node ns/n \(first at line 4\)"):
        parse_ros_params(text.replace("b: 2", "a: 2"), "f.yaml")


def test_unreadable_files_are_one_line(tmp_path, monkeypatch):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"n:\n  ros__parameters:\n    # 90\xb0 heading\n    a: 1.0\n")
    message = r"latin1\.yaml: line 3 column 9: byte 0xB0 is not UTF-8 .*rcl refuses too"
    with pytest.raises(UserError, match=message):
        load_ros_params(latin1)
    with pytest.raises(UserError, match="file not found"):
        load_ros_params(tmp_path / "absent.yaml")
    with pytest.raises(UserError, match="is a directory"):
        load_ros_params(tmp_path)
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbfn:\n  ros__parameters:\n    a: 1.0\n")
    assert load_ros_params(bom).sections[0].values() == {"a": 1.0}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_permission_is_one_line(tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_text("n:\n  ros__parameters:\n    a: 1.0\n")
    path.chmod(0)
    with pytest.raises(UserError, match=r"secret\.yaml: permission denied"):
        load_ros_params(path)


# --- against the real C libraries -------------------------------------------------------------------

def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.strtod.restype, libc.strtoll.restype = ctypes.c_double, ctypes.c_longlong
        libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        libc.strtoll.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
        libc.gnu_get_libc_version  # noqa: B018 - only glibc's behaviour is modelled
        return libc
    except (OSError, AttributeError):
        return None


LIBC = _libc()


def c_parse(function, text: str, *base):
    """C's reading of ``text`` as rcl checks it: the value if errno stays 0 and the whole text is read."""
    buffer = ctypes.create_string_buffer(text.encode())
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    value = function(buffer, ctypes.byref(end), *base)
    read = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)
    ok = ctypes.get_errno() == 0 and text != "" and read == len(text.encode())
    return value if ok else None


RCL_BOOLS = set("Y y yes Yes YES true True TRUE on On ON N n no No NO false False FALSE off Off OFF".split())
RCL_SPECIAL = set(".nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF".split())


def c_scalar(text: str):
    """rcl's get_value with the real strtoll/strtod (the bool and .inf spellings are plain comparisons)."""
    if text in RCL_BOOLS or text in RCL_SPECIAL:
        return rcl_scalar(text)
    integer = c_parse(LIBC.strtoll, text, 0)
    if integer is not None:
        return integer
    double = c_parse(LIBC.strtod, text)
    return text if double is None else double


NUMBERISH = st.text(alphabet="0123456789.eE+-xXpPinfatyINFATY()_ ", min_size=1, max_size=10)
NEAR_SUBNORMAL = st.builds(
    lambda digits, dot, exponent: f"{digits[:dot]}.{digits[dot:]}e{exponent}",
    st.text(alphabet="0123456789", min_size=1, max_size=25), st.integers(0, 25), st.integers(-345, -290))


@pytest.mark.skipif(LIBC is None, reason="glibc's strtod/strtoll are not loadable here")
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(NUMBERISH, NEAR_SUBNORMAL))
def test_numbers_match_glibc(text):
    assert same(rcl_scalar(text), c_scalar(text))


def _rcl_parser():
    """librcl_yaml_param_parser.so of a Humble install on AMENT_PREFIX_PATH (or /opt/ros/humble)."""
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes.append("/opt/ros/humble")
    for prefix in prefixes:
        lib = Path(prefix) / "lib"
        if (lib / "librcl_yaml_param_parser.so").is_file():
            break
    else:
        return None
    try:
        for dependency in ("librcutils.so", "librmw.so"):
            ctypes.CDLL(str(lib / dependency), mode=ctypes.RTLD_GLOBAL)
        return ctypes.CDLL(str(lib / "librcl_yaml_param_parser.so")), ctypes.CDLL(str(lib / "librcutils.so"))
    except OSError:
        return None


P, S = ctypes.POINTER, ctypes.Structure  # rcl_yaml_param_parser/types.h, rcutils allocator and string array
SIZE, CHARS, VOID = ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p


class _Allocator(S):
    _fields_ = [("allocate", VOID), ("deallocate", VOID), ("reallocate", VOID), ("zero_allocate", VOID),
                ("state", VOID)]


def _array(item):
    return type("Array", (S,), {"_fields_": [("values", P(item)), ("size", SIZE)]})


class _StringArray(S):
    _fields_ = [("size", SIZE), ("data", P(CHARS)), ("allocator", _Allocator)]


_BOOLS, _INTS, _DOUBLES, _BYTES = (_array(t) for t in (ctypes.c_bool, ctypes.c_int64, ctypes.c_double,
                                                       ctypes.c_uint8))


class _Variant(S):  # rcl_variant_t
    _fields_ = [("bool_value", P(ctypes.c_bool)), ("integer_value", P(ctypes.c_int64)),
                ("double_value", P(ctypes.c_double)), ("string_value", CHARS),
                ("byte_array_value", P(_BYTES)), ("bool_array_value", P(_BOOLS)),
                ("integer_array_value", P(_INTS)), ("double_array_value", P(_DOUBLES)),
                ("string_array_value", P(_StringArray))]


class _NodeParams(S):
    _fields_ = [("parameter_names", P(CHARS)), ("parameter_values", P(_Variant)), ("num_params", SIZE),
                ("capacity_params", SIZE)]


class _Params(S):
    _fields_ = [("node_names", P(CHARS)), ("params", P(_NodeParams)), ("num_nodes", SIZE),
                ("capacity_nodes", SIZE), ("allocator", _Allocator)]


RCL = _rcl_parser()


def rcl_parse(path: Path):
    """{node: {name: value}} as rclcpp would see it (bool, integer, double, string first), or None."""
    parser, rcutils = RCL
    rcutils.rcutils_get_default_allocator.restype = _Allocator
    parser.rcl_yaml_node_struct_init.restype = ctypes.POINTER(_Params)
    parser.rcl_yaml_node_struct_init.argtypes = [_Allocator]
    parser.rcl_parse_yaml_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Params)]
    parser.rcl_parse_yaml_file.restype = ctypes.c_bool
    parser.rcl_yaml_node_struct_fini.argtypes = [ctypes.POINTER(_Params)]
    params = parser.rcl_yaml_node_struct_init(rcutils.rcutils_get_default_allocator())
    try:
        if not parser.rcl_parse_yaml_file(str(path).encode(), params):
            rcutils.rcutils_reset_error()
            return None
        out = {}
        for n in range(params[0].num_nodes):
            node = params[0].params[n]
            values = {}
            for k in range(node.num_params):
                v = node.parameter_values[k]
                if v.bool_value:
                    value = v.bool_value[0]
                elif v.integer_value:
                    value = v.integer_value[0]
                elif v.double_value:
                    value = v.double_value[0]
                elif v.string_value is not None:
                    value = v.string_value.decode()
                elif v.bool_array_value:
                    value = [v.bool_array_value[0].values[i] for i in range(v.bool_array_value[0].size)]
                elif v.integer_array_value:
                    value = [v.integer_array_value[0].values[i] for i in range(v.integer_array_value[0].size)]
                elif v.double_array_value:
                    value = [v.double_array_value[0].values[i] for i in range(v.double_array_value[0].size)]
                elif v.string_array_value:
                    array = v.string_array_value[0]
                    value = [array.data[i].decode() for i in range(array.size)]
                else:
                    value = "<no value>"
                values[node.parameter_names[k].decode()] = value
            out[params[0].node_names[n].decode()] = values
        return out
    finally:
        parser.rcl_yaml_node_struct_fini(params)


def ours(path: Path):
    try:
        return {s.name: s.values() for s in load_ros_params(path).sections}
    except UserError:
        return None


def same_tree(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_tree(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b))
    return same(a, b)


UPSTREAM = Path(__file__).parent / "data" / "robot_localization_humble"
CORPUS = {  # name -> text; None = refused by both
    "types": "n:\n  ros__parameters:\n" + "".join(f"    p{i}: {t}\n" for i, (t, _, _) in enumerate(TABLE)),
    "arrays": "n:\n  ros__parameters:\n    a: [1, 2]\n    b: [1.0, 1e-9]\n    c: [y, false]\n"
              "    d: ['1', x]\n",
    "nested": "ns:\n  n:\n    ros__parameters:\n      a:\n        b: 1\n      c.d: 2.5\n"
              "/**:\n  ros__parameters:\n    use_sim_time: true\n",
    "two_documents": "n:\n  ros__parameters:\n    a: 1\n---\nn:\n  ros__parameters:\n    b: 2.0\n",
    "mixed": "n:\n  ros__parameters:\n    a: [1.0, 2]\n",
    "no_value": "n:\n  ros__parameters:\n    a:\n",
    "alias": "n:\n  ros__parameters:\n    a: &x 1\n    b: *x\n",
    "ros1": "frequency: 30.0\n",
    "bad_name": "1n:\n  ros__parameters:\n    a: 1\n",
}


NO_RCL = "no librcl_yaml_param_parser.so (set AMENT_PREFIX_PATH to a Humble install)"


@pytest.mark.skipif(RCL is None, reason=NO_RCL)
def test_same_reading_as_the_real_rcl_parser(tmp_path):
    names = ("ekf.yaml", "navsat_transform.yaml", "test_ekf_localization_node_bag2.yaml")
    files = [UPSTREAM / name for name in names]
    for name, text in CORPUS.items():
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(text)
    for path in files:
        assert same_tree(ours(path), rcl_parse(path)), path


@pytest.mark.skipif(RCL is None, reason=NO_RCL)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(NUMBERISH.filter(lambda t: t.strip() == t),
                          st.sampled_from([text for text, _, _ in TABLE])), min_size=1, max_size=20))
def test_generated_scalars_read_like_the_real_rcl_parser(tmp_path_factory, tokens):
    path = tmp_path_factory.mktemp("rcl") / "p.yaml"
    path.write_text("n:\n  ros__parameters:\n" + "".join(f"    p{i}: {t}\n" for i, t in enumerate(tokens)))
    theirs, mine = rcl_parse(path), ours(path)
    if theirs is None or mine is None:  # a token YAML itself rejects (e.g. "a: 1 #")
        assert theirs is None and mine is None
    else:
        assert same_tree(mine, theirs)
