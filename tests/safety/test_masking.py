"""SecretMask: every spelling of a secret an answer may hold is replaced; short values and clean answers untouched."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import orjson
import pytest

from apimcp.safety.masking import MIN_MASKED_CHARS, NO_MASK, SecretMask

SECRET = 'tok/en+"é ü\\9'


@pytest.mark.parametrize(
    "spelling",
    [
        SECRET,
        json.dumps(SECRET)[1:-1],  # ASCII-only JSON: \u00e9
        json.dumps(SECRET)[1:-1].replace("00e9", "00E9").replace("00fc", "00FC"),  # upper-case hex escapes
        json.dumps(SECRET, ensure_ascii=False)[1:-1],
        orjson.dumps(SECRET).decode()[1:-1],
        json.dumps(SECRET)[1:-1].replace("/", "\\/"),  # PHP and others escape '/'
        quote(SECRET, safe=""),
        quote(SECRET, safe="").lower(),
        quote_plus(SECRET, safe=""),
    ],
)
def test_each_spelling_of_a_secret_is_masked(spelling: str) -> None:
    mask = SecretMask([SECRET])
    answer = f'{{"echo": "Bearer {spelling}", "next": 1}}'
    assert mask.mask_text(answer) == '{"echo": "Bearer ***", "next": 1}'
    assert mask.mask_bytes(answer.encode()) == b'{"echo": "Bearer ***", "next": 1}'


HTML_SAFE = "s3cr3t&token<value>/42"


@pytest.mark.parametrize(
    "spelling",
    [
        "s3cr3t\\u0026token\\u003cvalue\\u003e/42",  # Go's encoding/json (and Rails): &, <, > escaped
        "s3cr3t\\u0026token\\u003Cvalue\\u003E/42",
        "s3cr3t\\u0026token\\u003cvalue\\u003e\\/42",
    ],
)
def test_a_secret_escaped_as_html_safe_json_is_masked(spelling: str) -> None:
    """The finding: a Go or Rails backend echoing the plan's secret wrote `&` as `\\u0026`; the mask, which reads
    the raw bytes before parsing, missed it, and the parsed answer held the secret in clear."""
    answer = f'{{"echo": "Bearer {spelling}"}}'
    assert json.loads(answer)["echo"] == f"Bearer {HTML_SAFE}"  # the spelling is the secret
    assert SecretMask([HTML_SAFE]).mask_text(answer) == '{"echo": "Bearer ***"}'


def test_a_masked_json_answer_is_still_json() -> None:
    mask = SecretMask(["s3cr3t-value"])
    masked = mask.mask_bytes(orjson.dumps({"headers": {"Authorization": "Bearer s3cr3t-value", "X": ["s3cr3t-value"]}}))
    assert orjson.loads(masked) == {"headers": {"Authorization": "Bearer ***", "X": ["***"]}}


def test_values_shorter_than_the_minimum_are_not_searched() -> None:
    short = "a" * (MIN_MASKED_CHARS - 1)
    mask = SecretMask([short, "x"])
    assert not mask
    assert len(mask) == 0
    assert mask.mask_text(f"{short} and a banana") == f"{short} and a banana"
    assert SecretMask(["a" * MIN_MASKED_CHARS]).mask_text("a" * MIN_MASKED_CHARS) == "***"


def test_a_value_inside_another_leaves_no_tail() -> None:
    basic = base64.b64encode(b"ada:lovelace-1815").decode()
    mask = SecretMask(["lovelace-1815", basic, "lovelace"])
    assert mask.mask_text(f"Basic {basic} / lovelace-1815") == "Basic *** / ***"


def test_masks_combine_and_never_show_their_values() -> None:
    first, second = SecretMask(["first-secret"]), SecretMask(["second-secret"])
    both = first + second
    assert both.mask_text("first-secret second-secret") == "*** ***"
    assert first + NO_MASK is first and NO_MASK + second is second
    assert "secret" not in repr(both) and repr(both) == "SecretMask(2 values)"


def test_an_answer_without_secrets_is_returned_as_is() -> None:
    """Not copied, not rebuilt: a few `in` tests over the bytes are all it costs (bench/ has the figures)."""
    mask = SecretMask([f"secret-number-{i}" for i in range(5)])
    body = orjson.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(20_000)])
    assert mask.mask_bytes(body) is body
