"""A plan's task mode in the gateway: the snapshot's `tasks` (from the control plane or a configuration file)
becomes the exposition's task policy, advertised while it is on; a mode that does not read is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.declared import snapshot_of
from apimcp.gateway.exposition import ExpositionHandler
from apimcp.gateway.plan import plan_gateway
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.protocol.tasks.policy import TaskPolicy
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.test_runtime import exposition, snapshot

pytestmark = pytest.mark.anyio


def _with_tasks(identifier: str, mode: str | None) -> dict[str, Any]:
    entry = exposition(identifier, ["get_item", "delete_item"])
    if mode is not None:
        entry["tasks"] = mode
    return entry


def _handler(runtime: GatewayRuntime, identifier: str) -> ExpositionHandler:
    handler = runtime.routes.by_id[identifier].endpoint.handler
    assert isinstance(handler, ExpositionHandler)
    return handler


async def test_the_snapshot_s_task_mode_becomes_the_exposition_s_policy(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, _with_tasks("slow", "slow:2s"), _with_tasks("all", "all"), _with_tasks("old", None)))
    slow = _handler(runtime, "slow")
    assert slow.features.tasks is True
    assert slow.task_policy("get_item") == TaskPolicy("optional", 2.0)
    assert slow.task_policy("delete_item") == TaskPolicy("optional", 2.0)
    assert slow.task_policy("no_such_tool") is None
    assert slow.task_policy("get_status") is None  # a tool of the service the plan does not select
    everything = _handler(runtime, "all")
    assert everything.features.tasks is True
    assert everything.task_policy("get_item") == TaskPolicy("optional", 0.0)
    old = _handler(runtime, "old")  # a snapshot from before the field: off
    assert old.features.tasks is False
    assert old.task_policy("get_item") is None


async def test_changing_the_mode_rebuilds_the_handler_on_the_same_endpoint(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, _with_tasks("a", None)))
    endpoint = runtime.routes.by_id["a"].endpoint
    assert _handler(runtime, "a").features.tasks is False
    runtime.apply(snapshot(2, _with_tasks("a", "slow:500ms")))
    assert runtime.routes.by_id["a"].endpoint is endpoint  # sessions survive the change
    assert _handler(runtime, "a").task_policy("get_item") == TaskPolicy("optional", 0.5)
    runtime.apply(snapshot(3, _with_tasks("a", "all")))
    assert _handler(runtime, "a").task_policy("get_item") == TaskPolicy("optional", 0.0)
    runtime.apply(snapshot(4, _with_tasks("a", None)))
    handler = _handler(runtime, "a")
    assert handler.features.tasks is False and handler.task_policy("get_item") is None


async def test_a_snapshot_with_a_mode_that_does_not_read_is_not_served(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, _with_tasks("a", "all")))
    with pytest.raises(ValueError, match="task mode 'sometimes'"):
        runtime.apply(snapshot(2, _with_tasks("a", "sometimes")), strict=True)
    runtime.apply(snapshot(3, _with_tasks("a", "sometimes")))
    assert _handler(runtime, "a").task_policy("get_item") == TaskPolicy("optional", 0.0)  # the last that worked


def _config(tmp_path: Path, tasks: str) -> str:
    return (
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: http://127.0.0.1:9\n"
        f"expositions:\n  echo:\n    services: [echo]\n    tasks: {tasks}\n"
    )


@pytest.mark.parametrize(
    ("written", "canonical", "after"),
    [
        ("slow:2000ms", "slow:2s", 2.0),
        ('"slow"', "slow:1s", 1.0),
        ("all", "all", 0.0),
        ("slow:0.25s", "slow:250ms", 0.25),
    ],
)
async def test_a_configuration_file_s_mode_reaches_the_exposition(
    runtime: GatewayRuntime, tmp_path: Path, written: str, canonical: str, after: float
) -> None:
    config = parse_config(_config(tmp_path, written), "gateway.yaml", tmp_path)
    assert config.exposition_map()["echo"].tasks == canonical
    declared = snapshot_of(plan_gateway(config))
    assert [e["tasks"] for e in declared["expositions"]] == [canonical]
    runtime.apply(declared, strict=True)
    handler = _handler(runtime, "echo")
    assert handler.features.tasks is True
    assert handler.task_policy("get_item") == TaskPolicy("optional", after)
    assert handler.task_policy("no_such_tool") is None


@pytest.mark.parametrize("written", ["off", '"off"', "null", "false"])
async def test_off_in_a_configuration_file_in_any_spelling_is_no_tasks(
    runtime: GatewayRuntime, tmp_path: Path, written: str
) -> None:
    config = parse_config(_config(tmp_path, written), "gateway.yaml", tmp_path)
    assert config.exposition_map()["echo"].tasks is None
    runtime.apply(snapshot_of(plan_gateway(config)), strict=True)
    handler = _handler(runtime, "echo")
    assert handler.features.tasks is False and handler.task_policy("get_item") is None


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("sometimes", 'task mode \'sometimes\' must be "off", "all" or "slow"'),
        ("all:1s", 'task mode "all" takes no duration'),
        ("slow:0ms", "the duration must be from 1 ms"),
        ('""', "task mode '' must be"),
        ("5", 'a task mode is "off", "all" or "slow"'),
        ("on", "task mode 'on' must be"),
    ],
)
def test_a_bad_mode_in_a_configuration_file_names_the_line_and_key(tmp_path: Path, written: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(_config(tmp_path, written), "gateway.yaml", tmp_path)
    message = str(refused.value)
    assert "gateway.yaml:8:12: expositions.echo.tasks: " in message and says in message, message
