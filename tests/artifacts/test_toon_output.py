"""TOON text bounded against the JSON: a deep answer no longer grows with its depth, ordinary ones are unchanged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import toon_format
from hypothesis import given, settings
from hypothesis import strategies as st

from apimcp.artifacts import toon_output
from apimcp.artifacts.toon_output import ALLOWANCE, MAX_GROWTH, ToonTooLarge, toon_text
from tests.artifacts.test_output_filters import DOC, deep_list


def deep_object(members: int = 3_000, depth: int = 200) -> Any:
    value: Any = {f"m{n}": n for n in range(members)}
    for _ in range(depth):
        value = {"a": value}
    return value


def ragged(rows: int = 2_000) -> Any:
    """Objects with differing keys (no table), each holding a list: a line for each, 100 levels down."""
    value: Any = [{f"k{n}": [n]} if n % 2 else {f"j{n}": [n, {}]} for n in range(rows)]
    for _ in range(100):
        value = {"a": value, "b": 0}
    return value


AMPLIFYING = {"empty objects deep": deep_list(), "members deep": deep_object(), "ragged": ragged()}


def budget(value: Any) -> int:
    return max(MAX_GROWTH * len(orjson.dumps(value)), ALLOWANCE)


@pytest.mark.parametrize("shape", AMPLIFYING)
def test_text_that_would_pass_its_budget_is_refused_before_it_is_encoded(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = AMPLIFYING[shape]
    assert len(toon_format.encode(answer)) > 5 * budget(answer)  # what it made: 24 to 164 times the JSON

    def encoding(*args: object, **kwargs: object) -> str:
        raise AssertionError("the value was encoded")

    monkeypatch.setattr(toon_output.toon_format, "encode", encoding)
    with pytest.raises(ToonTooLarge, match="the TOON text would pass"):
        toon_text(answer)


def test_what_the_encoder_writes_is_checked_against_the_budget_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the encoder's layout ever differ from the count's."""
    monkeypatch.setattr(toon_output.toon_format, "encode", lambda value: "x" * (ALLOWANCE + 1))
    with pytest.raises(ToonTooLarge, match=f"the TOON text has {ALLOWANCE + 1} characters, more than {ALLOWANCE}"):
        toon_text({"a": 1})


def test_a_small_answer_may_grow_up_to_the_allowance() -> None:
    answer = deep_list(members=20, depth=100)  # 600 bytes of JSON, 25 KB of TOON
    assert toon_text(answer) == toon_format.encode(answer)


ORDINARY = [
    DOC,
    {"rows": [{"id": n, "name": f"row {n}", "owner": {"id": n, "login": "x"}, "tags": ["a", "b"]} for n in range(300)]},
    {"data": [{"id": n, **({"x": 1} if n % 2 else {"y": [1, {"z": 2}]})} for n in range(300)]},
    {"by_id": {str(n): {"name": f"n{n}", "size": n} for n in range(100)}},
    [[1, 2], [], {}, [{"a": 1}, {"a": 2}], "text", None],
    {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": [{"i": n, "j": [n]} for n in range(50)]}}}}}}}},
    {},
    [],
    "just text",
    42,
]


@pytest.mark.parametrize("answer", ORDINARY)
def test_ordinary_answers_make_the_toon_they_made(answer: Any) -> None:
    assert toon_text(answer) == toon_format.encode(answer)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=4), children, max_size=6),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_value_of_modest_depth_makes_the_toon_it_made(value: Any) -> None:
    assert toon_text(value) == toon_format.encode(value)


def line_starts(text: str) -> int:
    """What the count counts of a TOON text: each line's indentation, its item's "- " and its end."""
    total = 0
    for line in text.split("\n") if text else ():
        rest = line.lstrip(" ")
        total += len(line) - len(rest) + (2 if rest.startswith("- ") else 1 if rest == "-" else 0) + 1
    return total


DEEPER = st.recursive(
    st.none() | st.integers(0, 9) | st.sampled_from(["x", "a b", ""]),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.sampled_from("abcd"), children, max_size=4)
        | st.lists(st.fixed_dictionaries({"a": children, "b": st.integers(0, 9)}), min_size=1, max_size=4)
    ),  # tables
    max_leaves=80,
)


@settings(max_examples=500, deadline=None)
@given(DEEPER)
def test_the_count_follows_the_encoder_line_by_line(value: Any) -> None:
    lines = toon_output._Lines(0, 1 << 60)
    assert lines.fit(value)
    assert lines._size == line_starts(toon_format.encode(value))
