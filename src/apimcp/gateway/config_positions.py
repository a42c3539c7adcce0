"""Where each key and value of a configuration is written, so that every mistake names file, line and key.

Validation errors are placed when the file is read; the mistakes found later (an environment variable that is
not set, a pattern that selects nothing, a description that cannot be read) are placed with the same positions,
kept with the configuration. A configuration made on the command line (`--openapi`) names its options instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml
from pydantic import ValidationError

from apimcp.gateway.config_base import ConfigError

KeyPath = tuple[str | int, ...]
"""A key in the configuration: `("services", "petstore", "include", 0)`."""
Marks = dict[KeyPath, yaml.Mark]

_UNION_TAGS = frozenset({"bearer", "basic", "api_key", "str", "EnvRef"})
"""Names pydantic adds to an error's location for the member of a union it tried; not keys of the file."""


@dataclass(frozen=True, slots=True)
class Positions:
    source: str
    """The file's name (or what made the configuration, when no file did)."""
    values: Marks = field(default_factory=dict)
    """Where each value starts."""
    keys: Marks = field(default_factory=dict)
    """Where each mapping key starts."""
    options: Mapping[KeyPath, str] = field(default_factory=dict)
    """The command-line option that gave a value (a configuration made by `--openapi`)."""

    @classmethod
    def of_document(cls, node: yaml.Node, source: str) -> Positions:
        """The positions of every key and value of a composed document; a key written twice is an error."""
        positions = cls(source)
        positions._walk(node, (), set())
        return positions

    def _walk(self, node: yaml.Node, path: KeyPath, walked: set[int]) -> None:
        """What an alias names is walked once: an error inside it points at the anchored original."""
        self.values[path] = node.start_mark
        if id(node) in walked:
            return
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                if key in seen:
                    raise ConfigError(_where(key_node.start_mark) + f"{key!r} appears twice")
                seen.add(key)
                self.keys[(*path, key)] = key_node.start_mark
                self._walk(value_node, (*path, key), walked)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, (*path, index), walked)

    def located(self, at: KeyPath, message: str, *, at_key: bool = False) -> str:
        """`file:line:column: key: message` for the value at `at` (its key's position with `at_key`), or for the
        nearest key above it that is written (a default value is not)."""
        written = self._as_written(at)
        for prefix in sorted(self.options, key=len, reverse=True):
            if written[: len(prefix)] == prefix:
                return f"{self.options[prefix]}: {message}"
        mark = self.keys.get(written) if at_key else None
        nearest = written
        while mark is None and nearest and nearest not in self.values:
            nearest = nearest[:-1]
        mark = mark or self.values.get(nearest)
        where = _where(mark) if mark is not None else f"{self.source}: "
        return f"{where}{_label(written)}: {message}"

    def error(self, at: KeyPath, message: str) -> ConfigError:
        return ConfigError(self.located(at, message))

    def validation_error(self, exc: ValidationError) -> ConfigError:
        """Every problem pydantic found, one line each, placed and named as written."""
        lines = []
        for error in exc.errors():
            at = tuple(p for p in error["loc"] if not (isinstance(p, str) and p in _UNION_TAGS))
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown key"
            elif error["type"] == "missing":
                message = "this key is required"
            lines.append(self.located(at, message, at_key=error["type"] == "extra_forbidden"))
        return ConfigError("\n".join(dict.fromkeys(lines)))

    def _as_written(self, at: KeyPath) -> KeyPath:
        """`at` without the list index of a value written alone (`credentials: {...}` is a list of one)."""
        for index, part in enumerate(at):
            prefix = at[:index]
            if isinstance(part, int) and (*prefix, part) not in self.values and prefix in self.values:
                return (*prefix, *at[index + 1 :])
        return at


def _where(mark: yaml.Mark) -> str:
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}: "


def _label(at: KeyPath) -> str:
    label = ""
    for part in at:
        label += f"[{part}]" if isinstance(part, int) else (f".{part}" if label else str(part))
    return label or "(top level)"


def errors(*problems: ConfigError) -> ConfigError:
    """Several problems reported at once, one per line."""
    return ConfigError("\n".join(str(problem) for problem in problems))
