"""RFC 6570 URI templates (levels 1 to 4): expansion, and the matching resources/read needs.

The RFC defines expansion only. Matching is its inverse, and an expansion can often be read several
ways (`{a}{.b}` against `x.y.z`), so this module fixes one reading and keeps it cheap: a template
compiles once into one regular expression whose quantifiers and optional parts are possessive.
The engine never backtracks, so a hostile URI costs time linear in its length.

How a URI is read:

- a variable's text ends where something that may follow it begins: the next literal (the last
  occurrence when that literal ends the template, so `{page}.md` reads `v1.2.md` as `v1.2`; the first
  one otherwise) or the lead character of a following expression;
- an optional expression (`{/x}`, `{.x}`, `{?x}`...) is taken whenever the URI has its lead character;
- in an unnamed expression (`{/a,b}`) values fill the variables left to right;
- named expressions (`{?a,b}`, `{;a}`, with the `{&c}` or `{;d}` expressions right after them) read
  `name=value` pairs in any order; a name the expressions do not declare, or a name given twice,
  means no match;
- an exploded variable comes back as one string: its items joined by the operator's separator
  (`a/b` for `{/x*}`) or, for named operators, its repeated `name=value` values joined by `,`;
  associative arrays are expanded but not recovered;
- values are percent-decoded; characters the RFC would have encoded are accepted as they are, except
  those that give the URI its structure (`/ ? #` for simple values, `#` and `&` in a query...);
- variables of an optional expression the URI leaves out are absent from the result.

Two expressions may touch only if the second has a lead character: in `{a}{b}` nothing says where
`a` ends, so such a template is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

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


@dataclass(frozen=True, slots=True)
class _NamedRun:
    """Consecutive named expressions read as one list of pairs (`{?a}{&b}`)."""

    op: _Operator
    specs: tuple[_VarSpec, ...]


@dataclass(frozen=True, slots=True)
class _ValueSlot:
    spec: _VarSpec


@dataclass(frozen=True, slots=True)
class _PairsSlot:
    sep: str
    specs: Mapping[str, _VarSpec]


_Part = str | _Expression


class UriTemplate:
    """One parsed template; `match` and `expand` only run what the constructor compiled."""

    __slots__ = ("_parts", "_pattern", "_slots", "text", "variables")

    def __init__(self, text: str) -> None:
        self.text = text
        self._parts: tuple[_Part, ...] = _parse(text)
        names: dict[str, None] = {}
        for part in self._parts:
            if isinstance(part, _Expression):
                names.update((spec.name, None) for spec in part.specs)
        self.variables: tuple[str, ...] = tuple(names)
        self._pattern, self._slots = _compile(self._parts)

    @classmethod
    def parse(cls, text: str) -> UriTemplate:
        return cls(text)

    def __repr__(self) -> str:
        return f"UriTemplate({self.text!r})"

    def expand(self, values: Mapping[str, Value]) -> str:
        """The URI for `values` (RFC 6570 section 3); a missing or None value is undefined."""
        return "".join(part if isinstance(part, str) else _expand(part, values) for part in self._parts)

    def match(self, uri: str) -> dict[str, str] | None:
        """The percent-decoded variables of `uri`, or None when this template cannot produce it."""
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        seen: dict[str, list[tuple[str, int | None]]] = {}
        for group, slot in self._slots.items():
            raw = found.group(group)
            if raw is None:
                continue
            if isinstance(slot, _ValueSlot):
                seen.setdefault(slot.spec.name, []).append((unquote(raw), slot.spec.prefix))
                continue
            pairs = _read_pairs(raw, slot)
            if pairs is None:
                return None
            for name, value in pairs.items():
                seen.setdefault(name, []).append((value, slot.specs[name].prefix))
        return _settle(seen)


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


# --- matching --------------------------------------------------------------------------------


def _units(parts: tuple[_Part, ...]) -> list[str | _Expression | _NamedRun]:
    """The parts, with each named expression merged with the ones that continue its list of pairs."""
    units: list[str | _Expression | _NamedRun] = []
    for part in parts:
        if isinstance(part, _Expression) and part.op.named:
            last = units[-1] if units else None
            if isinstance(last, _NamedRun) and part.op.lead == last.op.sep:
                units[-1] = _NamedRun(last.op, last.specs + part.specs)
            else:
                units.append(_NamedRun(part.op, part.specs))
        else:
            units.append(part)
    return units


def _followers(units: Sequence[str | _Expression | _NamedRun], start: int) -> list[tuple[str, bool]]:
    """What may begin right after unit `start - 1`, as (text, ends the URI): lead characters of optional
    expressions up to the next literal, and that literal."""
    tokens: list[tuple[str, bool]] = []
    for index in range(start, len(units)):
        unit = units[index]
        if isinstance(unit, str):
            tokens.append((unit, index == len(units) - 1))
            break
        tokens.append((unit.op.lead, False))  # _parse refuses an expression without lead after another
    return tokens


def _value(excluded: str, tokens: Sequence[tuple[str, bool]]) -> str:
    """A possessive run of characters outside `excluded` that stops where any token starts."""
    char = f"[^{re.escape(excluded)}]" if excluded else "(?s:.)"
    stops = [re.escape(text) + (r"\Z" if at_end else "") for text, at_end in tokens if text[0] not in excluded]
    return f"(?:(?!{'|'.join(stops)}){char})*+" if stops else f"{char}*+"


def _compile(parts: tuple[_Part, ...]) -> tuple[re.Pattern[str], dict[str, _ValueSlot | _PairsSlot]]:
    units = _units(parts)
    slots: dict[str, _ValueSlot | _PairsSlot] = {}
    pieces: list[str] = []
    for index, unit in enumerate(units):
        if isinstance(unit, str):
            pieces.append(re.escape(unit))
            continue
        tokens = _followers(units, index + 1)
        op = unit.op
        if isinstance(unit, _NamedRun):
            group = f"g{len(slots)}"
            slots[group] = _PairsSlot(op.sep, {spec.name: spec for spec in unit.specs})
            pieces.append(f"(?:{re.escape(op.lead)}(?P<{group}>{_value(op.structural, tokens)}))?+")
            continue
        several = len(unit.specs) > 1
        items: list[str] = []
        for spec in unit.specs:
            group = f"g{len(slots)}"
            slots[group] = _ValueSlot(spec)
            if spec.explode:
                item = _value(op.structural + op.sep, tokens)
                items.append(f"(?P<{group}>{item}(?:{re.escape(op.sep)}{item})*+)")
            else:
                items.append(f"(?P<{group}>{_value(op.structural + (op.sep if several else ''), tokens)})")
        # each later item is optional; a possessive group fails only without its separator, so the
        # next ones fail too, and this flat form reads like nesting without its recursion depth
        rest = "".join(f"(?:{re.escape(op.sep)}{item})?+" for item in items[1:])
        pieces.append(f"(?:{re.escape(op.lead)}{items[0]}{rest})?+" if op.lead else items[0] + rest)
    return re.compile("".join(pieces)), slots


def _read_pairs(raw: str, slot: _PairsSlot) -> dict[str, str] | None:
    single: dict[str, str] = {}
    exploded: dict[str, list[str]] = {}
    for piece in raw.split(slot.sep):
        if not piece:
            continue
        key, _, value = piece.partition("=")
        name = unquote(key)
        spec = slot.specs.get(name)
        if spec is None or name in single:
            return None
        if spec.explode:
            exploded.setdefault(name, []).append(unquote(value))
        else:
            single[name] = unquote(value)
    return single | {name: ",".join(items) for name, items in exploded.items()}


def _settle(seen: Mapping[str, list[tuple[str, int | None]]]) -> dict[str, str] | None:
    """One value per variable, when its occurrences agree (`{a:2}/{a}` needs `ab/abc`, not `xy/abc`)."""
    result: dict[str, str] = {}
    for name, occurrences in seen.items():
        full = {value for value, prefix in occurrences if prefix is None}
        if len(full) > 1:
            return None
        chosen = next(iter(full)) if full else max((value for value, _ in occurrences), key=len)
        for value, prefix in occurrences:
            if prefix is not None and (len(value) > prefix or value != chosen[:prefix]):
                return None
        result[name] = chosen
    return result


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
