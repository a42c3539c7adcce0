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
