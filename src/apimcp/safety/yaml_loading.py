"""Bounded YAML (and JSON depth) for every document the project reads: descriptions, configuration files,
attached artifacts.

YAML aliases make a document expand: an 865-byte file of aliases naming aliases becomes
gigabytes once every reference is followed, and an alias inside what it names never ends.
So a document is first composed into its node graph (where an alias is one more reference
to a node, costing nothing), measured there (each node once, so the measurement is linear
in the document), and only built into Python values when it is within `YamlLimits`: how
many aliases, how deep, how large once expanded (an alias counts at the full size of what
it names), in nodes and in bytes. Counting aliases is not enough: 54 of them, 6 levels of 9
naming the level before, made a 481-byte description a 2 MB input schema, and each further
level multiplies by 9. What aliases may add is relative to what the document itself holds:
any document may expand to the allowances, a larger one to `max_expansion` times its own
size. libyaml's parser is used when it is installed (it is several times faster than the
pure-Python one). Plain scalars mean what YAML 1.2's core schema says (`yaml_schema`): dates and
times stay strings, as JSON would have them (a schema's `example: 2024-01-01`), `yes` and `on` are strings,
there are no base-60 numbers, integers hold 64 bits, and only JSON values are built.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from apimcp.safety.yaml_schema import CORE_CONSTRUCTORS, CORE_RESOLVERS, ScalarOutOfRange

DEFAULT_MAX_ALIASES = 10_000
DEFAULT_MAX_DEPTH = 128
DEFAULT_MAX_EXPANDED_SIZE = 128 * 1024 * 1024
DEFAULT_MAX_EXPANSION = 4
DEFAULT_EXPANSION_ALLOWANCE_NODES = 100_000
DEFAULT_EXPANSION_ALLOWANCE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class YamlLimits:
    max_aliases: int = DEFAULT_MAX_ALIASES
    """References to anchored nodes (`*name`, `<<: *name`) in one document."""
    max_depth: int = DEFAULT_MAX_DEPTH
    """Nesting of mappings and sequences, aliases followed (JSON documents too)."""
    max_expanded_size: int = DEFAULT_MAX_EXPANDED_SIZE
    """About the size in bytes of the document written as JSON with every alias replaced by what it names,
    whatever the document's own size."""
    max_expansion: int = DEFAULT_MAX_EXPANSION
    """How many times its own size (nodes, and bytes as JSON) a document may become once its aliases are
    followed, when that is more than the allowances."""
    expansion_allowance_nodes: int = DEFAULT_EXPANSION_ALLOWANCE_NODES
    """Nodes (scalars, mappings, sequences) any document may reach with its aliases followed."""
    expansion_allowance_bytes: int = DEFAULT_EXPANSION_ALLOWANCE_BYTES
    """Bytes (as JSON) any document may reach with its aliases followed (never beyond `max_expanded_size`)."""

    def __post_init__(self) -> None:
        sizes = (self.max_depth, self.max_expanded_size, self.max_expansion, self.expansion_allowance_nodes,
                 self.expansion_allowance_bytes)  # fmt: skip
        if self.max_aliases < 0 or min(sizes) <= 0:
            raise ValueError("YAML limits must be positive (max_aliases may be 0: no aliases at all)")


class YamlLimitError(yaml.MarkedYAMLError):
    """A YAML document beyond a limit; like parser errors it has `problem` and `problem_mark` (where)."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class JsonTooDeep(ValueError):
    pass


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc]  # the base is libyaml's loader when available
    """Safe YAML as JSON sees it, in YAML 1.2's core schema (`yaml_schema`): dates and times stay strings, `yes`
    is a string, `1:30` too, and integers hold 64 bits."""


_Loader.yaml_implicit_resolvers = CORE_RESOLVERS
_Loader.yaml_constructors = {**yaml.SafeLoader.yaml_constructors, **CORE_CONSTRUCTORS}


@dataclass(frozen=True, slots=True)
class YamlDocument:
    node: yaml.Node | None
    """The composed document, for positions (`node.start_mark`); None for an empty document."""
    data: Any


def load_yaml(content: bytes | str, limits: YamlLimits | None = None, *, name: str | None = None) -> Any:
    """The value of a one-document YAML stream, within `limits`; yaml.YAMLError (YamlLimitError for a limit)."""
    return compose_yaml(content, limits, name=name).data


def compose_yaml(
    content: bytes | str,
    limits: YamlLimits | None = None,
    *,
    name: str | None = None,
    inspect: Callable[[yaml.Node], None] | None = None,
) -> YamlDocument:
    """Like `load_yaml`, keeping the node graph too. `name` names the stream in marks (a file's path); `inspect`
    sees the checked node graph before values are built from it (building merges `<<` keys into the nodes)."""
    stream: Any = content
    if name is not None:
        stream = io.BytesIO(content) if isinstance(content, bytes) else io.StringIO(content)
        stream.name = name
    loader = _Loader(stream)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # the pure-Python composer recurses per level (libyaml stops at 1000 levels)
            raise YamlLimitError("the document is nested too deeply", None) from None
        if node is None:
            return YamlDocument(None, None)
        _Measure(limits or YamlLimits()).document(node)
        if inspect is not None:
            inspect(node)
        try:
            data = loader.construct_document(node)
        except ScalarOutOfRange as exc:  # a bound, like the others: callers report it as one
            raise YamlLimitError(exc.problem or "a number is out of range", exc.problem_mark) from None
        return YamlDocument(node, data)
    finally:
        loader.dispose()


class _Measure:
    """Sizes of the node graph, each node measured once; an alias (a node met again) costs its full size."""

    def __init__(self, limits: YamlLimits) -> None:
        self._limits = limits
        self._measured: dict[int, tuple[int, int, int]] = {}
        """id(node) → (bytes as JSON, levels of mappings and sequences from it down (0 for a scalar), nodes), every
        alias replaced by what it names (plain tuples: a million nodes are measured in a fraction of a second)."""
        self._open: set[int] = set()
        """Nodes being measured: meeting one again is an alias inside what it names."""
        self._aliases = 0
        self._own_bytes = 0
        """The document as written: each node once, an alias as nothing more."""
        self._heaviest: tuple[int, yaml.Mark | None] = (0, None)
        """The node aliases name that expands to the most nodes, and where it is (what a refusal points to)."""

    def document(self, node: yaml.Node) -> None:
        """Measure the document at `node`; YamlLimitError when a bound is passed."""
        expanded_bytes, _, expanded_nodes = self.size(node, 1)
        limits = self._limits
        own_nodes = len(self._measured)
        allowed_nodes = max(limits.expansion_allowance_nodes, limits.max_expansion * own_nodes)
        allowed_bytes = max(limits.expansion_allowance_bytes, limits.max_expansion * self._own_bytes)
        if expanded_nodes > allowed_nodes:
            count, mark = self._heaviest
            raise YamlLimitError(
                f"the document's aliases expand it to {expanded_nodes} nodes, more than the limit "
                f"({limits.expansion_allowance_nodes} nodes, or {limits.max_expansion} times the document's own "
                f"{own_nodes}); the largest node they name holds {count}",
                mark or node.start_mark,
            )
        if expanded_bytes > allowed_bytes:
            raise YamlLimitError(
                f"the document's aliases expand it to about {expanded_bytes} bytes, more than the limit "
                f"({limits.expansion_allowance_bytes} bytes, or {limits.max_expansion} times the document's own "
                f"{self._own_bytes})",
                self._heaviest[1] or node.start_mark,
            )

    def size(self, node: yaml.Node, depth: int) -> tuple[int, int, int]:
        limits = self._limits
        key = id(node)
        known = self._measured.get(key)
        if known is not None or key in self._open:
            self._aliases += 1
            if self._aliases > limits.max_aliases:
                raise YamlLimitError(f"the document uses more than {limits.max_aliases} aliases", node.start_mark)
            if known is None:
                raise YamlLimitError("an alias refers to a node that contains it (a recursive alias)", node.start_mark)
            if known[2] > self._heaviest[0]:
                self._heaviest = (known[2], node.start_mark)
        elif isinstance(node, yaml.ScalarNode):
            known = (len(node.value) + 3, 0, 1)  # quotes and a separator, as JSON would write it
            self._own_bytes += known[0]
            self._measured[key] = known
        else:
            if depth > limits.max_depth:
                raise YamlLimitError(f"the document is nested deeper than {limits.max_depth} levels", node.start_mark)
            self._open.add(key)
            self._own_bytes += 2
            children: list[yaml.Node] = (
                [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else node.value
            )
            total, height, nodes = 2, 1, 1
            for child in children:
                size, child_height, child_nodes = self.size(child, depth + 1)
                total += size
                nodes += child_nodes
                height = max(height, child_height + 1)
                if total > limits.max_expanded_size:
                    break
            self._open.discard(key)
            known = (total, height, nodes)
            self._measured[key] = known
        if depth + known[1] - 1 > limits.max_depth:  # an alias brings what it names to where it stands
            raise YamlLimitError(f"the document is nested deeper than {limits.max_depth} levels", node.start_mark)
        if known[0] > limits.max_expanded_size:
            raise YamlLimitError(
                f"the document expands to more than {limits.max_expanded_size} bytes once its aliases are followed",
                node.start_mark,
            )
        return known


def check_depth(value: Any, max_depth: int) -> None:
    """Refuse (JsonTooDeep) a value of nested lists and dicts deeper than `max_depth`; walked without recursion."""
    if type(value) is not dict and type(value) is not list:
        return
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        for child in item.values() if type(item) is dict else item:
            if type(child) is dict or type(child) is list:
                if depth >= max_depth:
                    raise JsonTooDeep(f"the document is nested deeper than {max_depth} levels")
                pending.append((child, depth + 1))
