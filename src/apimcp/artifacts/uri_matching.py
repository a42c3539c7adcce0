"""Reading a URI against a parsed RFC 6570 template, in one forward pass: work linear in the URI's length.

The RFC defines expansion only. Matching is its inverse, and an expansion can often be read several
ways (`{a}{.b}` against `x.y.z`), so this module fixes one reading and never goes back on it:

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

Why the work is linear in the URI's length: every value is one scan of a character class (`re`, which
does not backtrack on a lone class) bounded by where the value must stop, and the literal that stops a
value is found by one forward search (Knuth-Morris-Pratt, as `re` searches a literal), not tried again
at each position: a lookahead per character cost the URI's length times the literal's. A reading counts
its steps (characters examined, and `PART_STEPS` for each part of the template visited); a
`MatchBudget` shared by every template one read tries ends the reading when they are spent.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import unquote

if TYPE_CHECKING:  # the parsed form is uri_templates', which compiles its matcher with this module
    from apimcp.artifacts.uri_templates import _Expression, _Operator, _VarSpec

__all__ = ["PART_STEPS", "MatchBudget", "MatchBudgetSpent", "Matcher"]

PART_STEPS = 32
"""What visiting a part of the template (a literal, an expression, one value) counts, in characters examined:
in Python it costs about as much as `re` examining that many characters, so a budget bounds time either way."""


class MatchBudgetSpent(Exception):
    """Matching one URI took more steps than its budget allows."""


class MatchBudget:
    """The steps the matching of one URI may take, across every template it is tried against."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def charge(self, steps: int) -> None:
        self.spent += steps
        if self.spent > self.limit:
            raise MatchBudgetSpent(f"matching took more than {self.limit} steps")


@dataclass(frozen=True, slots=True)
class _NamedRun:
    """Consecutive named expressions read as one list of pairs (`{?a}{&b}`)."""

    op: _Operator
    specs: tuple[_VarSpec, ...]


_Unit: TypeAlias = "str | _Expression | _NamedRun"


@dataclass(frozen=True, slots=True)
class _ValueSlot:
    spec: _VarSpec


@dataclass(frozen=True, slots=True)
class _PairsSlot:
    sep: str
    specs: Mapping[str, _VarSpec]


@dataclass(frozen=True, slots=True)
class _Scan:
    """How one value is read: the characters `run` accepts (None: any), up to the next start of the literal at
    unit `literal`, or, with `final`, up to where the template's last literal ends the URI."""

    run: re.Pattern[str] | None
    literal: int | None
    final: bool


@dataclass(frozen=True, slots=True)
class _Item:
    slot: int
    scan: _Scan


@dataclass(frozen=True, slots=True)
class _Values:
    """An unnamed expression (a lead character, if any, then items separated by `sep`), or a named run (one
    item holding every `name=value`)."""

    lead: str
    sep: str
    items: tuple[_Item, ...]


class _Cursor:
    """Where one literal next begins in a URI. `re` searches a pure literal with Knuth-Morris-Pratt's overlap
    table, so a search costs the characters it passes, whatever the literal's length; the last occurrence
    found is kept, and a URI is searched again only from beyond it."""

    __slots__ = ("_found", "_literal", "_text")

    def __init__(self, text: str, literal: re.Pattern[str]) -> None:
        self._text, self._literal = text, literal
        self._found = -1

    def next_from(self, start: int) -> tuple[int, int]:
        """Where the literal next begins at or after `start` (the URI's length when nowhere), and the characters
        examined to know it."""
        if self._found >= start:
            return self._found, 0
        hit = self._literal.search(self._text, start)
        self._found = hit.start() if hit is not None else len(self._text)
        return self._found, (hit.end() if hit is not None else len(self._text)) - start


class Matcher:
    """A template's parts compiled into steps read left to right; `match` only runs them."""

    __slots__ = ("_final", "_literals", "_slots", "_steps")

    def __init__(self, parts: Sequence[str | _Expression]) -> None:
        units = _units(parts)
        self._slots: list[_ValueSlot | _PairsSlot] = []
        self._literals: dict[int, re.Pattern[str]] = {}
        """The literals that end values, by unit index, compiled for searching."""
        self._final: str | None = units[-1] if units and isinstance(units[-1], str) else None
        steps: list[str | _Values] = []
        for index, unit in enumerate(units):
            if isinstance(unit, str):
                steps.append(unit)
                continue
            tokens = _followers(units, index + 1)
            op = unit.op
            if isinstance(unit, _NamedRun):
                self._slots.append(_PairsSlot(op.sep, {spec.name: spec for spec in unit.specs}))
                item = _Item(len(self._slots) - 1, self._scan(op.structural, op.structural, tokens))
                steps.append(_Values(op.lead, op.sep, (item,)))
                continue
            several = len(unit.specs) > 1
            items = []
            for spec in unit.specs:
                self._slots.append(_ValueSlot(spec))
                if spec.explode:  # its separators are part of it; a stop starting with one never ends it
                    kept = op.structural.replace(op.sep, "")
                    scan = self._scan(kept, op.structural + op.sep, tokens)
                else:
                    excluded = op.structural + (op.sep if several else "")
                    scan = self._scan(excluded, excluded, tokens)
                items.append(_Item(len(self._slots) - 1, scan))
            steps.append(_Values(op.lead, op.sep, tuple(items)))
        self._steps = tuple(steps)

    def _scan(self, excluded: str, ignored: str, tokens: Sequence[tuple[str, bool, int | None]]) -> _Scan:
        """A value of characters outside `excluded`, stopped by the tokens whose first character is not in `ignored`
        (the value cannot reach those anyway): a lone character joins the class, a longer literal gets a cursor."""
        stops = set(excluded)
        literal: int | None = None
        final = False
        for text, at_end, index in tokens:
            if text[0] in ignored:
                continue
            if at_end:
                final = True
            elif len(text) == 1:
                stops.add(text)
            else:
                assert index is not None
                literal = index
                self._literals[index] = re.compile(re.escape(text))
        run = re.compile(f"[^{''.join(re.escape(c) for c in sorted(stops))}]*") if stops else None
        return _Scan(run, literal, final)

    def match(self, uri: str, budget: MatchBudget | None = None) -> dict[str, str] | None:
        """The percent-decoded variables of `uri`, or None when the template cannot produce it; MatchBudgetSpent
        once `budget` is spent (its steps are charged whatever the outcome)."""
        allowance = budget.limit - budget.spent if budget is not None else sys.maxsize
        steps, found = self._read(uri, allowance)
        if budget is not None:
            budget.charge(steps)
        return found

    def _read(self, uri: str, allowance: int) -> tuple[int, dict[str, str] | None]:
        n = len(uri)
        steps = 0
        final_at = -1
        if self._final is not None:  # a URI that does not end as the template does is refused at once
            steps += len(self._final)
            if not uri.endswith(self._final):
                return steps, None
            final_at = n - len(self._final)
        cursors: dict[int, _Cursor] = {}
        raw: list[str | None] = [None] * len(self._slots)
        pos = 0
        for step in self._steps:
            steps += PART_STEPS
            if steps > allowance:
                return steps, None  # the caller's charge refuses it
            if isinstance(step, str):
                steps += len(step)
                if not uri.startswith(step, pos):
                    return steps, None
                pos += len(step)
                continue
            if step.lead:
                if not uri.startswith(step.lead, pos):
                    continue  # an optional expression the URI leaves out
                pos += 1
            for number, item in enumerate(step.items):
                if number:
                    if not uri.startswith(step.sep, pos):
                        break  # the later values are left out too
                    pos += 1
                scan = item.scan
                limit = final_at if scan.final and final_at >= pos else n
                if scan.literal is not None:
                    cursor = cursors.get(scan.literal)
                    if cursor is None:
                        cursor = cursors[scan.literal] = _Cursor(uri, self._literals[scan.literal])
                    start, examined = cursor.next_from(pos)
                    steps += examined
                    limit = min(limit, start)
                run = scan.run.match(uri, pos, limit) if scan.run is not None else None
                end = run.end() if run is not None else limit
                steps += PART_STEPS + end - pos
                raw[item.slot] = uri[pos:end]
                pos = end
        if pos != n:
            return steps, None
        for text in raw:  # decoding: each value, and each of a query's pairs, is a part
            if text is not None:
                steps += PART_STEPS * (1 + text.count("&") + text.count(";")) + len(text)
        return steps, self._values(raw)

    def _values(self, raw: Sequence[str | None]) -> dict[str, str] | None:
        seen: dict[str, list[tuple[str, int | None]]] = {}
        for text, slot in zip(raw, self._slots, strict=True):
            if text is None:
                continue
            if isinstance(slot, _ValueSlot):
                seen.setdefault(slot.spec.name, []).append((unquote(text), slot.spec.prefix))
                continue
            pairs = _read_pairs(text, slot)
            if pairs is None:
                return None
            for name, value in pairs.items():
                seen.setdefault(name, []).append((value, slot.specs[name].prefix))
        return _settle(seen)


def _units(parts: Sequence[str | _Expression]) -> list[_Unit]:
    """The parts, with each named expression merged with the ones that continue its list of pairs."""
    units: list[_Unit] = []
    for part in parts:
        if not isinstance(part, str) and part.op.named:
            last = units[-1] if units else None
            if isinstance(last, _NamedRun) and part.op.lead == last.op.sep:
                units[-1] = _NamedRun(last.op, last.specs + part.specs)
            else:
                units.append(_NamedRun(part.op, part.specs))
        else:
            units.append(part)
    return units


def _followers(units: Sequence[_Unit], start: int) -> list[tuple[str, bool, int | None]]:
    """What may begin right after unit `start - 1`, as (text, ends the URI, index of a literal): lead characters
    of optional expressions up to the next literal, and that literal."""
    tokens: list[tuple[str, bool, int | None]] = []
    for index in range(start, len(units)):
        unit = units[index]
        if isinstance(unit, str):
            tokens.append((unit, index == len(units) - 1, index))
            break
        tokens.append((unit.op.lead, False, None))  # parsing refuses an expression without lead after another
    return tokens


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
