"""An exposition's guardrails run in the order its plan lists them, around each call (`gateway/calls.py`).

Before the call each sees the arguments the previous one left (redacted, say); after it, each sees the result
the previous one left. The first that blocks stops the call, or withholds its answer. Every finding is told to
the observers (`Heard`) with the guardrail's name and the action taken; what was found is never told.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import orjson

from apimcp.guardrails.detectors import replaced, together
from apimcp.guardrails.hooks import Finding, GuardedCall, Guardrail, Verdict
from apimcp.guardrails.scanning import ScannerGuardrail, answer_texts, redaction_label
from apimcp.protocol.models import CallToolResult

log = logging.getLogger("apimcp.guardrails")


@dataclass(frozen=True, slots=True)
class Heard:
    """What one guardrail found, and what was done: reported, redacted or blocked."""

    guardrail: str
    where: str
    """arguments or answers (of a call), resource (a read's contents) or prompt (a prompt's messages)"""
    outcome: str
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class Before:
    arguments: Mapping[str, Any]
    block: str | None = None
    heard: tuple[Heard, ...] = ()


@dataclass(frozen=True, slots=True)
class After:
    result: CallToolResult
    block: str | None = None
    heard: tuple[Heard, ...] = ()


class Guardrails:
    __slots__ = ("_guardrails", "_quick")

    def __init__(self, guardrails: Sequence[Guardrail]) -> None:
        self._guardrails = tuple(guardrails)
        built_in = [g for g in self._guardrails if isinstance(g, ScannerGuardrail)]
        self._quick = {
            where: together([g.detector for g in built_in if where in g.settings.on])
            for where in ("arguments", "answers")
        }
        """Per place, one search for everything the built-in scanners look for there: when it finds nothing (the
        common case), they are not asked (`detectors.together`)."""

    def __bool__(self) -> bool:
        return bool(self._guardrails)

    def note(self, text: str) -> str | None:
        """A text an MCP server sends the client while a call runs (a progress message, a log entry), as the client
        may see it: the built-in scanners of answers that redact redact it, and one that blocks withholds it (None).
        What they find there is not reported: the call's answer is, when it comes."""
        shown: str | None = text
        for guardrail in self._guardrails:
            if isinstance(guardrail, ScannerGuardrail) and shown is not None:
                shown = guardrail.note(shown)
        return shown

    def named(self, subject: str) -> str:
        """`subject` (a resource's URI, a prompt's name) as the observers may hear it: with what the built-in
        scanners of answers find in it redacted (a URI may hold the very value its read was withheld for)."""
        quick = self._quick["answers"]
        if quick is None or not quick.found(subject):
            return subject
        return replaced(subject, quick.matches(subject), redaction_label)

    def before(self, call: GuardedCall) -> Before:
        arguments = call.arguments
        heard: list[Heard] = []
        quick, clean = self._quick["arguments"], None
        for guardrail in self._guardrails:
            if isinstance(guardrail, ScannerGuardrail) and quick is not None:
                if clean is None:
                    clean = not arguments or not quick.found(orjson.dumps(arguments))
                if clean:
                    continue
            asked = call if arguments is call.arguments else replace(call, arguments=arguments)
            verdict = _verdict(guardrail, partial(guardrail.before_call, asked))
            _tell(heard, guardrail, "arguments", verdict, verdict.arguments is not None)
            if verdict.block is not None:
                return Before(arguments, verdict.block, tuple(heard))
            if verdict.arguments is not None:
                arguments, clean = verdict.arguments, None  # searched again if need be
        return Before(arguments, None, tuple(heard))

    def after(self, call: GuardedCall, result: CallToolResult, place: str = "answers") -> After:
        """May run off the event loop (a large answer): it only gathers what the observers are told after.
        `place`: what the answer is, as the observers hear it (answers of a call, or a resource's or a prompt's,
        `gateway/guarded_offerings.py`); the guardrails that scan answers scan them all."""
        heard: list[Heard] = []
        quick, clean = self._quick["answers"], None
        for guardrail in self._guardrails:
            if isinstance(guardrail, ScannerGuardrail) and quick is not None:
                if clean is None:
                    texts = answer_texts(call, result)
                    clean = texts is not None and not any(quick.found(text) for text in texts)
                if clean:
                    continue
            verdict = _verdict(guardrail, partial(guardrail.after_call, call, result))
            _tell(heard, guardrail, place, verdict, verdict.result is not None)
            if verdict.block is not None:
                return After(result, verdict.block, tuple(heard))
            if verdict.result is not None:
                result, clean = verdict.result, None
        return After(result, None, tuple(heard))


def _verdict(guardrail: Guardrail, hook: Callable[[], object]) -> Verdict:
    """What `hook` (one of the guardrail's) answers; one that fails, or answers something other than a verdict,
    blocks: a guard that fails lets nothing through."""
    try:
        verdict = hook()
    except Exception:
        log.exception("guardrail %s failed", guardrail.name)
        return Verdict(block=f"The guardrail {guardrail.name!r} failed: the call is refused")
    if not isinstance(verdict, Verdict):
        return Verdict(block=f"The guardrail {guardrail.name!r} answered something other than a verdict")
    if (verdict.arguments is not None and not isinstance(verdict.arguments, Mapping)) or (
        verdict.result is not None and not isinstance(verdict.result, CallToolResult)
    ):  # what it would put in their place is no arguments, or no result
        return Verdict(block=f"The guardrail {guardrail.name!r} answered arguments or a result of the wrong kind")
    return verdict


def _tell(heard: list[Heard], guardrail: Guardrail, where: str, verdict: Verdict, replaced: bool) -> None:
    """Keep for the observers what the guardrail found and did, if anything."""
    if verdict.findings or verdict.block is not None:
        outcome = "blocked" if verdict.block is not None else "redacted" if replaced else "reported"
        heard.append(Heard(guardrail.name, where, outcome, verdict.findings))
