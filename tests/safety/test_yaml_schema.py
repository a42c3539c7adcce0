"""YAML 1.2's core schema: no base-60 numbers (quadratic to read), 64-bit integers, JSON values only."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from apimcp.safety.yaml_loading import YamlLimitError, load_yaml

WITH_DEFAULT = """
openapi: 3.1.0
info: {title: Huge, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /x:
    get:
      parameters:
        - {name: n, in: query, schema: {type: integer, default: %s}}
      responses: {"200": {description: ok}}
"""


def with_default(written: str) -> bytes:
    """A description whose one parameter has this default, written at line 9, column 65."""
    return (WITH_DEFAULT % written).encode()


def test_a_long_base_60_scalar_is_a_string() -> None:
    """Issue 21, M5: YAML 1.1 read `1:1:1:…` as a base-60 integer, with quadratic work (200 KB: seconds)."""
    scalar = ":".join(["1"] * 100_000)
    assert len(scalar) > 199_000
    value = load_yaml(f"description: {scalar}\n")["description"]
    assert isinstance(value, str) and value == scalar
    assert load_yaml("at: 1:30\nangle: 190:20:30.15\n") == {"at": "1:30", "angle": "190:20:30.15"}


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("0", 0),
        ("-12", -12),
        ("+12", 12),
        ("017", 17),  # decimal in YAML 1.2, octal (15) in 1.1
        ("0o17", 15),
        ("0x1F", 31),
        ("0xffffffffffffffff", 2**64 - 1),
        ("18446744073709551615", 2**64 - 1),
        ("-9223372036854775808", -(2**63)),
        ("000000000000000000000000042", 42),  # leading zeros are not significant digits
        ("1.5", 1.5),
        ("-.5", -0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),  # a float, as in JSON (a string in PyYAML's YAML 1.1)
        ("1.0e+3", 1000.0),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("FALSE", False),
        ("null", None),
        ("~", None),
        ("NULL", None),
        ("", None),
        ("yes", "yes"),  # booleans in YAML 1.1
        ("no", "no"),
        ("on", "on"),
        ("Off", "Off"),
        ("1_000", "1_000"),
        ("0b101", "0b101"),
        ("=", "="),
        ("2024-01-01", "2024-01-01"),
        ('"12"', "12"),
        ("!!str 12", "12"),
        ("!!int '12'", 12),
        ("!!float 1", 1.0),
    ],
)
def test_plain_scalars_mean_what_yaml_1_2_says(written: str, value: Any) -> None:
    loaded = load_yaml(f"a: {written}\n")["a"]
    assert loaded == value and type(loaded) is type(value)


def test_infinities_and_nan_are_read() -> None:
    loaded = load_yaml("[.inf, -.Inf, +.INF, .nan]")
    assert loaded[:3] == [math.inf, -math.inf, math.inf] and math.isnan(loaded[3])


def test_keys_named_like_yaml_1_1_booleans_stay_strings() -> None:
    assert load_yaml("properties: {on: {type: string}, no: {type: string}}\n")["properties"].keys() == {"on", "no"}


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("1" * 5_000, "the integer 111111111111111111111111… (5000 characters) is out of range (at most 64 bits)"),
        ("0x" + "f" * 40, "the integer 0xffffffffffffffffffffff… (42 characters) is out of range (at most 64 bits)"),
        ("18446744073709551616", "the integer 18446744073709551616 is out of range (at most 64 bits)"),
        ("-9223372036854775809", "the integer -9223372036854775809 is out of range (at most 64 bits)"),
        ("0o2000000000000000000000", "the integer 0o2000000000000000000000 is out of range (at most 64 bits)"),
        ("1e400", "the number 1e400 is out of range (beyond a 64-bit float)"),
    ],
)
def test_a_number_beyond_64_bits_is_refused_where_it_is_written(written: str, shown: str) -> None:
    """Issue 21, L2: 4,300 digits and more were a Python error (a 500); a 160-bit integer broke orjson later."""
    with pytest.raises(YamlLimitError) as caught:
        load_yaml(f"info: {{title: t}}\nschema:\n  default: {written}\n", name="api.yaml")
    assert caught.value.problem == shown
    mark = caught.value.problem_mark
    assert mark is not None and (mark.name, mark.line, mark.column) == ("api.yaml", 2, 11)


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ("!!binary aGVsbG8=", "the tag !!binary is not read: a document holds JSON values only"),
        ("!!set {a, b}", "the tag !!set is not read: a document holds JSON values only"),
        ("!!omap [a: 1]", "the tag !!omap is not read: a document holds JSON values only"),
        ("!!pairs [a: 1]", "the tag !!pairs is not read: a document holds JSON values only"),
        ("!!timestamp 2024-01-01", "the tag !!timestamp is not read: a document holds JSON values only"),
        ("!!timestamp nonsense", "the tag !!timestamp is not read: a document holds JSON values only"),
        ("!!int 1:30", "'1:30' is not an integer (YAML 1.2: decimal, 0o octal or 0x hexadecimal digits)"),
        ("!!int ''", "'' is not an integer (YAML 1.2: decimal, 0o octal or 0x hexadecimal digits)"),
        ("!!float abc", "'abc' is not a number (YAML 1.2: 1.5, .5, 1e3, .inf, -.inf or .nan)"),
        ("!!bool maybe", "'maybe' is not a boolean (YAML 1.2: true or false)"),
        ("!!null x", "'x' is not null (YAML 1.2: null, ~ or nothing)"),
        ("!!int [1]", "expected a scalar, but found a sequence"),
    ],
)
def test_explicit_tags_build_json_values_or_a_positioned_error(written: str, problem: str) -> None:
    """They built bytes, sets, tuples and dates no JSON writer takes, or failed with a Python error (a 500)."""
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml(f"a: 1\nb: {written}\n")
    assert getattr(caught.value, "problem", None) == problem
    mark = getattr(caught.value, "problem_mark", None)
    assert mark is not None and (mark.line, mark.column) == (1, 3)
