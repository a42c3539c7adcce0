"""The question a person is asked to approve a call: every argument shown, nothing cut, nothing hidden from sight;
a call whose arguments are too long to show whole is not asked about."""

from __future__ import annotations

from typing import Any, cast

import pytest

from apimcp.policies.approval import MAX_SHOWN, ask, question, shown_arguments
from apimcp.protocol import RequestContext

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ({"bookId": 3}, "bookId=3"),
        ({"note": "two words", "tags": ["a"]}, 'note="two words", tags=["a"]'),
        ({"line\nbreak": "x\ny"}, '"line\\nbreak"="x\\ny"'),  # a name that is not plain is quoted as JSON
        ({"name": "\x1b[8m"}, 'name="\\u001b[8m"'),
        ({"note": "pay\u202eredoc.exe", "zero\u200bwidth": 1}, 'note="pay\\u202eredoc.exe", "zero\\u200bwidth"=1'),
        ({"x": "\U000e0041"}, 'x="\\U000e0041"'),
    ],
)
def test_arguments_are_shown_whole_and_visibly(arguments: dict[str, Any], shown: str) -> None:
    assert shown_arguments(arguments) == shown


def test_the_question_names_the_tool_and_ends_with_the_rules_message() -> None:
    assert question("delete_book", "bookId=3", "No undo.") == "Approve delete_book with bookId=3? No undo."
    assert question("ping", "") == "Approve ping?"


async def test_arguments_too_long_to_show_are_not_asked_about() -> None:
    class Unused:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the client was asked ({name}) about a question it could not read whole")

    ctx = cast(RequestContext, Unused())
    answer = await ask(ctx, "replace_item", {"name": "x" * MAX_SHOWN, "itemId": "the-crown-jewels"})
    assert answer.outcome == "unavailable"
    assert answer.refusal is not None and answer.refusal.startswith(
        "Calling replace_item needs a person's approval, and its arguments are too long to be shown in full ("
    )
