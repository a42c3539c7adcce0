"""Compact hits: one line of plain text from a Markdown description, bounded; parameter names with the
required ones first and marked; nothing repeated that the title already says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apimcp.protocol.models import Tool
from apimcp.toolsearch import compact
from apimcp.toolsearch.compact import MAX_PARAMETERS, SUMMARY_CHARS, CompactHits, compact_hit, parameters, summary

GITHUB_STYLE = (
    "Lists jobs for a workflow run. You can use parameters to narrow the list of results. For more information\n"
    "about using parameters, see [Parameters](https://docs.github.com/rest/guides/getting-started).\n\n"
    "> [!NOTE]\n> Anyone with read access can use this endpoint."
)


def test_the_summary_is_the_first_sentence_on_one_line() -> None:
    assert summary(GITHUB_STYLE) == "Lists jobs for a workflow run."
    assert summary("Gets a **public** release\nwith the given\tid") == "Gets a public release with the given id"
    assert summary("See [the guide](https://x.test/a) for `owner`. More.") == "See the guide for `owner`."
    assert summary("Uses tokens, e.g. the app's token. Then more.") == "Uses tokens, e.g. the app's token."
    assert summary("## Heading\n\n- first item\n- second") == "Heading"
    assert summary("> [!WARNING]\n> Deprecated: use v2.\n\nLong text.") == "Deprecated: use v2."
    assert summary("<p>Returns the <b>balance</b>.</p>") == "Returns the balance."
    assert summary("Version 1.2 of the thing") == "Version 1.2 of the thing"
    assert summary("   \n\n  ") == ""
    assert summary("> [!NOTE]\n\nThe real text.") == "The real text."  # a paragraph left empty is passed


def test_a_long_first_sentence_is_cut_at_a_word() -> None:
    line = summary("word " * 100)
    assert len(line) <= SUMMARY_CHARS and line.endswith("word…") and "\n" not in line
    assert len(summary("x" * 500)) == SUMMARY_CHARS  # one endless word: cut anyway


def test_parameters_put_required_ones_first_and_mark_them() -> None:
    schema = {
        "type": "object",
        "properties": {"per_page": {}, "owner": {}, "repo": {}, "page": {}},
        "required": ["owner", "repo"],
    }
    assert parameters(schema) == (["owner*", "repo*", "per_page", "page"], 0)
    assert parameters({"type": "object"}) == ([], 0)
    many = {"type": "object", "properties": {f"p{i}": {} for i in range(MAX_PARAMETERS + 5)}, "required": ["p20"]}
    listed, more = parameters(many)
    assert listed[0] == "p20*" and len(listed) == MAX_PARAMETERS + 1 and more == 4


def test_a_hit_says_name_title_summary_and_parameters_and_nothing_twice() -> None:
    schema = {"type": "object", "properties": {"owner": {}, "repo": {}}, "required": ["owner", "repo"]}
    tool = Tool(name="repos_get", title="Get a repository", description="The repository. More.", input_schema=schema)
    assert compact_hit(tool) == {
        "name": "repos_get",
        "title": "Get a repository",
        "summary": "The repository.",
        "parameters": ["owner*", "repo*"],
    }
    same = Tool(name="t", title="Get a repository", description="Get a repository.", input_schema=schema)
    assert "summary" not in compact_hit(same)
    # importers put an OpenAPI summary (the title) before the description: the line comes from the description
    imported = replace(same, description="Get a repository\n\nThe `parent` is the fork's source. More text.")
    assert compact_hit(imported)["summary"] == "The `parent` is the fork's source."
    bare = Tool(name="ping", input_schema={"type": "object"})
    assert compact_hit(bare) == {"name": "ping"}


def test_an_exposition_makes_each_hit_once() -> None:
    tool = Tool(name="ping", title="Ping", description="Answers pong.", input_schema={"type": "object"})
    hits = CompactHits({"ping": tool})
    assert hits["ping"] == compact_hit(tool) and hits["ping"] is hits["ping"]


@pytest.mark.parametrize("hostile", ["[" * 200_000, "[a](" * 100_000, "![" + "x" * 500_000])
def test_a_summary_reads_a_bounded_part_of_any_description(hostile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding: the link pattern backtracked over every `[` of a description (a crafted 48,000 froze the
    gateway 7 s, under the GIL, on the first search that showed the tool). Now the summary's patterns read the
    first `READ_CHARS` characters only, and bound their own repetitions."""
    read: list[int] = []
    link = compact._LINK

    class Counted:
        def sub(self, replacement: str, text: str) -> str:
            read.append(len(text))
            return link.sub(replacement, text)

    monkeypatch.setattr(compact, "_LINK", Counted())
    assert len(summary(hostile)) <= SUMMARY_CHARS
    assert read and max(read) <= compact.READ_CHARS
    assert "{0," in link.pattern and "*" not in link.pattern  # no repetition without a bound
    assert summary("Read [the guide](https://docs.example/a b) first. Then more.") == "Read the guide first."
