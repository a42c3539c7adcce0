"""Generated selection sets: what a tool asks for when its field returns an object.

The selection takes every field a client can ask for without choosing
arguments, to a bounded depth:

- scalars and enums at every level; object fields are entered while depth remains;
- fields with required arguments are left out, and so are object fields paged by
  `first`/`last` (Relay connections: servers such as GitHub refuse them without a
  page size, and an unbounded page would flood the answer); deprecated fields too;
- a type already on the current path is not entered again (cycles);
- interfaces: their own fields, `__typename`, and `... on Impl { extra fields }`;
  unions: `__typename` and `... on Member { fields }`; a field of one member whose
  shape differs from a same-named field of another member gets an alias
  (`state_PullRequest: state`), as GraphQL requires of fields that merge;
- at most `max_fields` fields per document: the deepest depth (up to the one asked
  for) that fits is taken whole; when even one level does not fit, fields are taken
  in order (scalars first) until the budget is spent.
"""

from __future__ import annotations

from graphql import (
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    get_named_type,
    is_leaf_type,
    is_required_argument,
)

DEFAULT_MAX_FIELDS = 200
PAGING_ARGUMENTS = frozenset({"first", "last"})
SCANS_PER_FIELD = 50
"""Fields a selection may look at for each one it may keep: an object field whose sub-selection comes out empty
gives its share of `max_fields` back, so without this bound a few types of 200 fields each made the walk visit
200^depth of them (a 4.5 KB schema took a minute of CPU)."""


class _OverBudget(Exception):
    pass


def generate_selection(
    schema: GraphQLSchema, type_: GraphQLNamedType, depth: int, max_fields: int = DEFAULT_MAX_FIELDS
) -> str | None:
    """The selection set text (`{ ... }`) for a field of type `type_`; None for scalars and enums."""
    if is_leaf_type(type_):
        return None
    best: str | None = None
    for level in range(1, depth + 1):
        generator = _Generator(schema, max_fields, strict=True)
        try:
            items = generator.select(type_, level, frozenset({type_.name}))
        except _OverBudget:
            break
        best = _braces(items)
        if not generator.cut_by_depth:
            break  # a deeper pass would select the same fields
    if best is None:
        best = _braces(_Generator(schema, max_fields, strict=False).select(type_, 1, frozenset({type_.name})))
    # The grammar wants at least one selection (graphql-core lets `{ }` pass, other servers do not): when
    # nothing else can be selected, the type's name still tells the client what came back.
    return "{ __typename }" if best.strip("{} ") == "" else best


class _Generator:
    def __init__(self, schema: GraphQLSchema, max_fields: int, *, strict: bool) -> None:
        self._schema = schema
        self._left = max_fields
        self._scans = max_fields * SCANS_PER_FIELD
        self._strict = strict
        self.cut_by_depth = False

    def select(self, type_: GraphQLNamedType, depth: int, path: frozenset[str]) -> list[str]:
        """The items of the selection set of `type_` (empty when nothing can be selected)."""
        if isinstance(type_, GraphQLObjectType):
            return self._fields(type_.fields, depth, path, {})
        if isinstance(type_, GraphQLInterfaceType):
            shapes: dict[str, str] = {}
            items = self._fields(type_.fields, depth, path, shapes)
            if not self._take():
                return items
            items.append("__typename")
            for impl in self._schema.get_possible_types(type_):
                extra = {name: f for name, f in impl.fields.items() if name not in type_.fields}
                self._fragment(items, impl, extra, depth, path, shapes)
            return items
        if isinstance(type_, GraphQLUnionType):
            if not self._take():
                return []
            items = ["__typename"]
            shapes = {}
            for member in type_.types:
                self._fragment(items, member, member.fields, depth, path, shapes)
            return items
        return []

    def _fragment(
        self,
        items: list[str],
        type_: GraphQLObjectType,
        fields: dict[str, GraphQLField],
        depth: int,
        path: frozenset[str],
        shapes: dict[str, str],
    ) -> None:
        selected = self._fields(fields, depth, path | {type_.name}, shapes, owner=type_.name)
        if selected:
            items.append(f"... on {type_.name} {_braces(selected)}")

    def _fields(
        self,
        fields: dict[str, GraphQLField],
        depth: int,
        path: frozenset[str],
        shapes: dict[str, str],
        owner: str | None = None,
    ) -> list[str]:
        """Selected fields, scalars first; `shapes` holds response keys already used at this level (see _key)."""
        self._scans -= len(fields)
        if self._scans < 0 and self._strict:  # a shallower depth is taken (or, at depth 1, the lenient pass)
            raise _OverBudget
        usable = [(name, f) for name, f in fields.items() if _selectable(f)]
        items: list[str] = []
        for name, f in usable:
            if is_leaf_type(get_named_type(f.type)):
                if not self._take():
                    return items
                items.append(_key(name, str(f.type), "", shapes, owner) + name)
        for name, f in usable:
            named = get_named_type(f.type)
            if is_leaf_type(named) or named.name in path:
                continue
            if depth <= 1:
                self.cut_by_depth = True
                continue
            if not self._take():
                return items
            inner = self.select(named, depth - 1, path | {named.name})
            if inner:
                selection = _braces(inner)
                items.append(_key(name, str(f.type), selection, shapes, owner) + f"{name} {selection}")
            else:
                self._left += 1  # the field is left out: give its share back
        return items

    def _take(self) -> bool:
        """Count one more field; False (lenient) or _OverBudget (strict) when none is left."""
        if self._left <= 0:
            if self._strict:
                raise _OverBudget
            return False
        self._left -= 1
        return True


def _selectable(f: GraphQLField) -> bool:
    if f.deprecation_reason is not None:
        return False
    if any(is_required_argument(arg) for arg in f.args.values()):
        return False
    return is_leaf_type(get_named_type(f.type)) or not PAGING_ARGUMENTS & f.args.keys()


def _key(name: str, type_text: str, selection: str, shapes: dict[str, str], owner: str | None) -> str:
    """An alias prefix (`name_Owner: `) when `name` is already used at this level with another shape, else ''.

    Two fields under one response key must have the same shape (same type, same sub-selection),
    even in fragments on different types; the shapes are compared as text, which is conservative.
    """
    shape = f"{type_text} {selection}"
    known = shapes.setdefault(name, shape)
    if known == shape or owner is None:
        return ""
    alias = f"{name}_{owner}"
    shapes.setdefault(alias, shape)
    return f"{alias}: "


def _braces(items: list[str]) -> str:
    return "{ " + " ".join(items) + " }"
