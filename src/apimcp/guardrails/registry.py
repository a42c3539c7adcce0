"""A plan's `guardrails`, checked where they are written, and made into guardrails where they run.

```yaml
guardrails:
  - {use: secrets, action: block}                       # on arguments and answers
  - {use: personal_data, action: redact, on: [answers]}
  - {use: injection, action: report}
  - {use: acme_dlp, action: block, options: {level: 2}} # an entry point of the group apimcp.guardrails
```

A name that is not built in must be an installed entry point where the guardrail runs (a gateway); a control
plane does not need it installed, and a gateway that lacks it refuses to serve the exposition rather than serve
it unguarded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Final, cast

from apimcp.guardrails.chain import Guardrails
from apimcp.guardrails.detectors import DETECTORS
from apimcp.guardrails.hooks import ACTIONS, Action, Guardrail, GuardrailSettings, Where
from apimcp.guardrails.scanning import ScannerGuardrail

GROUP: Final = "apimcp.guardrails"
MAX_GUARDRAILS: Final = 20
MAX_OPTIONS_BYTES: Final = 16_384
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_KEYS: Final = frozenset({"use", "action", "on", "options"})
_WHERE: Final = ("arguments", "answers")

Factory = Callable[[GuardrailSettings], Guardrail]


class GuardrailError(ValueError):
    """Guardrail settings that cannot be used; the message names the entry and what is wrong."""


def parse_guardrails(raw: object) -> tuple[GuardrailSettings, ...]:
    """`raw` (a list, as YAML or JSON gives it; None for none) as settings; GuardrailError otherwise."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise GuardrailError("guardrails is a list of {use, action, on, options}")
    if len(raw) > MAX_GUARDRAILS:
        raise GuardrailError(f"guardrails holds more than {MAX_GUARDRAILS} entries")
    return tuple(_one(item, index) for index, item in enumerate(raw))


def _one(item: object, index: int) -> GuardrailSettings:
    where = f"guardrails[{index}]"
    if not isinstance(item, Mapping):
        raise GuardrailError(f"{where}: an entry is an object with use and action")
    extra = sorted(str(key) for key in item if key not in _KEYS)
    if extra:
        raise GuardrailError(f"{where}: unknown key {', '.join(extra)} (an entry has use, action, on, options)")
    use, action, on = item.get("use"), item.get("action", "report"), item.get("on", list(_WHERE))
    if not isinstance(use, str) or not _NAME.fullmatch(use):
        raise GuardrailError(f"{where}: use names a guardrail: {', '.join(DETECTORS)} or an installed one's name")
    if action not in ACTIONS:
        raise GuardrailError(f"{where} ({use}): action is one of {', '.join(ACTIONS)}, not {action!r}")
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, Sequence) or not on or any(w not in _WHERE for w in on):
        raise GuardrailError(f"{where} ({use}): on is arguments, answers or both")
    options = item.get("options") or {}
    if not isinstance(options, Mapping):
        raise GuardrailError(f"{where} ({use}): options is an object")
    if use in DETECTORS and options:
        raise GuardrailError(f"{where} ({use}): the built-in guardrails take no options")
    return GuardrailSettings(use, cast(Action, action), frozenset(cast(Sequence[Where], on)), dict(options))


def as_json(settings: Sequence[GuardrailSettings]) -> list[dict[str, Any]]:
    return [
        {"use": s.use, "action": s.action, "on": [w for w in _WHERE if w in s.on],
         **({"options": dict(s.options)} if s.options else {})}
        for s in settings
    ]  # fmt: skip


def build(settings: Sequence[GuardrailSettings]) -> tuple[Guardrail, ...]:
    """The guardrails the settings name; GuardrailError for a name neither built in nor installed."""
    made: list[Guardrail] = []
    for entry in settings:
        detector = DETECTORS.get(entry.use)
        if detector is not None:
            made.append(ScannerGuardrail(detector, entry))
            continue
        factory = installed().get(entry.use)
        if factory is None:
            raise GuardrailError(f"the guardrail {entry.use!r} is neither built in nor installed here (entry points "
                                 f"of the group {GROUP})")  # fmt: skip
        made.append(factory(entry))
    return tuple(made)


@cache
def installed() -> Mapping[str, Factory]:
    """The guardrails installed packages offer (loaded once per process)."""
    return {point.name: point.load() for point in entry_points(group=GROUP)}


def exposition_guardrails(exposition: Mapping[str, Any]) -> Guardrails:
    """The guardrails of an exposition as a snapshot or a configuration file carries them (`guardrails`); a
    GuardrailError fails the exposition rather than letting it serve unguarded."""
    return Guardrails(build(parse_guardrails(exposition.get("guardrails"))))
