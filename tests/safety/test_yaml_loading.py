"""Bounded YAML and JSON depth: alias bombs, recursive aliases, deep nesting, and what stays as it was."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
import yaml

from apimcp.safety import yaml_loading
from apimcp.safety.yaml_loading import (
    JsonTooDeep,
    YamlLimitError,
    YamlLimits,
    check_depth,
    compose_yaml,
    load_yaml,
)


def alias_bomb(levels: int = 9, width: int = 9) -> bytes:
    """Each level names the one before `width` times: a few hundred bytes, width**levels strings once expanded."""
    lines = [b'l0: &l0 "' + b"lol" * 3 + b'"']
    lines += [
        b"l%d: &l%d [" % (level, level) + b", ".join([b"*l%d" % (level - 1)] * width) + b"]"
        for level in range(1, levels + 1)
    ]
    return b"\n".join(lines) + b"\n"


def nine_by_six() -> bytes:
    """Issue 21's example: an OpenAPI description of a few hundred bytes whose parameter default is 6 levels of 9
    aliases each (531,441 strings once expanded: a 4.4 MB tools/list), within the alias and byte bounds."""
    lines = [b"openapi: 3.0.0", b'info: {title: Nine by six, version: "1"}', b"x-levels:", b"  - &l0 nines"]
    lines += [b"  - &l%d [" % level + b", ".join([b"*l%d" % (level - 1)] * 9) + b"]" for level in range(1, 7)]
    lines += [
        b"paths:",
        b"  /items:",
        b"    get:",
        b"      operationId: listItems",
        b"      parameters: [{name: tags, in: query, schema: {type: array, items: {type: string}, default: *l6}}]",
        b'      responses: {"200": {description: ok}}',
    ]
    return b"\n".join(lines) + b"\n"


def never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make building any YAML document fail the test: what is refused must be refused from its node graph."""

    def building(*args: object, **kwargs: object) -> None:
        raise AssertionError("the document was built")

    monkeypatch.setattr(yaml_loading._Loader, "construct_document", building)


def test_an_alias_bomb_is_refused_before_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """It cost 1.4 GB and 4 s to build: it is refused from its node graph, before anything is built."""
    bomb = alias_bomb()
    assert len(bomb) < 900
    never_built(monkeypatch)
    with pytest.raises(YamlLimitError) as caught:
        load_yaml(bomb)
    assert "expands to more than 134217728 bytes once its aliases are followed" in str(caught.value)
    assert caught.value.problem_mark is not None  # where: the node that grew too large


def test_an_alias_counts_at_the_full_size_of_what_it_names() -> None:
    big = "x" * 10_000
    document = f"big: &big {big}\nuses: [{', '.join(['*big'] * 20)}]\n"
    assert len(load_yaml(document)["uses"]) == 20
    with pytest.raises(YamlLimitError, match="expands to more than 150000 bytes"):
        load_yaml(document, YamlLimits(max_expanded_size=150_000))  # 21 times 10 kB, though the text is 10 kB


def test_yaml_aliases_are_not_expanded_far_beyond_their_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21, L3: 55 aliases that make 9 MB once expanded passed the alias bound and the bytes one (128 MiB);
    the expanded size is bounded relative to the document's own too, in nodes first, before anything is built."""
    description = nine_by_six()
    assert len(description) < 640
    generous = YamlLimits(expansion_allowance_nodes=2_000_000, expansion_allowance_bytes=32 << 20)
    assert len(orjson.dumps(load_yaml(description, generous)["paths"])) > 4_000_000  # what tools/list carries
    never_built(monkeypatch)
    with pytest.raises(YamlLimitError) as caught:
        load_yaml(description)
    problem = str(caught.value)
    assert "the document's aliases expand it to 1270516 nodes" in problem  # every level, and the default
    assert "more than the limit (100000 nodes, or 4 times the document's own 48)" in problem
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 9  # the largest one named


def test_a_large_document_may_expand_a_few_times_its_own_size() -> None:
    """Past the allowances, a document may become `max_expansion` times its own size (nodes, and bytes)."""
    limits = YamlLimits(expansion_allowance_nodes=100, expansion_allowance_bytes=10_000, max_expansion=4)
    plain = "items: [" + ", ".join(str(n) for n in range(500)) + "]\n"  # 502 nodes, no alias
    assert len(load_yaml(plain, limits)["items"]) == 500
    base = "base: &b [" + ", ".join(["1"] * 60) + "]\n"  # 61 nodes named by each alias
    assert len(load_yaml(base + "uses: [*b, *b, *b]\n", limits)["uses"]) == 3  # 4 times 61, and a few more
    with pytest.raises(YamlLimitError, match="aliases expand it to 370 nodes"):
        load_yaml(base + "uses: [*b, *b, *b, *b, *b]\n", limits)
    big = "x" * 5_000
    with pytest.raises(YamlLimitError, match="aliases expand it to about 30035 bytes, more than the limit"):
        load_yaml(f"big: &big {big}\nuses: [{', '.join(['*big'] * 5)}]\n", limits)  # 6 times 5 kB


@pytest.mark.parametrize("document", ["&a [*a]", "a: &a {b: *a}", "x: &x\n  y: [1, *x]\n"])
def test_a_recursive_alias_is_refused_not_a_traceback(document: str) -> None:
    with pytest.raises(YamlLimitError, match="a recursive alias"):
        load_yaml(document)


def test_the_number_of_aliases_is_bounded() -> None:
    document = "a: &a 1\nlist: [" + ", ".join(["*a"] * 11) + "]\n"
    assert load_yaml(document, YamlLimits(max_aliases=11))["list"] == [1] * 11
    with pytest.raises(YamlLimitError, match="more than 10 aliases"):
        load_yaml(document, YamlLimits(max_aliases=10))


def test_nesting_is_bounded_aliases_included() -> None:
    limits = YamlLimits(max_depth=10)
    assert load_yaml("[" * 10 + "]" * 10, limits) == [[[[[[[[[[]]]]]]]]]]
    with pytest.raises(YamlLimitError, match="nested deeper than 10 levels"):
        load_yaml("[" * 11 + "]" * 11, limits)
    # each part is shallow, but the alias brings six levels to where four already are
    deep_by_alias = "a: &a [[[[[1]]]]]\nb: [[[*a]]]\n"
    with pytest.raises(YamlLimitError, match="nested deeper than 8 levels"):
        load_yaml(deep_by_alias, YamlLimits(max_depth=8))
    assert load_yaml(deep_by_alias, YamlLimits(max_depth=9))["b"] == [[[[[[[[1]]]]]]]]


def test_libyaml_nesting_beyond_its_own_limit_is_an_error_not_a_crash() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml("[" * 5000 + "]" * 5000)


def test_yaml_reads_as_json_would_and_anchors_still_work() -> None:
    document = compose_yaml(
        "date: 2024-01-01\nwhen: 2024-01-01T10:00:00Z\nbase: &base {a: 1}\nmerged: {<<: *base, b: 2}\n", name="f.yaml"
    )
    assert document.data == {
        "date": "2024-01-01",  # dates and times stay strings
        "when": "2024-01-01T10:00:00Z",
        "base": {"a": 1},
        "merged": {"a": 1, "b": 2},
    }
    assert document.node is not None and document.node.start_mark.name == "f.yaml"
    assert compose_yaml("").data is None
    if yaml.__with_libyaml__:
        assert issubclass(yaml_loading._Loader, yaml.CSafeLoader)  # the fast parser when it is there


def test_parse_errors_keep_their_position() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml("a: 1\nb: [unclosed\n", name="conf.yaml")
    mark = caught.value.problem_mark  # type: ignore[attr-defined]
    assert (mark.name, mark.line) == ("conf.yaml", 2)


def test_unsafe_tags_are_refused() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml("!!python/object/apply:os.system ['true']")


def test_json_depth_is_bounded() -> None:
    check_depth(orjson.loads(b"[" * 128 + b"]" * 128), 128)
    with pytest.raises(JsonTooDeep, match="nested deeper than 128 levels"):
        check_depth(orjson.loads(b"[" * 129 + b"]" * 129), 128)
    with pytest.raises(JsonTooDeep):
        check_depth(orjson.loads(b'{"a": ' * 20 + b"1" + b"}" * 20), 19)
    check_depth(orjson.loads(b'{"a": ' * 20 + b"1" + b"}" * 20), 20)
    check_depth("a string", 1)


def test_every_yaml_the_project_reads_goes_through_the_bounded_loader() -> None:
    """Descriptions, `$ref`ed documents, artifacts, configuration files (and so `apimcp apply`): no module but this
    one calls a YAML loader, so none reads a document its bounds have not measured."""
    source = Path(yaml_loading.__file__).parents[1]
    calls = r"\byaml\.(safe_|full_|unsafe_)?(load|load_all|compose|compose_all|parse)\b"
    loading = re.compile(rf"{calls}|yaml\.\w*Loader|ruamel")
    readers = sorted(
        str(path.relative_to(source)) for path in source.rglob("*.py") if loading.search(path.read_text("utf-8"))
    )
    assert readers == ["safety/yaml_loading.py"]
