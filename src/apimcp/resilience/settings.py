"""A plan's `resilience`: retries of idempotent calls, a circuit breaker per backend, and a cache of read-only
tools' answers. Each part is off unless the plan names it.

```yaml
resilience:
  retries: {attempts: 3, backoff_ms: 100, max_backoff_ms: 2000, budget_percent: 20, deadline_ms: 30000}
  breaker: {failures: 5, open_seconds: 30}
  cache: {ttl_seconds: 30, tools: {get_item: 120, list_items: 0}}
```

`true` for a part takes its defaults (`retries: true`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final


class ResilienceError(ValueError):
    """Settings that cannot be used; the message names the key and what is wrong."""


@dataclass(frozen=True, slots=True)
class Retries:
    attempts: int = 3
    """Tries in all, the first included."""
    backoff_ms: int = 100
    """The first wait; each next one doubles, up to `max_backoff_ms`, and is drawn at random below it (jitter)."""
    max_backoff_ms: int = 2000
    budget_percent: int = 20
    """Retries beyond this share of the calls (over the last ones, with 10 spare) are not made: a backend that
    fails every call is not sent three times its traffic."""
    deadline_ms: int = 30_000
    """No retry starts later than this after the call's first try (its wait included): a backend that answers
    nothing holds a caller about one timeout past it, not `attempts` timeouts and their waits."""


@dataclass(frozen=True, slots=True)
class Breaker:
    failures: int = 5
    """Consecutive failures (the backend unreachable or unable to answer) that open it."""
    open_seconds: float = 30.0
    """How long calls fail at once; then one call probes the backend, and its success closes it."""


DEFAULT_TTL_SECONDS: Final = 30.0


@dataclass(frozen=True, slots=True)
class Cache:
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    """How long a read-only tool's answer is kept (per tool in `tools`, 0 there: never)."""
    tools: Mapping[str, float] = field(default_factory=dict)

    def ttl(self, tool: str) -> float:
        return self.tools.get(tool, self.ttl_seconds)


@dataclass(frozen=True, slots=True)
class Resilience:
    retries: Retries | None = None
    breaker: Breaker | None = None
    cache: Cache | None = None

    def __bool__(self) -> bool:
        return self.retries is not None or self.breaker is not None or self.cache is not None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.retries is not None:
            r = self.retries
            out["retries"] = {"attempts": r.attempts, "backoff_ms": r.backoff_ms, "max_backoff_ms": r.max_backoff_ms,
                              "budget_percent": r.budget_percent, "deadline_ms": r.deadline_ms}  # fmt: skip
        if self.breaker is not None:
            out["breaker"] = {"failures": self.breaker.failures, "open_seconds": self.breaker.open_seconds}
        if self.cache is not None:
            out["cache"] = {"ttl_seconds": self.cache.ttl_seconds, "tools": dict(self.cache.tools)}
        return out


OFF: Final = Resilience()
_BOUNDS: Final[Mapping[str, tuple[float, float]]] = {
    "attempts": (1, 10), "backoff_ms": (1, 60_000), "max_backoff_ms": (1, 300_000), "budget_percent": (0, 100),
    "deadline_ms": (1, 600_000),
    "failures": (1, 1000), "open_seconds": (0.1, 3600), "ttl_seconds": (0, 86_400),
}  # fmt: skip
MAX_CACHED_TOOLS: Final = 1000


def parse_resilience(raw: object) -> Resilience:
    """`raw` (an object as YAML or JSON gives it; None: all off) as settings; ResilienceError otherwise."""
    if raw is None:
        return OFF
    if not isinstance(raw, Mapping):
        raise ResilienceError("resilience is an object with retries, breaker and cache")
    extra = sorted(str(key) for key in raw if key not in ("retries", "breaker", "cache"))
    if extra:
        raise ResilienceError(f"resilience: unknown key {', '.join(extra)} (it has retries, breaker, cache)")
    retries = _part(raw.get("retries"), "retries", Retries)
    if retries is not None and retries.max_backoff_ms < retries.backoff_ms:
        raise ResilienceError("resilience.retries: max_backoff_ms is at least backoff_ms")
    return Resilience(retries, _part(raw.get("breaker"), "breaker", Breaker), _cache(raw.get("cache")))


def _numbers(raw: Mapping[str, Any], where: str, keys: tuple[str, ...], integers: tuple[str, ...]) -> dict[str, Any]:
    extra = sorted(str(key) for key in raw if key not in keys)
    if extra:
        raise ResilienceError(f"resilience.{where}: unknown key {', '.join(extra)} (it has {', '.join(keys)})")
    values: dict[str, Any] = {}
    for key in keys:
        if key not in raw or key == "tools":
            continue
        value = raw[key]
        low, high = _BOUNDS[key]
        whole = key in integers
        if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)):
            raise ResilienceError(f"resilience.{where}.{key} is a {'whole ' if whole else ''}number")
        if not low <= value <= high:
            raise ResilienceError(f"resilience.{where}.{key} is from {low:g} to {high:g}, not {value}")
        values[key] = value
    return values


def _part(raw: object, where: str, kind: type[Retries] | type[Breaker]) -> Any:
    if raw is None or raw is False:
        return None
    if raw is True:
        return kind()
    if not isinstance(raw, Mapping):
        raise ResilienceError(f"resilience.{where} is an object (or true for its defaults)")
    keys = tuple(kind.__dataclass_fields__)
    integers = ("attempts", "backoff_ms", "max_backoff_ms", "budget_percent", "deadline_ms", "failures")
    return kind(**_numbers(raw, where, keys, integers))


def _cache(raw: object) -> Cache | None:
    if raw is None or raw is False:
        return None
    if raw is True:
        return Cache()
    if not isinstance(raw, Mapping):
        raise ResilienceError("resilience.cache is an object (or true for its defaults)")
    values = _numbers(raw, "cache", ("ttl_seconds", "tools"), ())
    tools = raw.get("tools") or {}
    if not isinstance(tools, Mapping) or len(tools) > MAX_CACHED_TOOLS:
        raise ResilienceError(f"resilience.cache.tools maps at most {MAX_CACHED_TOOLS} tool names to seconds")
    ttls: dict[str, float] = {}
    for tool, seconds in tools.items():
        if (
            not isinstance(tool, str)
            or isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not (0 <= seconds <= _BOUNDS["ttl_seconds"][1])
        ):
            raise ResilienceError(f"resilience.cache.tools: {tool!r} maps to seconds from 0 to 86400")
        ttls[tool] = float(seconds)
    return Cache(float(values.get("ttl_seconds", DEFAULT_TTL_SECONDS)), ttls)
