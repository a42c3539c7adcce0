"""Bounded YAML (and JSON depth) for every document the project reads: descriptions, configuration files,
attached artifacts.

YAML aliases make a document expand: an 865-byte file of aliases naming aliases becomes
gigabytes once every reference is followed, and an alias inside what it names never ends.
So a document is first composed into its node graph (where an alias is one more reference
to a node, costing nothing), measured there, and only built into Python values when it is
within `YamlLimits`: how many aliases, how deep, how large once expanded (an alias counts
at the full size of what it names). libyaml's parser is used when it is installed (it is
several times faster than the pure-Python one). Dates and times stay strings, as JSON
would have them (a schema's `example: 2024-01-01`).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

DEFAULT_MAX_ALIASES = 10_000
DEFAULT_MAX_DEPTH = 128
DEFAULT_MAX_EXPANDED_SIZE = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class YamlLimits:
    max_aliases: int = DEFAULT_MAX_ALIASES
    """References to anchored nodes (`*name`, `<<: *name`) in one document."""
    max_depth: int = DEFAULT_MAX_DEPTH
    """Nesting of mappings and sequences, aliases followed (JSON documents too)."""
    max_expanded_size: int = DEFAULT_MAX_EXPANDED_SIZE
    """About the size in bytes of the document written as JSON with every alias replaced by what it names."""

    def __post_init__(self) -> None:
        if self.max_aliases < 0 or self.max_depth <= 0 or self.max_expanded_size <= 0:
            raise ValueError("YAML limits must be positive (max_aliases may be 0: no aliases at all)")


class YamlLimitError(yaml.MarkedYAMLError):
    """A YAML document beyond a limit; like parser errors it has `problem` and `problem_mark` (where)."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class JsonTooDeep(ValueError):
    pass


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(_Base):  # type: ignore[misc]  # the base is libyaml's loader when available
    """Safe YAML as JSON sees it: dates and times stay strings."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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
        _Measure(limits or YamlLimits()).size(node, 1)
        if inspect is not None:
            inspect(node)
        return YamlDocument(node, loader.construct_document(node))
    finally:
        loader.dispose()


class _Measure:
    """Sizes of the node graph, each node measured once; an alias (a node met again) costs its full size."""

    def __init__(self, limits: YamlLimits) -> None:
        self._limits = limits
        self._measured: dict[int, tuple[int, int]] = {}
        """id(node) → (expanded size, levels of mappings and sequences from it down; 0 for a scalar)."""
        self._open: set[int] = set()
        """Nodes being measured: meeting one again is an alias inside what it names."""
        self._aliases = 0

    def size(self, node: yaml.Node, depth: int) -> tuple[int, int]:
        limits = self._limits
        key = id(node)
        known = self._measured.get(key)
        if known is not None or key in self._open:
            self._aliases += 1
            if self._aliases > limits.max_aliases:
                raise YamlLimitError(f"the document uses more than {limits.max_aliases} aliases", node.start_mark)
            if known is None:
                raise YamlLimitError("an alias refers to a node that contains it (a recursive alias)", node.start_mark)
        elif isinstance(node, yaml.ScalarNode):
            known = (len(node.value) + 3, 0)  # quotes and a separator, as JSON would write it
            self._measured[key] = known
        else:
            if depth > limits.max_depth:
                raise YamlLimitError(f"the document is nested deeper than {limits.max_depth} levels", node.start_mark)
            self._open.add(key)
            children: list[yaml.Node] = (
                [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else node.value
            )
            total, height = 2, 1
            for child in children:
                size, child_height = self.size(child, depth + 1)
                total += size
                height = max(height, child_height + 1)
                if total > limits.max_expanded_size:
                    break
            self._open.discard(key)
            known = (total, height)
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
