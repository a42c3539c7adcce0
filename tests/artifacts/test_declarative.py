"""Declarative custom tools' argument templates."""

from __future__ import annotations

from apimcp.artifacts.declarative import ArgumentTemplate, placeholder_path


def test_a_whole_scalar_placeholder_keeps_the_input_values_json_type() -> None:
    template = ArgumentTemplate.compile({"id": "${bookId}", "filter": "${criteria}", "flag": "${on}"})
    rendered = template.render({"bookId": 7, "criteria": {"tags": ["a"]}, "on": False})
    assert rendered == {"id": 7, "filter": {"tags": ["a"]}, "flag": False}
    assert isinstance(rendered["id"], int)


def test_dotted_placeholders_walk_nested_input() -> None:
    template = ArgumentTemplate.compile({"q": "${search.text}", "page": {"size": "${search.paging.size}"}})
    assert template.render({"search": {"text": "austen", "paging": {"size": 5}}}) == {
        "q": "austen",
        "page": {"size": 5},
    }


def test_an_unresolved_placeholder_drops_its_key_so_the_targets_default_applies() -> None:
    template = ArgumentTemplate.compile({"q": "${text}", "limit": "${limit}", "nested": {"x": "${missing.deep}"}})
    assert template.render({"text": "poe"}) == {"q": "poe", "nested": {}}
    assert template.render({"text": "poe", "limit": None}) == {"q": "poe", "limit": None, "nested": {}}


def test_literals_and_partial_strings_pass_through_unchanged() -> None:
    arguments = {"limit": 10, "sort": "title", "note": "id=${bookId}", "tags": ["${bookId}"], "on": True, "none": None}
    assert ArgumentTemplate.compile(arguments).render({"bookId": 3}) == arguments


def test_nested_maps_are_templated_recursively() -> None:
    template = ArgumentTemplate.compile({"__relation_followers": {"last": "${count}", "after": "${cursor}"}})
    assert template.render({"count": 10}) == {"__relation_followers": {"last": 10}}


def test_placeholder_paths() -> None:
    assert placeholder_path("${a}") == ("a",)
    assert placeholder_path("${ a.b }") == ("a", "b")
    assert placeholder_path("x${a}") is None
    assert placeholder_path("${a} ") is None
    assert placeholder_path(5) is None
