"""Operator settings: APIMCP_* variables onto the limits of each layer, and docs/security.md naming them all."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from apimcp.settings import Settings, SettingsError, from_environment, variables

SECURITY_DOC = Path(__file__).resolve().parents[1] / "docs" / "security.md"


def test_unset_or_empty_variables_leave_every_default() -> None:
    assert from_environment({}) == Settings()
    assert from_environment({"APIMCP_MCP_MAX_BODY_BYTES": " "}) == Settings()


def test_a_variable_sets_its_group_s_field_and_nothing_else() -> None:
    given = from_environment(
        {"APIMCP_MCP_MAX_BODY_BYTES": "1024", "APIMCP_SESSIONS_IDLE_TIMEOUT": "90.5", "APIMCP_HEAD_SECONDS": "3"}
    )
    assert given.mcp.max_body_bytes == 1024
    assert given.sessions.idle_timeout == 90.5
    assert given.head.seconds == 3.0
    assert given.mcp.max_json_depth == Settings().mcp.max_json_depth
    assert given.api == Settings().api
    assert from_environment({"APIMCP_FETCH_MAX_REDIRECTS": "0"}).fetch.max_redirects == 0  # zero follows none


def test_the_proxies_believed_are_text_and_none_by_default() -> None:
    assert Settings().forwarded.trusted == ()
    given = from_environment({"APIMCP_FORWARDED_ALLOW_IPS": " 10.0.0.5, fd00::/8 "}).forwarded
    assert given.trusted == ("10.0.0.5", "fd00::/8")


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"APIMCP_MCP_MAX_BODY_BYTES": "4MB"}, "APIMCP_MCP_MAX_BODY_BYTES: expected a whole number, got '4MB'"),
        ({"APIMCP_MCP_MAX_BODY_BYTES": "0"}, "APIMCP_MCP_MAX_BODY_BYTES: max_body_bytes must be positive"),
        ({"APIMCP_HEAD_SECONDS": "nan"}, "APIMCP_HEAD_SECONDS: expected a finite number, got 'nan'"),
        ({"APIMCP_FETCH_TIMEOUT_SECONDS": "soon"}, "APIMCP_FETCH_TIMEOUT_SECONDS: expected a number, got 'soon'"),
        ({"APIMCP_MCP_MAX_JSON_DEPTH": "500"}, "APIMCP_MCP_MAX_JSON_DEPTH: max_json_depth must be at most 200"),
        ({"APIMCP_SESSIONS_MAX_SESSIONS": "0"}, "APIMCP_SESSIONS_MAX_SESSIONS: session limits must be positive"),
        (
            {"APIMCP_TASKS_MAX_BYTES_PER_OWNER": "268435457"},
            "APIMCP_TASKS_MAX_BYTES_PER_OWNER: max_bytes_per_owner (268435457) must be at most max_bytes (268435456)",
        ),
        (
            {"APIMCP_FETCH_TIMEOUT_SECONDS": "-1"},
            "APIMCP_FETCH_TIMEOUT_SECONDS: fetch limits must be positive (max_redirects may be 0)",
        ),
        (
            {"APIMCP_FORWARDED_ALLOW_IPS": "10.0.0.0/8, 10.1.2.3/16"},
            "APIMCP_FORWARDED_ALLOW_IPS: '10.1.2.3/16' is not an IP address or a CIDR network (10.0.0.5, 10.0.0.0/8: "
            "a network's host bits are zeros), nor * for any peer",
        ),
        (
            {"APIMCP_IMPORTS_WORKERS": "0", "APIMCP_IMPORTS_QUEUED": "0"},
            "APIMCP_IMPORTS_WORKERS, APIMCP_IMPORTS_QUEUED: workers and retry_after_seconds must be positive, "
            "queued at least 0",
        ),
    ],
)
def test_a_wrong_value_is_refused_naming_its_variable(environment: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as refused:
        from_environment(environment)
    assert str(refused.value) == message


def test_every_setting_is_documented_with_its_default() -> None:
    rows = {}
    for line in SECURITY_DOC.read_text().splitlines():
        found = re.match(r"\| `(APIMCP_[A-Z_]+)` \| ([^|]*) \|", line)  # an empty default: none
        if found:
            rows[found.group(1)] = found.group(2).strip()
    expected = {variable: str(default) for variable, _, _, default in variables()}
    assert rows == expected


def test_a_server_command_stops_with_a_usage_error_naming_the_variable(tmp_path: Path) -> None:
    environment = {"APIMCP_HOME": str(tmp_path), "APIMCP_SESSIONS_MAX_SESSIONS": "many", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "apimcp.cli", "control-plane", "--port", "0"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "APIMCP_SESSIONS_MAX_SESSIONS: expected a whole number, got 'many'" in done.stderr
