"""Prompts from artifact files: listing, rendering, argument checks and completion."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.artifacts.prompts import MAX_COMPLETIONS, PromptCatalog, complete_values, placeholder_names
from apimcp.protocol.errors import INVALID_PARAMS, McpError
from apimcp.protocol.models import TextContent

PROMPTS: dict[str, dict[str, Any]] = {
    "summarize_user": {
        "title": "Summarize a user",
        "description": "A summary of a GitHub user",
        "arguments": [
            {
                "name": "login",
                "title": "Login",
                "description": "The user's login",
                "required": True,
                "values": ["octocat", "torvalds", "Octavia"],
            },
            {"name": "style", "required": False},
        ],
        "result": "Summarize the GitHub user ${login} in a ${style} style.",
    },
    "plain": {"result": "No arguments, ${undeclared} stays as written."},
}


@pytest.fixture
def catalog() -> PromptCatalog:
    return PromptCatalog(PROMPTS)


def _text(catalog: PromptCatalog, name: str, arguments: dict[str, str]) -> str:
    result = catalog.get(name, arguments)
    assert len(result.messages) == 1
    message = result.messages[0]
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    return message.content.text


def test_the_page_lists_prompts_in_declaration_order_with_their_arguments(catalog: PromptCatalog) -> None:
    summarize, plain = catalog.page.items
    assert [summarize.name, plain.name] == ["summarize_user", "plain"]
    assert (summarize.title, summarize.description) == ("Summarize a user", "A summary of a GitHub user")
    login, style = summarize.arguments
    assert (login.name, login.title, login.description, login.required) == ("login", "Login", "The user's login", True)
    assert (style.name, style.title, style.description, style.required) == ("style", None, None, False)
    assert (plain.title, plain.description, plain.arguments) == (None, None, ())
    assert catalog.page.next_cursor is None
    assert catalog.has_prompts
    assert not PromptCatalog({}).has_prompts


def test_get_substitutes_the_arguments_into_one_user_message(catalog: PromptCatalog) -> None:
    text = _text(catalog, "summarize_user", {"login": "octocat", "style": "formal"})
    assert text == "Summarize the GitHub user octocat in a formal style."
    assert catalog.get("summarize_user", {"login": "x"}).description == "A summary of a GitHub user"


def test_a_missing_optional_argument_renders_as_an_empty_string(catalog: PromptCatalog) -> None:
    assert _text(catalog, "summarize_user", {"login": "octocat"}) == "Summarize the GitHub user octocat in a  style."


def test_substitution_is_one_pass_so_a_value_is_never_substituted_again(catalog: PromptCatalog) -> None:
    text = _text(catalog, "summarize_user", {"login": "${style}", "style": "${login}"})
    assert text == "Summarize the GitHub user ${style} in a ${login} style."


def test_undeclared_arguments_are_ignored_and_undeclared_placeholders_stay(catalog: PromptCatalog) -> None:
    assert _text(catalog, "plain", {"undeclared": "injected"}) == "No arguments, ${undeclared} stays as written."
    assert _text(catalog, "summarize_user", {"login": "a", "extra": "b"}).startswith("Summarize the GitHub user a ")


def test_placeholders_may_have_spaces_inside_the_braces() -> None:
    catalog = PromptCatalog({"p": {"arguments": [{"name": "a"}], "result": "<${ a }>"}})
    assert _text(catalog, "p", {"a": "x"}) == "<x>"


def test_a_missing_required_argument_is_invalid_params_naming_it(catalog: PromptCatalog) -> None:
    with pytest.raises(McpError) as raised:
        catalog.get("summarize_user", {"style": "formal"})
    assert raised.value.code == INVALID_PARAMS
    assert "login" in raised.value.message
    assert raised.value.data == {"prompt": "summarize_user", "argument": "login"}


def test_an_empty_string_counts_as_given(catalog: PromptCatalog) -> None:
    assert _text(catalog, "summarize_user", {"login": ""}) == "Summarize the GitHub user  in a  style."


def test_an_unknown_prompt_is_invalid_params_naming_it(catalog: PromptCatalog) -> None:
    with pytest.raises(McpError) as raised:
        catalog.get("nope", {})
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == "Unknown prompt: nope"
    with pytest.raises(McpError, match="Unknown prompt: nope") as completing:
        catalog.complete("nope", "login", "")
    assert completing.value.code == INVALID_PARAMS


def test_completion_offers_declared_values_by_case_insensitive_prefix(catalog: PromptCatalog) -> None:
    completion = catalog.complete("summarize_user", "login", "OCT")
    assert list(completion.values) == ["octocat", "Octavia"]
    assert (completion.total, completion.has_more) == (2, False)
    assert list(catalog.complete("summarize_user", "login", "").values) == ["octocat", "torvalds", "Octavia"]
    assert list(catalog.complete("summarize_user", "login", "zz").values) == []


def test_an_argument_without_values_completes_to_nothing(catalog: PromptCatalog) -> None:
    for argument in ("style", "not_an_argument"):
        completion = catalog.complete("summarize_user", argument, "f")
        assert (list(completion.values), completion.total, completion.has_more) == ([], 0, False)


def test_completion_stops_at_one_hundred_values_and_says_so() -> None:
    candidates = [f"v{i:03}" for i in range(250)] + ["other"]
    catalog = PromptCatalog({"p": {"arguments": [{"name": "a", "values": candidates}], "result": "${a}"}})
    completion = catalog.complete("p", "a", "v")
    assert len(completion.values) == MAX_COMPLETIONS == 100
    assert completion.values[0] == "v000"
    assert (completion.total, completion.has_more) == (250, True)
    exactly = complete_values([f"x{i}" for i in range(100)], "x")
    assert (len(exactly.values), exactly.total, exactly.has_more) == (100, 100, False)


def test_non_string_values_from_yaml_are_offered_as_strings() -> None:
    catalog = PromptCatalog({"p": {"arguments": [{"name": "n", "values": [10, 2, 100]}], "result": "${n}"}})
    assert list(catalog.complete("p", "n", "1").values) == ["10", "100"]


def test_placeholder_names_are_what_rendering_substitutes() -> None:
    assert placeholder_names("Hi ${a}, ${ b }, $c, ${}, ${a}") == ("a", "b", "a")
