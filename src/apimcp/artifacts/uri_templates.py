"""RFC 6570 URI templates (levels 1 to 4): parsing and expansion, and the matching resources/read needs.

A template is parsed once; `match` runs the `uri_matching.Matcher` compiled from its parts (how a URI is
read, and why that costs work linear in the URI's length). Two expressions may touch only if the second
has a lead character: in `{a}{b}` nothing says where `a` ends, so such a template is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from apimcp.artifacts.uri_matching import MatchBudget, Matcher

__all__ = ["UriTemplate", "Value"]

Value = str | Sequence[str] | Mapping[str, str] | None
"""A variable's value for expansion: a string, a list, an associative array, or None (undefined)."""


@dataclass(frozen=True, slots=True)
class _Operator:
    lead: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool
    """Reserved characters pass unencoded (`+` and `#`)."""
    structural: str
    """Characters a matched value never contains: they structure the URI around it."""


_OPERATORS: dict[str, _Operator] = {
    "": _Operator("", ",", False, "", False, "/?#"),
    "+": _Operator("", ",", False, "", True, ""),
    "#": _Operator("#", ",", False, "", True, "#"),
    ".": _Operator(".", ".", False, "", False, "/?#"),
    "/": _Operator("/", "/", False, "", False, "/?#"),
    ";": _Operator(";", ";", True, "", False, "/?#"),
    "?": _Operator("?", "&", True, "=", False, "#"),
    "&": _Operator("&", "&", True, "=", False, "#"),
}
_FUTURE_OPERATORS = "=,!@|"
_RESERVED = ":/?#[]@!$&'()*+,;="
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_VARSPEC = re.compile(
    r"(?P<name>(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*)"
    r"(?::(?P<prefix>[1-9][0-9]{0,3})|(?P<explode>\*))?"
)
_NOT_IN_LITERALS = frozenset(" \"'<>\\^`|")


@dataclass(frozen=True, slots=True)
class _VarSpec:
    name: str
    prefix: int | None
    explode: bool


@dataclass(frozen=True, slots=True)
class _Expression:
    text: str
    op: _Operator
    specs: tuple[_VarSpec, ...]


_Part = str | _Expression


class UriTemplate:
    """One parsed template; `match` and `expand` only run what the constructor compiled."""

    __slots__ = ("_matcher", "_parts", "text", "variables")

    def __init__(self, text: str) -> None:
        self.text = text
        self._parts: tuple[_Part, ...] = _parse(text)
        names: dict[str, None] = {}
        for part in self._parts:
            if isinstance(part, _Expression):
                names.update((spec.name, None) for spec in part.specs)
        self.variables: tuple[str, ...] = tuple(names)
        self._matcher = Matcher(self._parts)

    @classmethod
    def parse(cls, text: str) -> UriTemplate:
        return cls(text)

    def __repr__(self) -> str:
        return f"UriTemplate({self.text!r})"

    def expand(self, values: Mapping[str, Value]) -> str:
        """The URI for `values` (RFC 6570 section 3); a missing or None value is undefined."""
        return "".join(part if isinstance(part, str) else _expand(part, values) for part in self._parts)

    def match(self, uri: str, budget: MatchBudget | None = None) -> dict[str, str] | None:
        """The percent-decoded variables of `uri`, or None when this template cannot produce it (how a URI is
        read: `uri_matching`); MatchBudgetSpent once `budget` is spent."""
        return self._matcher.match(uri, budget)


# --- parsing ---------------------------------------------------------------------------------


def _parse(text: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    literal: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == "{":
            end = text.find("}", pos + 1)
            if end < 0:
                raise ValueError(f"URI template {text!r}: the expression at position {pos} is not closed")
            body = text[pos + 1 : end]
            if "{" in body:
                raise ValueError(f"URI template {text!r}: '{{' inside the expression at position {pos}")
            expression = _parse_expression(text, body, pos)
            if literal:
                parts.append("".join(literal))
                literal = []
            elif parts and isinstance(parts[-1], _Expression) and not expression.op.lead:
                raise ValueError(
                    f"URI template {text!r}: {{{parts[-1].text}}} and {{{body}}} touch, so a URI cannot say "
                    "where one ends; put literal text between them"
                )
            parts.append(expression)
            pos = end + 1
        elif char == "}":
            raise ValueError(f"URI template {text!r}: '}}' at position {pos} closes no expression")
        elif char == "%":
            if not _PCT.match(text, pos):
                raise ValueError(f"URI template {text!r}: '%' at position {pos} does not start a %XX escape")
            literal.append(text[pos : pos + 3])
            pos += 3
        elif char in _NOT_IN_LITERALS or ord(char) < 0x20 or ord(char) == 0x7F:
            raise ValueError(f"URI template {text!r}: {char!r} at position {pos} is not allowed in a URI template")
        else:
            literal.append(char)
            pos += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def _parse_expression(text: str, body: str, pos: int) -> _Expression:
    if not body:
        raise ValueError(f"URI template {text!r}: empty expression at position {pos}")
    if body[0] in _FUTURE_OPERATORS:
        raise ValueError(f"URI template {text!r}: operator {body[0]!r} at position {pos} is reserved by RFC 6570")
    op = body[0] if body[0] in "+#./;?&" else ""
    specs = []
    for item in body[len(op) :].split(","):
        found = _VARSPEC.fullmatch(item)
        if found is None:
            raise ValueError(
                f"URI template {text!r}: {item!r} in {{{body}}} is not a variable (name, name:1-9999 or name*)"
            )
        prefix = found.group("prefix")
        specs.append(_VarSpec(found.group("name"), int(prefix) if prefix else None, bool(found.group("explode"))))
    return _Expression(body, _OPERATORS[op], tuple(specs))


# --- expansion -------------------------------------------------------------------------------


def _encode(text: str, reserved: bool) -> str:
    if not reserved:
        return quote(text, safe="")
    out: list[str] = []
    last = 0
    for triplet in _PCT.finditer(text):  # U+R keeps existing %XX escapes
        out.append(quote(text[last : triplet.start()], safe=_RESERVED))
        out.append(triplet.group())
        last = triplet.end()
    out.append(quote(text[last:], safe=_RESERVED))
    return "".join(out)


def _expand(expression: _Expression, values: Mapping[str, Value]) -> str:
    op = expression.op
    results: list[str] = []
    for spec in expression.specs:
        value = values.get(spec.name)
        if value is None or (not isinstance(value, str) and not value):
            continue
        if isinstance(value, str):
            text = _encode(value[: spec.prefix] if spec.prefix else value, op.reserved)
            results.append(_named(spec.name, text, op) if op.named else text)
            continue
        if spec.prefix is not None:
            raise ValueError(f"{{{expression.text}}}: a prefix modifier does not apply to the list or map {spec.name}")
        pairs: list[tuple[str | None, str]] = (
            [(str(k), str(v)) for k, v in value.items()]
            if isinstance(value, Mapping)
            else [(None, str(v)) for v in value]
        )
        if not spec.explode:
            joined = ",".join(_encode(item, op.reserved) for pair in pairs for item in pair if item is not None)
            results.append(f"{spec.name}={joined}" if op.named else joined)
        elif op.named:
            results.extend(
                _named(spec.name if key is None else _encode(key, op.reserved), _encode(v, op.reserved), op)
                for key, v in pairs
            )
        else:
            results.extend(
                _encode(v, op.reserved) if key is None else f"{_encode(key, op.reserved)}={_encode(v, op.reserved)}"
                for key, v in pairs
            )
    return op.lead + op.sep.join(results) if results else ""


def _named(name: str, encoded: str, op: _Operator) -> str:
    return f"{name}={encoded}" if encoded else f"{name}{op.ifemp}"
