"""Choosing the operations an exposition offers, and what is said when none is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apimcp.catalog.model import Operation, RestBinding
from apimcp.catalog.selection import nothing_selected, select, served, unmatched
from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.plan import plan_gateway


def _operation(name: str, tags: tuple[str, ...] = ()) -> Operation:
    return Operation(tool_name=name, input_schema={"type": "object"}, binding=RestBinding("GET", f"/{name}"), tags=tags)


OPERATIONS = [_operation("list_pets", ("pets",)), _operation("get_pet", ("pets",)), _operation("ping")]


def test_patterns_select_by_name_signature_and_tag() -> None:
    assert [op.tool_name for op in select(OPERATIONS, ["tag:pets"], ["get_*"])] == ["list_pets"]
    assert [op.tool_name for op in select(OPERATIONS, ["GET /ping"], [])] == ["ping"]
    assert unmatched(OPERATIONS, ["tag:pets", "nope*"]) == ["nope*"]


def test_with_a_tool_prefix_patterns_match_the_name_with_or_without_it() -> None:
    """Finding: `tool_prefix: pets_` with `exclude: [delete_pet]` was refused ("select no operation"): the file
    matched served names, the control plane the description's; both names match either way now."""
    offered = served(OPERATIONS, "pets_")
    assert [op.tool_name for op in offered] == ["pets_list_pets", "pets_get_pet", "pets_ping"]
    for exclude in (["get_pet"], ["pets_get_pet"], ["get_*"], ["pets_get_*"]):
        assert [op.tool_name for op in select(offered, [], exclude, "pets_")] == ["pets_list_pets", "pets_ping"]
    assert unmatched(offered, ["list_pets", "pets_list_pets", "pets_nope", "nope"], "pets_") == ["pets_nope", "nope"]
    assert unmatched(OPERATIONS, ["pets_list_pets"]) == ["pets_list_pets"]  # without a prefix, no such tool


def test_what_is_said_when_nothing_is_left() -> None:
    assert nothing_selected([], [], []) == "the description declares no operation, so there is nothing to expose"
    assert nothing_selected(OPERATIONS, [], ["*"]) == "exclude leaves no operation to expose"
    assert nothing_selected(OPERATIONS, ["ping"], ["ping"]) == "include and exclude leave no operation to expose"


def test_a_description_with_no_operations_is_refused_for_what_it_is(tmp_path: Path) -> None:
    empty = {"openapi": "3.0.3", "info": {"title": "Empty", "version": "1"}, "paths": {}}
    (tmp_path / "empty.json").write_text(json.dumps(empty))
    config = parse_config("services:\n  empty:\n    openapi: empty.json\n    backend: http://127.0.0.1:9\n",
                          "gateway.yaml", tmp_path)  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        plan_gateway(config)
    assert str(refused.value) == (
        "gateway.yaml:3:14: services.empty.openapi: the description declares no operation, so there is nothing to "
        "expose"
    )
    assert "include/exclude" not in str(refused.value)
