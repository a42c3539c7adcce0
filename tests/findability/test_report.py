"""Discovery reports on small tool sets: the queries made for each tool, the figures, the tools found least and the
pairs confused, and what each listing mode costs; ranked by words alone here (a lexical index), so every figure is
known in advance."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.findability import report as report_module
from apimcp.findability.probes import paraphrase, probes
from apimcp.findability.report import ReportError, discovery_report
from apimcp.findability.scores import Searched, confusions, figures, hardest
from apimcp.findability.tokens import CHUNK_CHARS, counter
from apimcp.protocol.models import Tool
from apimcp.toolsearch.index import ToolIndex


def _tool(name: str, title: str | None = None, description: str | None = None) -> Tool:
    return Tool(name=name, title=title, description=description, input_schema={"type": "object"})


@pytest.mark.parametrize(
    ("signature", "said"),
    [
        ("GET /repos/{owner}/{repo}/pulls", "list the pulls of a repo"),
        ("GET /users/{username}", "show one user"),
        ("POST /repos/{owner}/{repo}/issues", "add an issue of a repo"),
        ("POST /repos/{owner}/{repo}/pulls/{pull_number}/merge", "merge a pull"),
        ("PATCH /api/v2/issues/{issueId}/assignee", "change the assignee of an issue"),
        ("DELETE /pets/{petId}", "remove the pet"),
        ("GET /rest/api/3/myself", "list the myself"),
        ("GET /{id}", ""),
        ("mutation addStar", "change: add star"),
        ("routeguide.RouteGuide/GetFeature", "call: get feature"),
        (None, ""),
    ],
)
def test_a_paraphrase_says_what_an_operation_does_from_its_signature(signature: str | None, said: str) -> None:
    assert paraphrase(signature) == said


def test_each_kind_of_query_is_made_once_and_only_when_it_says_something_new() -> None:
    tool = _tool("pulls_list", "List pull requests", "List pull requests\n\nLists the open ones. Then more.")
    index = ToolIndex([tool, _tool("issues_list", "List issues")])
    made = [(p.kind, p.text) for p in probes(tool, index.rarity, "GET /repos/{owner}/{repo}/pulls")]
    assert made == [
        ("title", "List pull requests"),
        ("description", "Lists the open ones."),
        ("name", "pulls list"),
        ("paraphrase", "list the pulls of a repo"),
        ("keywords", "pull requests"),
    ]
    bare = [(p.kind, p.text) for p in probes(_tool("ping"), index.rarity)]
    assert bare == [("name", "ping")]  # no title, description or signature; its one word is its name's


def test_figures_count_ranks_in_the_first_ten() -> None:
    searched = [Searched("a", "title", "q", rank, "x") for rank in (1, 2, 5, 6, None)]
    assert figures(searched) == {
        "queries": 5,
        "recall@1": 0.2,
        "recall@5": 0.6,
        "mrr": round((1 + 1 / 2 + 1 / 5 + 1 / 6) / 5, 3),
    }
    assert figures([]) == {"queries": 0, "recall@1": 0.0, "recall@5": 0.0, "mrr": 0.0}


def test_the_tools_found_least_and_the_pairs_confused_are_ranked_by_how_bad() -> None:
    searched = [
        Searched("get_gist", "title", "Get a gist", 3, "delete_gist"),
        Searched("get_gist", "name", "get gist", 1, "get_gist"),
        Searched("star_gist", "title", "Star a gist", 2, "check_star"),
        Searched("star_gist", "name", "star gist", 2, "check_star"),
        Searched("list_gists", "title", "List gists", 1, "list_gists"),
    ]
    worst = hardest(searched, 5)
    assert [entry["tool"] for entry in worst] == ["star_gist", "get_gist"]  # list_gists is always first: not listed
    assert worst[1]["misses"] == [{"kind": "title", "query": "Get a gist", "rank": 3, "first": "delete_gist"}]
    assert confusions(searched, 5) == [
        {"tool": "star_gist", "found_instead": "check_star", "times": 2, "example": "Star a gist"},
        {"tool": "get_gist", "found_instead": "delete_gist", "times": 1, "example": "Get a gist"},
    ]


@pytest.fixture
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words alone, whatever is installed: figures a test can know."""
    from apimcp.toolsearch import discovery

    monkeypatch.setattr(discovery, "build_index", ToolIndex)


def _tools() -> list[Tool]:
    return [
        _tool("get_pet", "Get a pet", "Returns one pet by its id."),
        _tool("fetch_pet", "Get a pet", "The same pet again, in another way."),  # a title another tool has too
        _tool("delete_pet", "Delete a pet"),
        _tool("list_orders", "List the orders", "Every order of the store."),
    ]


def test_a_report_finds_the_tools_that_share_a_title_and_says_what_reading_them_costs(lexical: None) -> None:
    paths = {"get_pet": ["GET /pets/{petId}"], "fetch_pet": ["GET /pets/{petId}/again"],
             "delete_pet": ["DELETE /pets/{petId}"], "list_orders": ["GET /store/orders"]}  # fmt: skip
    made: dict[str, Any] = discovery_report(_tools(), paths, counter())
    assert made["tools"] == 4 and made["ranking"] == "lexical"
    assert made["by_kind"]["title"]["queries"] == 4
    assert made["by_kind"]["title"]["recall@1"] < 1.0  # "Get a pet" finds one of the two first
    confused = {(pair["tool"], pair["found_instead"]) for pair in made["confused"]}
    assert confused & {("get_pet", "fetch_pet"), ("fetch_pet", "get_pet")}
    assert {entry["tool"] for entry in made["hardest"]} & {"get_pet", "fetch_pet"}
    assert "list_orders" not in {entry["tool"] for entry in made["hardest"]}
    context = made["context"]
    every, search, code = context["every_tool"], context["search"], context["code_mode"]
    assert every["listing"]["bytes"] > 0 and search["listing"]["bytes"] > 0 and code["listing"]["bytes"] > 0
    assert code["describe_one_tool"]["bytes"] != search["describe_one_tool"]["bytes"]  # TypeScript, not JSON Schema
    if made["tokens"] is not None:  # with the tokens extra (scripts/setup.sh installs it)
        assert made["tokens"] == "o200k_base"
        assert 0 < every["listing"]["tokens"] < every["listing"]["bytes"]


def test_a_report_is_bounded_in_tools(lexical: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_module, "MAX_TOOLS", 3)
    with pytest.raises(ReportError, match="a discovery report covers at most 3 tools, not 4"):
        discovery_report(_tools(), {})


def test_a_report_whose_time_runs_out_covers_the_tools_searched_so_far(lexical: None) -> None:
    """The finding: a report had no time budget, and one report at a time is made for every organization."""
    made = discovery_report(_tools(), {}, budget_seconds=0.0)  # runs out after the first tool
    assert made["tools"] == 4 and made["probed"] == 1
    assert {query["tool"] for query in made["hardest"]} <= {"get_pet"}
    assert discovery_report(_tools(), {})["probed"] == 4


def test_tokens_are_counted_on_texts_beyond_what_the_encoder_takes_at_once() -> None:
    tokens = counter()
    if tokens is None:
        pytest.skip("the tokens extra is not installed")
    unit = '{"a": "word word, word"}, '
    whole = unit * 15_000  # 390,000 characters: the encoder takes it at once; in 8 pieces, a token more a cut
    assert 0 <= tokens.count(whole) - len(bpe_encoding().encode(whole)) <= len(whole) // CHUNK_CHARS + 1
    text = unit * 100_000  # 2.6 MB: the encoder refuses a million characters
    assert abs(tokens.count(text) - 100_000 * 9) <= len(text) // CHUNK_CHARS + 1  # "}, {" is one token: 9 a unit


def bpe_encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("o200k_base")
