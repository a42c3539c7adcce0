"""RFC 6902 JSON Patch, compiled once, applied copy-on-write within a growth budget.

`Patch.compile` checks the operations and parses their pointers (PlaceError naming the operation);
`Patch.apply` runs them on one document:

* nothing given is changed: a container of the document is copied (shallowly) the first time an
  operation changes something inside it, so an operation costs the depth of its path and the width
  of the containers on it, never the size of the document; the values `add` and `replace` write are
  copied (they are the patch's, shared by every result);
* `copy` shares the value it copies (a later change to either place copies it first);
* what the patch adds (the values of `add` and `replace`, what `copy` duplicates) is counted about as
  JSON bytes (`weight`), and the patch fails as soon as that would pass its budget: copies that
  compound (each one duplicating the last) stop there, so the document after any operation is at
  most the budget larger than the one given, and so is everything done with it afterwards.

Refused when compiled: a `copy` from the whole document or from an ancestor of its `path` (it would
double what contains it) and a `move` into its own child (RFC 6902 forbids it), removing the whole
document, and more than `MAX_OPERATIONS` operations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from apimcp.artifacts.errors import PlaceError, pointer_segments

MAX_OPERATIONS: Final = 100
_OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")
_NEEDS_VALUE = frozenset(("add", "replace", "test"))
_NEEDS_FROM = frozenset(("move", "copy"))
_INDEX = re.compile(r"0|[1-9][0-9]*")
_SCALAR_WEIGHT = 8
"""What a number, true, false or null counts: about its JSON length, without formatting it."""

Path = tuple[str, ...]


class PatchFailed(Exception):
    """A patch that does not apply to one document; the message never quotes the document."""


def weight(value: Any, limit: int) -> int:
    """About the size of `value` as compact JSON, in bytes; any number above `limit` once it passes it
    (the walk stops there, so a value whose parts are shared many times costs no more than `limit`)."""
    total = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 1 + 2 * len(item) + sum(len(key) + 2 for key in item)  # braces, colons, commas, quoted keys
            if total > limit:
                return total
            pending.extend(item.values())
        elif isinstance(item, list):
            total += 1 + len(item)
            if total > limit:
                return total
            pending.extend(item)
        else:
            total += _SCALAR_WEIGHT
        if total > limit:
            return total
    return total


def json_equal(first: Any, second: Any) -> bool:
    """RFC 6902's `test` equality: numbers by value, but true and false are not the numbers 1 and 0."""
    if isinstance(first, bool) or isinstance(second, bool):
        return first is second
    if isinstance(first, dict):
        return (
            isinstance(second, dict)
            and first.keys() == second.keys()
            and all(json_equal(item, second[key]) for key, item in first.items())
        )
    if isinstance(first, list):
        return (
            isinstance(second, list)
            and len(first) == len(second)
            and all(json_equal(a, b) for a, b in zip(first, second, strict=True))
        )
    if isinstance(first, int | float) and isinstance(second, int | float):
        return first == second
    return type(first) is type(second) and bool(first == second)


@dataclass(frozen=True, slots=True)
class Operation:
    op: str
    path: Path
    source: Path | None = None
    """`from`, for move and copy."""
    value: Any = None
    value_weight: int = 0
    text: str = ""
    """`op path` as written, for messages."""


def _compile_operation(index: int, spec: object) -> Operation:
    if not isinstance(spec, Mapping):
        raise PlaceError((index,), "an operation is a mapping with op and path")
    name = spec.get("op")
    if name not in _OPERATIONS:
        raise PlaceError((index,), f"unknown op {name!r}: expected one of {', '.join(_OPERATIONS)}")
    if "path" not in spec:
        raise PlaceError((index, "path"), "the operation needs a path")
    path = pointer_segments(spec["path"], (index, "path"))
    if name in _NEEDS_VALUE and "value" not in spec:
        raise PlaceError((index,), f"the {name} operation needs a value")
    source = None
    if name in _NEEDS_FROM:
        if "from" not in spec:
            raise PlaceError((index, "from"), f"the {name} operation needs from")
        source = pointer_segments(spec["from"], (index, "from"))
        if path[: len(source)] == source and path != source:
            if name == "move":
                raise PlaceError((index, "from"), f"cannot move {spec['from']!r} into its own child {spec['path']!r}")
            copied = repr(spec["from"]) if spec["from"] else "the whole document"
            raise PlaceError(
                (index, "from"),
                f"cannot copy {copied} into itself (at {spec['path']!r}): each such copy doubles what it copies",
            )
    if name == "remove" and not path:
        raise PlaceError((index, "path"), "cannot remove the whole document")
    value = spec.get("value")
    return Operation(
        op=name,
        path=path,
        source=source,
        value=value,
        value_weight=weight(value, 1 << 62) if name in ("add", "replace") else 0,
        text=f"{name} {spec['path']}",
    )


@dataclass(frozen=True, slots=True)
class Patch:
    """Compiled operations; build with `compile`."""

    operations: tuple[Operation, ...] = ()

    @classmethod
    def compile(cls, spec: object) -> Patch:
        if isinstance(spec, str | bytes) or not isinstance(spec, Sequence):
            raise PlaceError((), f"must be a list of operations, not {type(spec).__name__}")
        if len(spec) > MAX_OPERATIONS:
            raise PlaceError((), f"at most {MAX_OPERATIONS} operations, not {len(spec)}")
        return cls(tuple(_compile_operation(index, operation) for index, operation in enumerate(spec)))

    def most_added(self, budget: int) -> int:
        """The most `apply` can add within `budget`: a copy may use all of it, other operations their values."""
        if any(operation.op == "copy" for operation in self.operations):
            return budget
        return min(budget, sum(operation.value_weight for operation in self.operations))

    def apply(self, document: Any, budget: int) -> Any:
        """The patched document; PatchFailed naming the operation (by index and `op path`) that failed,
        including the one that would make the patch add more than `budget` bytes."""
        run = _Run(document, budget)
        for index, operation in enumerate(self.operations):
            try:
                run.apply(operation)
            except PatchFailed as failure:
                raise PatchFailed(f"[{index}] ({operation.text}) failed: {failure}") from None
        return run.document


_CONTAINERS = (dict, list)


class _Run:
    """One application: the document so far, the containers copied for it (which it may change in place),
    and what is left of the budget."""

    __slots__ = ("budget", "document", "left", "owned")

    def __init__(self, document: Any, budget: int) -> None:
        self.document = document
        self.budget = budget
        self.left = budget
        self.owned: dict[int, Any] = {}
        """Copies made by this run, by id; held so that no other object can take a copied one's id."""

    def apply(self, operation: Operation) -> None:
        op, path = operation.op, operation.path
        if op == "test":
            if not json_equal(_get(self.document, path), operation.value):
                raise PatchFailed("the value is not the one the test expects")
        elif op == "remove":
            self._remove(path)
        elif op in ("add", "replace"):
            self._spend(operation.value_weight)
            if op == "replace":
                _get(self.document, path)  # replace needs the value to exist
            self._put(path, _fresh(operation.value), insert=op == "add")
        else:
            source = operation.source
            assert source is not None
            value = _get(self.document, source)
            if op == "move":
                if source == path:
                    return
                self._remove(source)
            else:
                self._spend(weight(value, self.left))
                if id(value) in self.owned:
                    # a copy of the run's own container now sits in two places: nothing stays changeable in place
                    self.owned.clear()
            self._put(path, value, insert=True)

    def _spend(self, cost: int) -> None:
        if cost > self.left:
            raise PatchFailed(f"the patch would add more than {self.budget} bytes to the document")
        self.left -= cost

    def _own(self, container: Any) -> Any:
        if id(container) in self.owned:
            return container
        copied = dict(container) if isinstance(container, dict) else list(container)
        self.owned[id(copied)] = copied
        return copied

    def _parent(self, path: Path) -> Any:
        """The container of `path`'s last segment, it and every container above it copied as needed."""
        if not isinstance(self.document, _CONTAINERS):
            raise PatchFailed("the document is neither an object nor an array")
        node = self.document = self._own(self.document)
        for segment in path[:-1]:
            child = _child(node, segment)
            if not isinstance(child, _CONTAINERS):
                raise PatchFailed("the path goes through a value that is neither an object nor an array")
            owned = self._own(child)
            if owned is not child:
                node[segment if isinstance(node, dict) else int(segment)] = owned
            node = owned
        return node

    def _put(self, path: Path, value: Any, *, insert: bool) -> None:
        if not path:
            self.document = value
            return
        parent, last = self._parent(path), path[-1]
        if isinstance(parent, dict):
            parent[last] = value
        elif insert:
            parent.insert(_index(parent, last, appending=True), value)
        else:
            parent[_index(parent, last)] = value

    def _remove(self, path: Path) -> None:
        parent, last = self._parent(path), path[-1]
        if isinstance(parent, dict):
            if last not in parent:
                raise PatchFailed("the path does not exist")
            del parent[last]
        else:
            del parent[_index(parent, last)]


def _fresh(value: Any) -> Any:
    """A copy of a patch's own value: results never share it, so changing one result cannot change the next."""
    if isinstance(value, dict):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    return value


def _index(array: list[Any], segment: str, *, appending: bool = False) -> int:
    """The array index a segment names: an existing element, or where to add (`-` is the end)."""
    if appending and segment == "-":
        return len(array)
    if not _INDEX.fullmatch(segment):
        raise PatchFailed("an array index is a number without leading zeros" + (" or -" if appending else ""))
    index = int(segment)
    if index > len(array) or (index == len(array) and not appending):
        raise PatchFailed("the array index is out of range")
    return index


def _child(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        if segment not in node:
            raise PatchFailed("the path does not exist")
        return node[segment]
    if isinstance(node, list):
        return node[_index(node, segment)]
    raise PatchFailed("the path goes through a value that is neither an object nor an array")


def _get(document: Any, path: Path) -> Any:
    node = document
    for segment in path:
        node = _child(node, segment)
    return node
