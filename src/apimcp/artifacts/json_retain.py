"""Keep only some branches of a JSON value, named by JSON Pointers (RFC 6901), and say what remains.

The pointers are compiled once into a tree of segments. Applying it builds a new value:

* the last segment of a pointer keeps the whole subtree below it (shared, not copied);
* on an object, a segment names a member; a member that is absent is ignored;
* on an array, a segment that is an RFC 6901 index (`0`, or digits without a leading zero) selects
  that element; any other segment is applied, with the rest of its pointer, to every element, so
  `/items/name` keeps `name` in each element of `items`, and a top-level array is filtered per element;
* an object or array that a pointer goes through is kept even when nothing inside it matched (so a
  required member stays present); a scalar that a pointer would have to go through is dropped, as is
  an array element that keeps nothing;
* `""` is the whole document (RFC 6901); `/` is the member whose name is empty, as RFC 6901 says.

`Retention.schema` prunes a JSON Schema the same way, only by removing constraints, so every value
the original schema accepts is, once filtered, accepted by the pruned one.

Applying is linear: each node of the value is visited at most once, and what is kept is shared, never
copied. Compiling is not, in general: where an array meets both indexes and names, each selected
element follows the merge of both, and pointers that mix them level after level (`/0/a/a`, `/a/0/a`,
`/a/a/0`...) multiply the merges (14 such pointers made 25,000 branches). So compiling, and pruning a
schema along the branches, each stop at `MAX_BRANCHES` (`TooManyBranches`, and no schema).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")
MAX_BRANCHES: Final = 10_000


class PointerError(ValueError):
    """A string that is not a JSON Pointer."""


class NotRetainable(ValueError):
    """A value that pointers cannot go into: a scalar at the top."""


class TooManyBranches(ValueError):
    """Pointers whose indexes and names combine into more than `MAX_BRANCHES` branches."""


class _Unfollowable(Exception):
    """A schema that does not say precisely what a pointer reaches."""


class _Budget:
    """Branches left to build (or, pruning a schema, to visit)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_BRANCHES

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise TooManyBranches(
                f"the pointers combine array indexes and names into more than {MAX_BRANCHES} branches"
            )


def parse_pointer(pointer: object) -> tuple[str, ...]:
    """The unescaped segments of an RFC 6901 pointer: `""` → `()`, `"/a~1b/~0"` → `("a/b", "~")`."""
    if not isinstance(pointer, str):
        raise PointerError(f"{pointer!r} is not a string")
    if not pointer:
        return ()
    if not pointer.startswith("/"):
        raise PointerError(f"{pointer!r} does not start with '/'")
    segments = pointer[1:].split("/")
    if "~" not in pointer:
        return tuple(segments)
    out = []
    for segment in segments:
        if _BAD_ESCAPE.search(segment):
            raise PointerError(f"{pointer!r} has a '~' not followed by 0 or 1")
        # ~1 first: "~01" is "~1" unescaped, not "/"
        out.append(segment.replace("~1", "/").replace("~0", "~"))
    return tuple(out)


class _Node:
    """Where some pointers go on from one value.

    `keys` maps a segment to what follows it, None meaning the whole subtree. For arrays, `wild` holds
    the segments that are not indices (applied to every element; None when all are indices) and
    `indexed` what each selected element keeps, the wild segments included.
    """

    __slots__ = ("indexed", "keys", "only", "wild")

    def __init__(self, keys: dict[str, _Node | None], budget: _Budget) -> None:
        budget.spend()
        self.keys = keys
        self.only = next(iter(keys.items())) if len(keys) == 1 else None
        names = {key: rest for key, rest in keys.items() if not _INDEX.fullmatch(key)}
        self.wild: _Node | None = self if len(names) == len(keys) else (_Node(names, budget) if names else None)
        selected = sorted((int(key), rest) for key, rest in keys.items() if _INDEX.fullmatch(key))
        wild = self.wild
        self.indexed: dict[int, _Node | None] = {
            index: rest if wild is None else _merge(rest, wild, budget) for index, rest in selected
        }


def _merge(first: _Node | None, second: _Node | None, budget: _Budget) -> _Node | None:
    """What keeps both: the whole subtree if either keeps it."""
    if first is None or second is None:
        return None
    keys = dict(first.keys)
    for key, rest in second.keys.items():
        keys[key] = _merge(keys[key], rest, budget) if key in keys else rest
    return _Node(keys, budget)


def _build(tree: dict[str, Any], budget: _Budget) -> _Node:
    return _Node({key: None if rest is None else _build(rest, budget) for key, rest in tree.items()}, budget)


_MISSING: Final[Any] = object()


def _retain(node: _Node | None, value: Any) -> Any:
    if node is None:
        return value
    if isinstance(value, dict):
        only = node.only
        if only is not None:
            key, rest = only
            if key in value:
                kept = _retain(rest, value[key])
                if kept is not _MISSING:
                    return {key: kept}
            return {}
        out = {}
        keys = node.keys
        for key, item in value.items():  # the value's order, not the pointers'
            if key in keys:
                kept = _retain(keys[key], item)
                if kept is not _MISSING:
                    out[key] = kept
        return out
    if isinstance(value, list):
        indexed = node.indexed
        wild = node.wild
        elements: list[Any] = []
        if wild is None:
            size = len(value)
            for index, rest in indexed.items():
                if index < size:
                    kept = _retain(rest, value[index])
                    if kept is not _MISSING:
                        elements.append(kept)
        elif not indexed:
            for item in value:
                kept = _retain(wild, item)
                if kept is not _MISSING:
                    elements.append(kept)
        else:
            for index, item in enumerate(value):
                kept = _retain(indexed.get(index, wild), item)
                if kept is not _MISSING:
                    elements.append(kept)
        return elements
    return _MISSING


# Keywords that may define what a pointer reaches somewhere we do not look: following them would be a guess.
_OPAQUE = frozenset(
    ("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "if", "then", "else",
     "dependentSchemas", "dependencies", "prefixItems", "additionalItems")
)  # fmt: skip
# Keywords a filtered value still satisfies, or that only name or annotate; every other keyword of a
# schema a pointer goes through is dropped (minItems, uniqueItems, enum, default, additionalProperties...).
_KEPT = frozenset(
    ("type", "nullable", "title", "description", "maxProperties", "maxItems", "propertyNames", "deprecated",
     "readOnly", "writeOnly", "$schema", "$id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$comment")
)  # fmt: skip
_CONTAINERS = frozenset(("object", "array"))


def _always_container(schema: Any) -> bool:
    """Whether every value the schema accepts is an object or an array (so retention keeps it)."""
    if not isinstance(schema, Mapping) or schema.get("nullable") is True:
        return False
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind in _CONTAINERS
    return isinstance(kind, list) and bool(kind) and all(k in _CONTAINERS for k in kind)


_ANNOTATIONS = frozenset(("title", "description", "$comment", "deprecated", "readOnly", "writeOnly", "examples"))
_MAX_REFERENCE_HOPS = 32


def _dereferenced(schema: Any, root: Mapping[str, Any]) -> Any:
    """`schema` with local references (`#/$defs/Book`, importers write them) followed: a reference whose
    siblings only annotate stands for its target. Anything else is left for `_prune` to refuse."""
    for _ in range(_MAX_REFERENCE_HOPS):
        if not isinstance(schema, Mapping) or not isinstance(schema.get("$ref"), str):
            return schema
        reference = schema["$ref"]
        if not reference.startswith("#") or set(schema) - _ANNOTATIONS - {"$ref"}:
            return schema
        target: Any = root
        for part in reference[1:].split("/")[1:] if reference != "#" else ():
            step = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or step not in target:
                return schema
            target = target[step]
        schema = target
    raise _Unfollowable  # references that lead to each other


def _prune(node: _Node | None, schema: Any, root: Mapping[str, Any], budget: _Budget) -> Any:
    if node is None:
        return schema
    try:
        budget.spend()  # merged branches are shared: the paths through them can outnumber them by far
    except TooManyBranches:
        raise _Unfollowable from None
    schema = _dereferenced(schema, root)
    if schema is False:
        return False  # nothing can be there, filtered or not
    if not isinstance(schema, Mapping) or _OPAQUE.intersection(schema):
        raise _Unfollowable
    kind = schema.get("type")
    if kind is None:
        kinds = {k for k, word in (("object", "properties"), ("array", "items")) if word in schema}
    elif isinstance(kind, str):
        kinds = {kind}
    elif isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        kinds = set(kind)
    else:
        raise _Unfollowable
    if not kinds & _CONTAINERS:
        raise _Unfollowable
    out = {word: value for word, value in schema.items() if word in _KEPT}
    if "object" in kinds:
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            raise _Unfollowable
        closed = schema.get("additionalProperties") is False and not schema.get("patternProperties")
        pruned = {}
        for key, rest in node.keys.items():
            if key in properties:
                pruned[key] = _prune(rest, properties[key], root, budget)
            elif not closed:  # only additionalProperties, patternProperties or nothing says what it is
                raise _Unfollowable
        out["properties"] = {key: pruned[key] for key in properties if key in pruned}
        required = [
            key for key in schema.get("required", ())
            if key in pruned and (node.keys[key] is None or _always_container(_dereferenced(properties[key], root)))
        ]  # fmt: skip
        if required:
            out["required"] = required
    if "array" in kinds:
        items = schema.get("items")
        if items is None or not isinstance(items, Mapping | bool):
            raise _Unfollowable
        applied = list(node.indexed.values())
        if node.wild is not None:  # every element no index selects
            applied.append(node.wild)
        shapes = [_prune(rest, items, root, budget) for rest in applied]
        if any(shape != shapes[0] for shape in shapes):
            raise _Unfollowable  # elements kept differently: no single `items` describes them
        out["items"] = shapes[0]
    return out


@dataclass(frozen=True, slots=True)
class Retention:
    """Compiled pointers; build with `from_segments`."""

    root: _Node | None

    @classmethod
    def from_segments(cls, pointers: Iterable[tuple[str, ...]]) -> Retention:
        """Merge parsed pointers (see `parse_pointer`); an empty one keeps everything. TooManyBranches when
        they combine into more than `MAX_BRANCHES` branches."""
        tree: dict[str, Any] = {}
        for segments in pointers:
            if not segments:
                return cls(None)
            level = tree
            for segment in segments[:-1]:
                deeper = level.setdefault(segment, {})
                if deeper is None:
                    break  # an earlier pointer keeps this whole subtree
                level = deeper
            else:
                level[segments[-1]] = None
        return cls(_build(tree, _Budget()))

    @property
    def keeps_everything(self) -> bool:
        return self.root is None

    def apply(self, value: Any) -> Any:
        """A new value with only the retained branches; subtrees are shared with `value`, not copied."""
        kept = _retain(self.root, value)
        if kept is _MISSING:
            raise NotRetainable("the value is neither an object nor an array")
        return kept

    def schema(self, schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The schema of what `apply` keeps from values valid under `schema`, or None where the schema
        cannot be followed precisely along a pointer (references outside the schema, combinators, members
        described only by additionalProperties or patternProperties, arrays without `items`, tuples)."""
        try:
            pruned = _prune(self.root, schema, schema, _Budget())
        except _Unfollowable:
            return None
        return pruned if isinstance(pruned, Mapping) else None
