"""What YAML's plain scalars mean, as the project reads them: YAML 1.2's core schema, and JSON values only.

PyYAML implements YAML 1.1, whose resolution is not what OpenAPI 3.1 (YAML 1.2) or JSON mean: `yes`, `no`,
`on` and `off` are booleans (a property named `on` becomes the key True), `017` is octal, `1_000` a thousand,
and `1:30` is the base-60 integer 90, computed digit by digit with ever larger integers, which is quadratic:
a 100 KB scalar `1:1:1:…` took a second to read, 200 KB three seconds (now a string, read in a millisecond).
The core schema has none of those:

- null: `~`, `null`, `Null`, `NULL` and the empty scalar;
- booleans: `true`, `True`, `TRUE`, `false`, `False`, `FALSE` (`yes`, `on`, `y`... are strings);
- integers: decimal (`-12`, `017` is seventeen), `0o` octal, `0x` hexadecimal, no `_` and no base 60;
- floats: `1.5`, `.5`, `1e3` (a float, as in JSON), `.inf`, `-.inf`, `.nan`.

`<<` merge keys (a YAML 1.1 type that 1.2 dropped) are kept: descriptions use them, and aliases are measured
before anything is built (`yaml_loading`). Every match and every conversion is linear in the scalar.

Integers are bounded to 64 bits (-2**63 to 2**64 - 1): what orjson writes and backends read. Beyond that
Python refused 4,300 digits and more with an internal error, and orjson refused to write the rest later (a
160-bit `default` broke the import, or serving the tool). Such an integer is refused where it is written
(`ScalarOutOfRange`, with its position) rather than rounded to a float: a rounded `enum` member, `const` or
`default` would no longer be the value the description names. A float literal beyond a double (`1e400`) is
refused the same way (orjson refuses it in JSON, and would write infinity as null); `.inf` and `.nan` are read.

Explicit tags build JSON values only: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq`,
the latter five holding what their implicit forms hold. `!!binary`, `!!set`, `!!omap`, `!!pairs` and
`!!timestamp` built bytes, sets, tuples and dates that no JSON writer takes (or failed with a Python
error on a malformed value): they are refused with their position.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

__all__ = ["CORE_CONSTRUCTORS", "CORE_RESOLVERS", "INT_RANGE", "ScalarOutOfRange"]

_TAG = "tag:yaml.org,2002:"
INT_RANGE: Final = range(-(2**63), 2**64)
"""Integers the project reads: 64-bit signed or unsigned."""
_DIGITS_IN_RANGE: Final = {10: 20, 8: 22, 16: 16}
"""At most this many significant digits in each base can be in range (checked before converting)."""
_SHOWN: Final = 24
"""Characters of a refused scalar that a message shows."""

_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_INT = re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_FLOAT = re.compile(
    r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_MERGE = re.compile(r"<<\Z")


def _by_first_character() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """PyYAML's resolver table: for each first character of a plain scalar, the (tag, pattern) pairs tried in
    order ("": the empty scalar; no None entry, which PyYAML would try on every scalar)."""
    kinds = (
        ("null", _NULL, "~nN"),
        ("bool", _BOOL, "tTfF"),
        ("int", _INT, "-+0123456789"),
        ("float", _FLOAT, "-+.0123456789"),
        ("merge", _MERGE, "<"),
    )
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {"": [(_TAG + "null", _NULL)]}
    for kind, pattern, firsts in kinds:
        for first in firsts:
            table.setdefault(first, []).append((_TAG + kind, pattern))
    return table


CORE_RESOLVERS: Final = _by_first_character()


class ScalarOutOfRange(yaml.MarkedYAMLError):
    """A number beyond what the project carries; `problem` says which, `problem_mark` where it is written."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def _shown(value: str) -> str:
    return value if len(value) <= _SHOWN else f"{value[:_SHOWN]}… ({len(value)} characters)"


def _scalar(node: yaml.Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        found = "a mapping" if isinstance(node, yaml.MappingNode) else "a sequence"
        raise ConstructorError(None, None, f"expected a scalar, but found {found}", node.start_mark)
    return str(node.value)


def _not_a(kind: str, value: str, node: yaml.Node, forms: str) -> ConstructorError:
    return ConstructorError(None, None, f"{_shown(value)!r} is not {kind} ({forms})", node.start_mark)


def construct_int(constructor: SafeConstructor, node: yaml.Node) -> int:
    value = _scalar(node)
    if not _INT.match(value):
        raise _not_a("an integer", value, node, "YAML 1.2: decimal, 0o octal or 0x hexadecimal digits")
    base = {"0o": 8, "0x": 16}.get(value[:2], 10)
    digits = value if base == 10 else value[2:]  # only decimal integers have a sign
    significant = len(digits.lstrip("+-").lstrip("0"))
    number = int(digits, base) if significant <= _DIGITS_IN_RANGE[base] else None  # never a 4,300-digit int()
    if number is None or number not in INT_RANGE:
        raise ScalarOutOfRange(f"the integer {_shown(value)} is out of range (at most 64 bits)", node.start_mark)
    return number


def construct_float(constructor: SafeConstructor, node: yaml.Node) -> float:
    value = _scalar(node)
    if not _FLOAT.match(value):
        raise _not_a("a number", value, node, "YAML 1.2: 1.5, .5, 1e3, .inf, -.inf or .nan")
    special = value.lstrip("+-").lower()
    if special in (".inf", ".nan"):
        return math.nan if special == ".nan" else -math.inf if value[0] == "-" else math.inf
    number = float(value)  # linear in the digits, unlike int(): a long mantissa is no harm
    if math.isinf(number):
        raise ScalarOutOfRange(f"the number {_shown(value)} is out of range (beyond a 64-bit float)", node.start_mark)
    return number


def construct_bool(constructor: SafeConstructor, node: yaml.Node) -> bool:
    value = _scalar(node)
    if not _BOOL.match(value):
        raise _not_a("a boolean", value, node, "YAML 1.2: true or false")
    return value[0] in "tT"


def construct_null(constructor: SafeConstructor, node: yaml.Node) -> None:
    value = _scalar(node)
    if not _NULL.match(value):
        raise _not_a("null", value, node, "YAML 1.2: null, ~ or nothing")


def _refused(kind: str) -> Callable[[SafeConstructor, yaml.Node], Any]:
    def refuse(constructor: SafeConstructor, node: yaml.Node) -> Any:
        raise ConstructorError(
            None, None, f"the tag !!{kind} is not read: a document holds JSON values only", node.start_mark
        )

    return refuse


CORE_CONSTRUCTORS: Final[dict[str, Callable[[SafeConstructor, yaml.Node], Any]]] = {
    _TAG + "int": construct_int,
    _TAG + "float": construct_float,
    _TAG + "bool": construct_bool,
    _TAG + "null": construct_null,
    **{_TAG + kind: _refused(kind) for kind in ("binary", "set", "omap", "pairs", "timestamp")},
}
"""Replacing SafeConstructor's for these tags; `str`, `map`, `seq` and unknown tags (refused) stay its own."""
