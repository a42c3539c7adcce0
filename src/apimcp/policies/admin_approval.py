"""An administrator's approval of one call, for agents acting alone (an `approve` rule with `approver: admin`).

Nobody behind the agent's client can answer a form, so the question goes to the control plane instead: the first
call is answered with a tool error naming a pending request (`apimcp approvals approve ID`, or the console), and
the same call made again once an administrator approved it goes on. An approval holds for one call only:

- bound to the call: the exposition, the tool, a digest of its arguments and the caller's principal (callers
  without one share "anonymous"): other arguments or another caller make a request of their own;
- used once: the control plane answers "approved" to one call, and the next one asks again;
- short-lived: a request not decided within the rule's `approval_seconds` (300 by default) expires, and so does
  an approval not used within that time.

The control plane is reached through `AdminAsk` (the gateway's snapshot source): this module knows nothing of
how. A gateway without one (a configuration file alone), or one that cannot reach it, answers a tool error that
says so: the call is never made unapproved.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from itertools import pairwise
from typing import Any, Final

from apimcp.guardrails.detectors import DETECTORS, replaced
from apimcp.policies.approval import Answer, digest, question, shown_arguments, too_long
from apimcp.protocol.caller import Caller

AdminAsk = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""Asks the control plane about a call's approval request (making it when there is none): given {exposition,
tool, digest, caller, question, lifetime}, answers {id, status: pending | approved | refused, expires_in}."""

ANONYMOUS: Final = "anonymous"
HIDDEN: Final = "[hidden]"
_CREDENTIAL_WORDS: Final = frozenset(
    {"password", "passwd", "pwd", "passphrase", "passcode", "secret", "token", "apikey", "authorization", "bearer",
     "jwt", "credential", "credentials", "cookie", "pin", "otp"}
)  # fmt: skip
_CREDENTIAL_PAIRS: Final = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("signing", "key"), ("ssh", "key"),
     ("session", "id")}
)  # fmt: skip
"""Argument names whose values the question does not show (a word of the name, in any case style: `password`,
`clientSecret`, `x-api-key`; not `author`): the question is kept by the control plane and read by its
administrators, unlike a caller's own form. Whatever their names, values the `secrets` guardrail recognizes (key
formats, JWTs, bearer tokens) are hidden too. The digest still binds the approval to the values."""
_MAX_DEPTH: Final = 8
_SECRETS: Final = DETECTORS["secrets"]


class TooDeep(Exception):
    """Arguments nested deeper than a question shows: what lies below could be neither shown nor hidden."""


class AdminUnavailable(Exception):
    """The control plane could not be asked (none, or not reachable): the message says which, never a secret."""


async def ask_admin(
    ask: AdminAsk | None, exposition: str, tool: str, arguments: Mapping[str, Any], caller: Caller | None,
    message: str | None, lifetime: float,
) -> Answer:  # fmt: skip
    """Where the approval of calling `tool` with `arguments` stands; `approved` once, when an administrator said
    yes."""
    if ask is None:
        return Answer("unavailable", f"Calling {tool} needs an administrator's approval, and this gateway has no "
                                     "control plane to ask for it")  # fmt: skip
    try:
        arguments_shown = shown_arguments(shown(arguments))
    except TooDeep:
        return Answer("unavailable", f"Calling {tool} needs an administrator's approval, and its arguments nest too "
                                     f"deep (over {_MAX_DEPTH} levels) to be shown in full")  # fmt: skip
    # what is hidden counts too: a long value the admin cannot read is no shorter for being hidden
    refused = too_long(tool, arguments_shown, "an administrator") or too_long(tool, shown_arguments(arguments),
                                                                                 "an administrator")  # fmt: skip
    if refused is not None:
        return refused
    request = {
        "exposition": exposition,
        "tool": tool,
        "digest": digest(tool, arguments),
        # a NUL is no character a database keeps in text (PostgreSQL refuses it): written as its escape
        "caller": caller.principal.replace("\x00", "\\u0000")[:512] if caller is not None else ANONYMOUS,
        "question": question(tool, arguments_shown, message),
        "lifetime": lifetime,
    }
    try:
        state = await ask(request)
    except AdminUnavailable as exc:
        return Answer("unavailable", f"Calling {tool} needs an administrator's approval, and it could not be asked "
                                     f"for ({exc}): try again shortly")  # fmt: skip
    status, identifier, left = state.get("status"), state.get("id"), state.get("expires_in")
    if status == "approved":
        return Answer("approved")
    if status == "refused":
        return Answer("refused", f"Calling {tool} was refused by an administrator (approval request {identifier})")
    if status == "pending" and isinstance(identifier, str) and isinstance(left, int | float):
        return Answer("pending", f"Calling {tool} needs an administrator's approval: request {identifier} waits for "
                                 f"one (`apimcp approvals approve {identifier}`, or the console). Call it again with "
                                 f"the same arguments once it is approved, within {max(int(left), 1)} s")  # fmt: skip
    return Answer("unavailable", f"Calling {tool} needs an administrator's approval, and the control plane's answer "
                                 "was not understood: try again shortly")  # fmt: skip


def shown(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with the values of credential-like names (in nested objects and lists too) replaced by
    `HIDDEN`; TooDeep when they nest deeper than `_MAX_DEPTH` levels."""
    return {key: HIDDEN if _credential_like(key) else _shown(value, 1) for key, value in arguments.items()}


def _shown(value: Any, depth: int) -> Any:
    if depth >= _MAX_DEPTH and isinstance(value, Mapping | list) and value:
        raise TooDeep
    if isinstance(value, Mapping):
        return {
            k: HIDDEN if isinstance(k, str) and _credential_like(k) else _shown(v, depth + 1) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shown(item, depth + 1) for item in value]
    if isinstance(value, str) and _SECRETS.found(value):
        return _without_secrets(value)
    return value


def _without_secrets(text: str) -> str:
    """`text` with what the `secrets` guardrail finds in it replaced by what it looked like and its size: an admin
    reads that something was hidden, and how much (a caller who writes `bearer ` before a path, or a private key's
    first line before a command, hides nothing the admin is not told of). A private key is hidden only whole, up to
    its END line: a BEGIN line alone hides nothing."""
    matches = [m for m in _SECRETS.matches(text) if m.kind != "private_key" or "-----END " in text[m.start : m.end]]
    return replaced(text, matches, lambda m: f"[hidden {m.kind.replace('_', ' ')}, {m.end - m.start} characters]")


def _credential_like(name: str) -> bool:
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name[:200]).lower())
    return any(word in _CREDENTIAL_WORDS for word in words) or any(
        pair in _CREDENTIAL_PAIRS for pair in pairwise(words)
    )
