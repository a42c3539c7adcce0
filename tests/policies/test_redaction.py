"""What redact rules hide: every value of the keys they name, in structured content and in JSON text, and in
other text where it is written as JSON writes it; output schemas admit the replacement."""

from __future__ import annotations

import json

import jsonschema
import pytest

from apimcp.backends.base import JsonBody
from apimcp.gateway.results import json_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.policies.redaction import REDACTED, redact_result, widened_schema
from apimcp.protocol.models import CallToolResult, EmbeddedResource, RawJson, TextContent, TextResourceContents

ANSWER = {"name": "Ada", "email": "ada@example.com", "friends": [{"email": "bob@example.com", "age": 3}]}
HIDDEN = {"name": "Ada", "email": REDACTED, "friends": [{"email": REDACTED, "age": REDACTED}]}


def test_structured_content_and_its_json_text_hide_the_fields_at_any_depth() -> None:
    result = CallToolResult(content=(TextContent(text=json.dumps(ANSWER)),), structured_content=ANSWER)
    redacted = redact_result(result, ["email", "age"])
    assert redacted.structured_content == HIDDEN
    assert json.loads(redacted.content[0].text) == HIDDEN  # type: ignore[union-attr]
    assert ANSWER["email"] == "ada@example.com"  # the answer itself is not changed


def test_a_large_answer_s_raw_json_is_redacted_too() -> None:
    result = CallToolResult(content=(), structured_content=RawJson(data=json.dumps(ANSWER).encode()))
    assert redact_result(result, ["email", "age"]).structured_content == HIDDEN


def test_text_that_is_not_json_has_the_values_it_writes_as_json_replaced() -> None:
    text = 'The backend answered 500. Its answer: {"email": "a@b.c", "phone":"+33 1", "n": 3, "ok": true, "x": 1'
    result = CallToolResult(content=(TextContent(text=text),), is_error=True)
    redacted = redact_result(result, ["email", "phone", "n", "ok"]).content[0].text  # type: ignore[union-attr]
    assert redacted == (
        'The backend answered 500. Its answer: {"email": "[redacted]", "phone":"[redacted]", "n": "[redacted]", '
        '"ok": "[redacted]", "x": 1'
    )


def test_an_output_schema_admits_the_replacement_and_still_checks_the_rest() -> None:
    schema = {
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email"},
            "friends": {"type": "array", "items": {"type": "object", "properties": {"age": {"type": "integer"}}}},
        },
    }
    widened = widened_schema(schema, ["email", "age"])
    jsonschema.validate(HIDDEN, widened)
    jsonschema.validate(ANSWER, widened)
    try:
        jsonschema.validate({"friends": [{"age": "old"}]}, widened)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a value that is neither the type nor the replacement passed")
    assert widened_schema(None, ["email"]) is None and widened_schema(schema, []) is schema


def test_an_embedded_text_resource_is_redacted_too() -> None:
    """An MCP server's answer may carry its data as an embedded resource rather than a text block."""
    embedded = EmbeddedResource(resource=TextResourceContents(uri="mem://ada", text=json.dumps(ANSWER)))
    redacted = redact_result(CallToolResult(content=(embedded,)), ["email", "age"])
    block = redacted.content[0]
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents)
    assert json.loads(block.resource.text) == HIDDEN and block.resource.uri == "mem://ada"


def test_an_answer_that_fails_its_schema_never_quotes_the_values_redacted() -> None:
    """The problems an output schema finds name the place and the keyword, not the value: the error result would
    otherwise carry a redacted value in its message."""
    answer = {"name": "Ada", "sides": "three", "email": "ada@example.com"}
    schema = {"type": "object", "properties": {"sides": {"type": "integer"}, "email": {"enum": ["x@example.com"]}}}
    problems = ArgumentValidator(schema).problems(answer, quoting=False)
    result = json_result(JsonBody(answer, json.dumps(answer)), problems)
    text = redact_result(result, ["sides", "email"]).content[0].text  # type: ignore[union-attr]
    assert result.is_error and "three" not in text and "ada@example.com" not in text
    assert 'sides: does not match the schema\'s "type"' in text and 'email: does not match the schema\'s "enum"' in text


def test_keys_a_map_s_schema_describes_admit_the_replacement_too() -> None:
    """The finding: only named `properties` were widened, so a key described by `additionalProperties` or
    `patternProperties` (a map of contacts) was redacted into an answer its own output schema refused."""
    schema = {
        "type": "object",
        "properties": {
            "contacts": {"type": "object", "additionalProperties": {"type": "object"}},
            "codes": {"type": "object", "patternProperties": {"^e": {"type": "integer"}}},
        },
    }
    answer = {"contacts": {"email": {"work": "a@b.c"}}, "codes": {"email": 3}}
    result = redact_result(CallToolResult(content=(), structured_content=answer), ["email"])
    assert result.structured_content == {"contacts": {"email": REDACTED}, "codes": {"email": REDACTED}}
    widened = widened_schema(schema, ["email"])
    jsonschema.validate(result.structured_content, widened)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"contacts": {"email": "not an object"}}, widened)


def test_a_key_json_writes_escaped_in_a_text_is_redacted_too() -> None:
    """The finding: a backend writing JSON as Python's json does (`"pr\\u00e9nom"`) had the value of `prénom` left
    in a text block that is not JSON (an error quoting the answer), since the key was looked for as written."""
    text = 'Bad request: {"pr\\u00e9nom": "Jean", "\\u0065mail": "a@b.c", "\\ud83d\\ude00": 1, "other": 2}'
    result = redact_result(CallToolResult(content=(TextContent(text=text),)), ["prénom", "email", "😀"])
    assert result.content[0].text == (  # type: ignore[union-attr]
        'Bad request: {"pr\\u00e9nom": "[redacted]", "\\u0065mail": "[redacted]", "\\ud83d\\ude00": "[redacted]", '
        '"other": 2}'
    )
