"""A person's approval of one call, asked of the caller's client by a form elicitation.

The form shows the tool and its arguments ("Approve delete_book with bookId=3?") and a single yes/no field. In a
2025-06-18 or 2025-11-25 session the question travels on the call's stream and the call waits for the answer;
in 2026-07-28 the call answers `input_required` with the same question, and the client calls again with the
answer. An approval holds for one call only:

- bound to the arguments: the question's key carries a digest of the tool and its arguments, and a 2026-07-28
  retry's `requestState` opens only for the same call, for the same caller, for a short time (the engine's);
- asked, not volunteered: the key also carries a nonce chosen when the question is first put (kept in the sealed
  `requestState`), so an answer a client sends before being asked matches nothing and the question is put anyway;
- short-lived: an answer given more than the rule's `approval_seconds` (300 by default) after the question was
  put is refused as expired.

A client that cannot show a form (it declared no elicitation, or its revision has none) gets a tool error
saying the call needs approval.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from apimcp.protocol import RequestContext
from apimcp.protocol.errors import McpError

APPROVAL_SECONDS: Final = 300.0
MAX_SHOWN: Final = 4000
"""Characters of arguments a question may show. Nothing is ever cut: a person must see all of what they approve,
so a call whose arguments take more is not asked about (`too_long`)."""
MAX_ASKED: Final = 200
"""Approvals one request may ask for (a program's calls each asked): each is kept in its sealed state."""
_PLAIN_NAME: Final = re.compile(r"[A-Za-z0-9_.$@-]{1,200}")
_INVISIBLE: Final = re.compile(
    r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
"""Characters a reader does not see (zero-width, bidirectional overrides, tags): shown as escapes, so that no part
of a question can be hidden or reordered on screen."""
FIELD: Final = "approve"
_FORM: Final = {
    "type": "object",
    "properties": {FIELD: {"type": "boolean", "title": "Approve this call", "default": False}},
    "required": [FIELD],
}

Outcome = Literal["approved", "refused", "expired", "unavailable", "pending"]
"""`pending`: an administrator has not answered yet (`admin_approval.py`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    outcome: Outcome
    refusal: str | None = None
    """What the caller is told when the call does not go on."""


def shown_arguments(arguments: Mapping[str, Any]) -> str:
    """`bookId=3, note="two words"`: each value as JSON (control characters escaped), a name as it is when plain
    and as JSON otherwise, and invisible characters as escapes wherever they are."""
    shown = ", ".join(
        f"{key if _PLAIN_NAME.fullmatch(key) else orjson.dumps(key).decode()}={orjson.dumps(value).decode()}"
        for key, value in arguments.items()
    )
    return _INVISIBLE.sub(_escaped, shown)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def question(tool: str, shown: str, message: str | None = None) -> str:
    """ "Approve delete_book with bookId=3?" (`shown`: `shown_arguments`), with the rule's message after it when it
    has one."""
    asked = f"Approve {tool} with {shown}?" if shown else f"Approve {tool}?"
    return f"{asked} {message}" if message else asked


def too_long(tool: str, shown: str, who: str) -> Answer | None:
    """The answer to a call whose arguments are too long to be shown whole to `who` (None: they are not)."""
    if len(shown) <= MAX_SHOWN:
        return None
    return Answer("unavailable", f"Calling {tool} needs {who}'s approval, and its arguments are too long to be shown "
                                 f"in full ({len(shown)} characters; at most {MAX_SHOWN}): nobody approves what they "
                                 "cannot read")  # fmt: skip


def digest(tool: str, arguments: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps([tool, arguments], option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]


async def ask(
    ctx: RequestContext, tool: str, arguments: Mapping[str, Any], message: str | None = None,
    lifetime: float = APPROVAL_SECONDS,
) -> Answer:  # fmt: skip
    """Ask the caller's user to approve calling `tool` with `arguments`. In 2026-07-28 this raises
    `InputRequired` until the client answers (the call is run again then)."""
    shown = shown_arguments(arguments)
    refused = too_long(tool, shown, "a person")
    if refused is not None:
        return refused
    asked = ctx.state.setdefault("approvals", {})
    call = digest(tool, arguments)
    # the same call made again in one request (a program's loop) is asked again: an approval holds for one call
    again = ctx.occurrence(f"approve-{call}")
    if again:
        call = f"{call}-{again}"
    record = asked.get(call)
    if not isinstance(record, dict):
        if len(asked) >= MAX_ASKED:
            return Answer("unavailable", f"Calling {tool} needs a person's approval, and this request has asked for "
                                         f"{MAX_ASKED} already")  # fmt: skip
        record = asked[call] = {"nonce": secrets.token_hex(8), "at": time.time()}
    try:
        answer = await ctx.elicit(question(tool, shown, message), _FORM, key=f"approve-{call}-{record['nonce']}")
    except McpError as exc:  # the client cannot be asked (no elicitation, or a revision without it)
        return Answer("unavailable", f"Calling {tool} needs a person's approval, and this client cannot ask for it "
                                     f"({exc.message})")  # fmt: skip
    if time.time() - float(record["at"]) > lifetime:
        return Answer("expired", f"The approval of {tool} came after {lifetime:g} s, too late: call it again")
    content = answer.get("content")
    if answer.get("action") == "accept" and isinstance(content, dict) and content.get(FIELD) is True:
        return Answer("approved")
    return Answer("refused", f"Calling {tool} was not approved")
