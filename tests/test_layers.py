"""The layering rules of docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "apimcp"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_protocol_engine_imports_nothing_else_from_apimcp() -> None:
    modules = sorted((SRC / "protocol").glob("*.py"))
    assert len(modules) > 10
    assert _beyond("protocol") == {}


def test_nothing_in_safety_or_the_importers_reads_the_environment() -> None:
    """Limits and policies are given to them; only the command line and the settings read variables."""
    for package in ("safety", "importers"):
        for module in sorted((SRC / package).rglob("*.py")):
            text = module.read_text()
            assert "os.environ" not in text and "getenv" not in text, module.relative_to(SRC)


def _foreign(package: str, forbidden: tuple[str, ...]) -> dict[str, set[str]]:
    found = {}
    for module in sorted((SRC / package).rglob("*.py")):
        bad = {m for m in _imports(module) if m.startswith(forbidden)}
        if bad:
            found[str(module.relative_to(SRC))] = bad
    return found


def _beyond(package: str, *allowed: str) -> dict[str, set[str]]:
    """What the modules of `package` import from apimcp outside it, beyond the `allowed` modules."""
    found = {}
    for module in sorted((SRC / package).rglob("*.py")):
        bad = {m for m in _imports(module) if m.startswith("apimcp") and not m.startswith(f"apimcp.{package}")}
        if bad - set(allowed):
            found[str(module.relative_to(SRC))] = bad - set(allowed)
    return found


def test_gateways_never_touch_the_database_or_parse_descriptions_while_serving() -> None:
    # The gateway gets compiled services in snapshots; only plan.py and artifact_files.py, which read a
    # configuration file and what it lists before serving starts, use the importer.
    assert _foreign("gateway", ("apimcp.control", "sqlalchemy")) == {}
    importing = _foreign("gateway", ("apimcp.importers",))
    assert set(importing) == {"gateway/plan.py", "gateway/artifact_files.py"}


def test_the_catalog_and_backends_know_nothing_of_control_or_gateways() -> None:
    for package in ("catalog", "backends", "importers"):
        assert _foreign(package, ("apimcp.control", "apimcp.gateway", "apimcp.cli", "sqlalchemy", "fastapi")) == {}


def test_the_control_plane_does_not_import_the_gateway() -> None:
    assert _foreign("control", ("apimcp.gateway", "apimcp.cli", "apimcp.embedded")) == {}


@pytest.mark.parametrize("package", ["safety", "sealing", "shaping", "console"])
def test_shared_building_blocks_import_nothing_else_from_apimcp(package: str) -> None:
    # safety/ (fetch guard, bounded YAML, masking), sealing/ (gateway keys) and shaping/ (processes for large values)
    # serve every layer, so none of those layers may be pulled into them; console/ is pages over the REST API:
    # neither the control plane's insides nor the gateway's (the control plane mounts it, never the other way round)
    modules = sorted((SRC / package).glob("*.py"))
    assert len(modules) >= 2
    if package == "safety":  # the fetch guard and bounded YAML live there with the masking
        assert {m.name for m in modules} >= {"addresses.py", "fetch.py", "resolver.py", "yaml_loading.py", "masking.py"}
    assert _beyond(package) == {}


def test_the_script_engine_imports_only_the_frames_of_shaping() -> None:
    # what a script process runs: it must start quickly and hold nothing of the gateway
    modules = sorted((SRC / "script_engine").glob("*.py"))
    assert {m.name for m in modules} >= {"child.py", "engine.py", "interrupt.py", "prelude.py", "wire.py"}
    assert _beyond("script_engine", "apimcp.shaping") == {}


def test_artifacts_know_nothing_of_the_gateway_the_control_plane_or_the_database() -> None:
    # the gateway hands artifacts what reaches backends and other tools through small interfaces
    assert _foreign("artifacts", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "sqlalchemy", "fastapi")) == {}


def test_telemetry_is_plugged_in_and_knows_nothing_of_gateways_or_the_control_plane() -> None:
    """It sits on the engine's observer seam and the Backend interface; the runtime and the API plug it in."""
    assert _foreign("telemetry", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}


def test_the_servers_know_nothing_of_what_they_serve() -> None:
    """servers/ runs the gateway, the control plane and `apimcp serve` alike: it is given an ASGI app, and uses
    nothing of apimcp but the engine's ASGI types."""
    modules = sorted((SRC / "servers").glob("*.py"))
    assert {m.name for m in modules} >= {"factory.py", "lifecycle.py", "head_limits.py", "tls.py", "workers.py"}
    assert _beyond("servers", "apimcp.protocol.exchange") == {}
    at_the_root = {path.name for path in SRC.glob("*.py")}
    assert not at_the_root & {"serving.py", "workers.py", "head_limits.py", "plain_http.py"}  # each in its room


def test_code_mode_knows_nothing_of_the_gateway_or_the_control_plane() -> None:
    """The exposition hands a program's runs an `Invoke`: how each call is found, checked and made is the gateway's."""
    assert _foreign("codemode", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}
    assert _foreign("toolsearch", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "apimcp.codemode")) == {}


def test_discovery_reports_know_nothing_of_the_gateway_or_the_control_plane() -> None:
    assert _foreign("findability", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}


def test_federation_is_a_kind_of_service_and_its_client_knows_nothing_of_what_it_serves() -> None:
    """An MCP server is imported (`listing.py`, `definitions.py`: importer errors) and called (`backend.py`) like
    any service: nothing of it reaches into the gateway or the control plane, and what the gateway loads to call
    it imports no importer. `mcp_client/` speaks MCP as a client for the bridge and federation alike."""
    assert _foreign("federation", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}
    importing = _foreign("federation", ("apimcp.importers",))
    assert set(importing) == {"federation/listing.py", "federation/definitions.py"}
    assert _beyond("mcp_client", "apimcp", "apimcp.protocol.modern", "apimcp.protocol.tool_headers") == {}


def test_governance_is_plugged_in_at_the_call_path_and_knows_nothing_of_gateways_or_the_control_plane() -> None:
    """Policies and guardrails are given a call's facts and answer; `gateway/calls.py` and the exposition's
    handler plug them in, the control plane stores and checks their settings. Resilience wraps a `Backend` the
    runtime gives it."""
    for package in ("policies", "guardrails", "resilience"):
        assert _foreign(package, ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}
    assert _foreign("guardrails", ("apimcp.policies",)) == {}


def test_traffic_counting_is_plugged_in_and_knows_nothing_of_gateways_or_the_control_plane() -> None:
    """The runtime plugs the tally's observer and timed backend in, the sync loop sends its rows; the control
    plane reads its histogram's bounds and methods from it, never the other way round."""
    assert _foreign("traffic", ("apimcp.gateway", "apimcp.control", "apimcp.cli", "fastapi", "sqlalchemy")) == {}


def test_the_lean_http_client_knows_nothing_of_what_it_calls() -> None:
    """http1/ sends requests and reads answers; it imports nothing of apimcp (the resolver it is given carries the
    address policy)."""
    modules = sorted((SRC / "http1").glob("*.py"))
    assert {m.name for m in modules} >= {"answer.py", "client.py", "connection.py", "errors.py", "wire.py"}
    assert _beyond("http1") == {}
