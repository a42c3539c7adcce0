"""The built-in guardrails: a detector (`detectors.py`) applied to a call's arguments and its answer, with the
plan's action: `report` (the call goes on; the audit trail and the metrics hear what was found), `redact` (each
match is replaced by `[redacted:kind]`, hidden characters removed) or `block` (a tool error names what was
found, never the value).

What is searched: the arguments as JSON, every text block of the answer and its structured content as JSON
(`answer_texts`). A search that finds nothing is the whole cost; redacting walks the values only when something
was found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from apimcp.guardrails.detectors import Detector, Match
from apimcp.guardrails.hooks import PASS, Finding, GuardedCall, GuardrailSettings, Verdict
from apimcp.protocol.models import CallToolResult, RawJson, TextContent

_MAX_DEPTH = 64


class ScannerGuardrail:
    """A detector as a guardrail (the hooks' interface)."""

    __slots__ = ("detector", "name", "settings")

    def __init__(self, detector: Detector, settings: GuardrailSettings) -> None:
        self.name = settings.use
        self.detector = detector
        self.settings = settings

    def before_call(self, call: GuardedCall) -> Verdict:
        if "arguments" not in self.settings.on or not call.arguments:
            return PASS
        if not self.detector.found(orjson.dumps(call.arguments)):
            return PASS
        counts: Counter[str] = Counter()
        redacted = _values(call.arguments, self.detector, counts, self.settings.action == "redact", 0)
        if not counts:  # the search's candidates did not pass their checks
            return PASS
        findings = _findings(counts)
        if self.settings.action == "block":
            return Verdict(findings, block=f"The arguments of {call.tool} hold {_said(findings)}: the call is refused "
                                            f"by the guardrail {self.name!r}")  # fmt: skip
        if self.settings.action == "redact":
            return Verdict(findings, arguments=redacted)
        return Verdict(findings)

    def after_call(self, call: GuardedCall, result: CallToolResult) -> Verdict:
        if "answers" not in self.settings.on:
            return PASS
        if not any(self.detector.found(text) for text in answer_texts(call, result)):
            return PASS
        structured = result.structured_content
        counts: Counter[str] = Counter()
        redact = self.settings.action == "redact"
        content = tuple(
            replace(block, text=_text(block.text, self.detector, counts, redact))
            if isinstance(block, TextContent) else block
            for block in result.content
        )  # fmt: skip
        if isinstance(structured, RawJson):
            structured = orjson.loads(structured.data)
        kept: Counter[str] = Counter()  # what the text blocks said is what counts; the structured twin is redacted
        if isinstance(structured, dict | list):
            structured = _values(structured, self.detector, kept, redact, 0)
        if not counts:
            counts = kept
        if not counts:
            return PASS
        findings = _findings(counts)
        if self.settings.action == "block":
            return Verdict(findings, block=f"The answer of {call.tool} was withheld: it holds {_said(findings)} "
                                            f"(guardrail {self.name!r})")  # fmt: skip
        if redact:
            return Verdict(findings, result=replace(result, content=content, structured_content=structured))
        return Verdict(findings)


def answer_texts(call: GuardedCall, result: CallToolResult) -> list[str | bytes]:
    """What is searched of an answer: its text blocks, and its structured content as JSON unless the first text
    block mirrors it without escapes (a JSON string with no backslash holds exactly what it decodes to)."""
    texts: list[str | bytes] = [block.text for block in result.content if isinstance(block, TextContent)]
    structured = result.structured_content
    if call.mirrored and texts and "\\" not in texts[0]:
        return texts
    if isinstance(structured, RawJson):
        texts.append(structured.data)
    elif isinstance(structured, dict | list):
        texts.append(orjson.dumps(structured))
    return texts


def _findings(counts: Counter[str]) -> tuple[Finding, ...]:
    return tuple(Finding(kind, count) for kind, count in sorted(counts.items()))


def _said(findings: tuple[Finding, ...]) -> str:
    return ", ".join(f"{f.kind.replace('_', ' ')}" + (f" (x{f.count})" if f.count > 1 else "") for f in findings)


def _text(text: str, detector: Detector, counts: Counter[str], redact: bool) -> str:
    if not detector.found(text):
        return text
    matches = detector.matches(text)
    counts.update(match.kind for match in matches)
    return _redacted(text, matches) if redact and matches else text


def _redacted(text: str, matches: list[Match]) -> str:
    parts, last = [], 0
    for match in matches:
        parts.append(text[last : match.start])
        if match.kind != "hidden_characters":
            parts.append(f"[redacted:{match.kind}]")
        last = match.end
    parts.append(text[last:])
    return "".join(parts)


def _values(value: Any, detector: Detector, counts: Counter[str], redact: bool, depth: int) -> Any:
    """`value` with its strings (and keys) searched, and redacted when `redact`."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        return _text(value, detector, counts, redact)
    if isinstance(value, Mapping):
        return {
            _text(key, detector, counts, redact) if isinstance(key, str) else key:
            _values(item, detector, counts, redact, depth + 1)
            for key, item in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_values(item, detector, counts, redact, depth + 1) for item in value]
    return value
