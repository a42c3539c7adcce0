"""The rate limit options of `plan create` and `plan update`: `--rate-limit 100/s`, `--caller-rate-limit 5/s`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.ratelimit.policy import SCOPES, RateLimitError, parse_rate

RateLimitOption = Annotated[
    str | None,
    typer.Option(help="Requests the exposition takes from everyone together: 100/s, 6000/min, 20/s,burst=40; '' none."),
]
CallerRateLimitOption = Annotated[
    str | None,
    typer.Option(help="Requests each caller may make (by user, else client address): 5/s, 300/min; '' none."),
]


def rate_limit_values(given: Mapping[str, Any], current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The plan's `rate_limit` for the options in `given` (a command's locals); `current`: the plan, on update."""
    options = {"exposition": given["rate_limit"], "caller": given["caller_rate_limit"]}
    if all(value is None for value in options.values()):
        return {}
    limits: dict[str, Any] = dict((current or {}).get("rate_limit") or {})
    for scope in SCOPES:
        text = options[scope]
        if text is None:
            continue
        if not text:
            limits.pop(scope, None)
            continue
        try:
            limits[scope] = parse_rate(text, "--rate-limit" if scope == "exposition" else "--caller-rate-limit")
        except RateLimitError as exc:
            fail(str(exc), EXIT_USAGE)
        limits[scope] = limits[scope].as_json()
    return {"rate_limit": limits or None}
