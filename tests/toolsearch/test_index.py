"""Ranking tools for a query: words of identifiers, names and paths counting more than prose, scopes
respected, bounds held."""

from __future__ import annotations

from apimcp.protocol.models import Tool
from apimcp.toolsearch.index import MAX_QUERY_WORDS, ToolIndex
from apimcp.toolsearch.words import words

SCHEMA = {"type": "object", "properties": {"owner": {}, "repo": {}, "pull_number": {}}}
TOOLS = [
    Tool(name="pulls_merge", description="Merge a pull request into the base branch.", input_schema=SCHEMA),
    Tool(name="pulls_list", description="Lists pull requests in a repository.", input_schema=SCHEMA),
    Tool(name="repos_get", description="The repository, with its settings.", input_schema=SCHEMA),
    Tool(name="issues_create", description="Any user with pull access can create an issue.", input_schema=SCHEMA),
    Tool(name="repos_delete", description="Deleting a repository requires admin access.", input_schema=SCHEMA),
]
PATHS = {"pulls_merge": ["PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge"]}


def test_words_split_identifiers_and_fold_forms() -> None:
    assert words("listForRepo") == ["list", "repo"]  # "for" is a stopword
    assert words("repos_get_branch-protection") == ["repo", "get", "branch", "protection"]
    assert words("Repositories") == ["repo"] and words("remove the PRs") == ["delete", "pull"]
    assert words("HTTPServer404") == ["http", "server", "404"]


def test_words_of_any_script_are_whole_words() -> None:
    """The finding: only ASCII letters made words, so `Получить счёт` had none and `löschen` was `l` and `schen`
    (and found `loesung_lesen` by its `l`)."""
    assert words("Получить счёт") == ["получить", "счёт"]
    assert words("löschen") == ["löschen"] and words("Straße_löschen") == ["straße", "löschen"]
    assert words("getBücher2x") == ["get", "bücher", "2", "x"] and words("日本語のAPI") == ["日本語の", "api"]
    tools = [
        Tool(name="loesung_lesen", input_schema=SCHEMA),
        Tool(name="konto", title="Получить счёт", input_schema=SCHEMA),
    ]
    index = ToolIndex(tools)
    assert index.search("löschen") == []
    assert [hit.name for hit in index.search("счёт")] == ["konto"]


def test_a_synonym_of_a_word_as_written_is_none_of_its_stem() -> None:
    """The finding: `news` was stemmed to `new`, which means `create`: a search for news found creations."""
    assert words("news") == ["new"] and words("new repo") == ["create", "repo"]
    tools = [Tool(name="comments_create", input_schema=SCHEMA), Tool(name="news_list", input_schema=SCHEMA)]
    assert [hit.name for hit in ToolIndex(tools).search("news")] == ["news_list"]


def test_names_and_paths_win_over_prose() -> None:
    index = ToolIndex(TOOLS, PATHS)
    assert index.search("merge a PR", 2)[0].name == "pulls_merge"
    assert index.search("get a repository", 1)[0].name == "repos_get"
    assert index.search("open an issue", 1)[0].name == "issues_create"  # though "pull" is in its prose
    assert index.search("remove a repository", 1)[0].name == "repos_delete"
    assert index.search("unrelated zebra words") == []


def test_only_allowed_tools_and_bounded_results() -> None:
    index = ToolIndex(TOOLS, PATHS)
    assert {h.name for h in index.search("pull request", 5, allowed=["pulls_list"])} == {"pulls_list"}
    assert len(index.search("repository pull request issue", 3)) == 3
    assert len(index.search("repository " * (MAX_QUERY_WORDS * 100), 50)) <= len(TOOLS)
