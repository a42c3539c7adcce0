"""The built-in guardrails: a detector (`detectors.py`) applied to a call's arguments and its answer, with the
plan's action: `report` (the call goes on; the audit trail and the metrics hear what was found), `redact` (each
match is replaced by `[redacted:kind]`, hidden characters removed) or `block` (a tool error names what was
found, never the value).

What is searched: the arguments as JSON, every text block of the answer and its structured content as JSON
(`answer_texts`). A search that finds nothing is the whole cost; redacting walks the values only when something
was found.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

import orjson

from apimcp.guardrails.detectors import Detector, Match, replaced
from apimcp.guardrails.hooks import PASS, Finding, GuardedCall, GuardrailSettings, Verdict
from apimcp.protocol.models import (
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    RawJson,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

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
        texts = answer_texts(call, result)
        if texts is not None and not any(self.detector.found(text) for text in texts):
            return PASS
        structured = result.structured_content
        counts: Counter[str] = Counter()
        redact = self.settings.action == "redact"
        content = tuple(_block(block, self.detector, counts, redact) for block in result.content)
        if isinstance(structured, RawJson):
            structured = orjson.loads(structured.data)
        kept: Counter[str] = Counter()  # what the text blocks said is what counts; the structured twin is redacted
        if isinstance(structured, dict | list):
            structured = _values(structured, self.detector, kept, redact, 0)
            if redact and kept and call.mirrored and content and isinstance(content[0], TextContent):
                # the text mirrors the structured content, perhaps with escapes (`\u0041`) its search could not
                # read through: written again from the redacted value, it holds nothing the value does not
                content = (replace(content[0], text=orjson.dumps(structured).decode()), *content[1:])
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

    def note(self, text: str) -> str | None:
        """`text` an MCP server sends the client while a call runs, as this guardrail lets it through: redacted
        (`redact`), withheld (None, `block`), or as it is (`report`: the call's answer is what gets reported)."""
        action = self.settings.action
        if "answers" not in self.settings.on or action == "report":
            return text
        counts: Counter[str] = Counter()
        shown = _text(text, self.detector, counts, action == "redact")
        return None if counts and action == "block" else shown


def answer_texts(call: GuardedCall, result: CallToolResult) -> list[str | bytes] | None:
    """What is searched of an answer: its text blocks (and embedded text resources, resource links' titles and
    descriptions), and its structured content as JSON unless the first text block mirrors it without escapes (a
    JSON string with no backslash holds exactly what it decodes to). None when that content cannot be written as
    JSON (an MCP server's, nested deeper than orjson writes): it must be walked (`_values`, `_too_deep`)."""
    texts: list[str | bytes] = [text for block in result.content for text in texts_of(block)]
    structured = result.structured_content
    if call.mirrored and texts and isinstance(result.content[0], TextContent) and "\\" not in texts[0]:
        return texts
    if isinstance(structured, RawJson):
        texts.append(structured.data)
    elif isinstance(structured, dict | list):
        try:
            texts.append(orjson.dumps(structured))
        except orjson.JSONEncodeError:
            return None
    return texts


def _findings(counts: Counter[str]) -> tuple[Finding, ...]:
    return tuple(Finding(kind, count) for kind, count in sorted(counts.items()))


def _said(findings: tuple[Finding, ...]) -> str:
    return ", ".join(f"{f.kind.replace('_', ' ')}" + (f" (x{f.count})" if f.count > 1 else "") for f in findings)


def texts_of(block: ContentBlock) -> tuple[str, ...]:
    if isinstance(block, TextContent):
        return (block.text,)
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        text = resource.text if isinstance(resource, TextResourceContents) else blob_text(resource)
        return (text,) if text is not None else ()
    if isinstance(block, ResourceLink):
        return tuple(text for text in (block.uri, block.name, block.title, block.description) if text)
    return ()


_TEXT_MEDIA: Final = ("text/", "application/json", "application/xml", "application/yaml", "application/x-yaml")


def blob_text(resource: BlobResourceContents) -> str | None:
    """A blob's bytes as text, when its media type says they are text (`text/*`, JSON, XML, YAML: a credentials file
    served as bytes) and they are UTF-8; None for anything else (an image, an archive: not searched)."""
    media = (resource.mime_type or "").lower()
    if not media.startswith(_TEXT_MEDIA) and not media.endswith(("+json", "+xml")):
        return None
    try:
        return base64.b64decode(resource.blob, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):  # binascii.Error is a ValueError
        return None


def _block(block: ContentBlock, detector: Detector, counts: Counter[str], redact: bool) -> ContentBlock:
    """`block` with its texts searched, and redacted when `redact`."""
    if isinstance(block, TextContent):
        return replace(block, text=_text(block.text, detector, counts, redact))
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
        return replace(block, resource=replace(block.resource, text=_text(block.resource.text, detector, counts,
                                                                              redact)))  # fmt: skip
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, BlobResourceContents):
        text = blob_text(block.resource)
        shown = _text(text, detector, counts, redact) if text is not None else text
        if shown is text or shown is None:
            return block
        return replace(block, resource=replace(block.resource, blob=base64.b64encode(shown.encode()).decode()))
    if isinstance(block, ResourceLink):
        uri = _text(block.uri, detector, counts, redact)
        name = _text(block.name, detector, counts, redact)
        title = _text(block.title, detector, counts, redact) if block.title else block.title
        description = _text(block.description, detector, counts, redact) if block.description else block.description
        return replace(block, uri=uri, name=name, title=title, description=description)
    return block


def _text(text: str, detector: Detector, counts: Counter[str], redact: bool) -> str:
    if not detector.found(text):
        return text
    matches = detector.matches(text)
    counts.update(match.kind for match in matches)
    return _redacted(text, matches) if redact and matches else text


def _redacted(text: str, matches: list[Match]) -> str:
    return replaced(text, matches, redaction_label)


def redaction_label(match: Match) -> str:
    """What a match becomes: hidden characters are removed, anything else says what it was."""
    return "" if match.kind == "hidden_characters" else f"[redacted:{match.kind}]"


def _values(value: Any, detector: Detector, counts: Counter[str], redact: bool, depth: int) -> Any:
    """`value` with its strings (and keys) and numbers searched, and redacted when `redact` (a number that holds
    something becomes the string that says so)."""
    if depth > _MAX_DEPTH:
        return _too_deep(value, detector, counts, redact)
    if isinstance(value, str):
        return _text(value, detector, counts, redact)
    if isinstance(value, int | float) and not isinstance(value, bool):  # a card number written as a number
        text = str(value)
        shown = _text(text, detector, counts, redact)
        return value if shown is text else shown
    if isinstance(value, Mapping):
        return {
            _text(key, detector, counts, redact) if isinstance(key, str) else key:
            _values(item, detector, counts, redact, depth + 1)
            for key, item in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_values(item, detector, counts, redact, depth + 1) for item in value]
    return value


def _too_deep(value: Any, detector: Detector, counts: Counter[str], redact: bool) -> Any:
    """A value nested deeper than the walk goes: searched whole as JSON, and replaced whole when something is found
    and `redact` (too deep to walk is too deep to show). One that cannot even be written as JSON counts as found."""
    try:
        text = orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        counts["nested_too_deep"] += 1
        return "[redacted:nested_too_deep]" if redact else value
    matches = detector.matches(text) if detector.found(text) else []
    counts.update(match.kind for match in matches)
    return "[redacted:nested_too_deep]" if redact and matches else value
