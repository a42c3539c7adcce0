"""deploy/ describes the topology the process-level tests run (docs/deployment.md): a control plane on
PostgreSQL, three gateways sharing Redis, a round-robin balancer; every option the files give exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from apimcp.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
GATEWAYS = ["gateway-1", "gateway-2", "gateway-3"]


def test_compose_runs_the_tested_topology() -> None:
    assert set(SERVICES) == {"postgres", "redis", "control-plane", *GATEWAYS, "balancer"}
    plane = SERVICES["control-plane"]["command"]
    assert plane[0] == "control-plane" and plane[plane.index("--database-url") + 1].startswith("postgresql://")
    for name in GATEWAYS:
        command = SERVICES[name]["command"]
        assert command[0] == "gateway"
        assert command[command.index("--control-plane") + 1] == "http://control-plane:8080"
        assert command[command.index("--state-url") + 1] == "redis://redis:6379/0"
        assert SERVICES[name]["env_file"] == ".env"
        # X-Forwarded-For and -Proto believed from the balancer alone (by default from no one)
        balancer = SERVICES["balancer"]["networks"]["default"]["ipv4_address"]
        assert command[command.index("--forwarded-allow-ips") + 1] == balancer


def test_the_balancer_spreads_over_the_three_gateways_without_buffering() -> None:
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    assert re.findall(r"server (gateway-\d):8081", conf) == GATEWAYS
    for directive in ("proxy_buffering off;", "proxy_next_upstream error;", "proxy_http_version 1.1;"):
        assert directive in conf
    assert "ip_hash" not in conf and "sticky" not in conf


@pytest.mark.parametrize("service", ["control-plane", *GATEWAYS])
def test_every_option_the_files_give_exists(service: str) -> None:
    command = SERVICES[service]["command"]
    help_text = CliRunner().invoke(app, [command[0], "--help"], terminal_width=300).output
    for option in (word for word in command if word.startswith("--")):
        assert option in help_text, f"{service}: apimcp {command[0]} has no {option}"


def test_the_variables_to_fill_in_are_the_ones_the_processes_read() -> None:
    listed = re.findall(r"^(APIMCP_[A-Z_]+)=", (ROOT / "deploy" / "env.example").read_text(), re.MULTILINE)
    assert listed == ["APIMCP_SECRET_KEYS", "APIMCP_GATEWAY_TOKEN", "APIMCP_STATE_KEY", "APIMCP_REQUEST_STATE_KEYS"]
    docs = (ROOT / "docs" / "deployment.md").read_text()
    for variable in listed:
        assert f"`{variable}`" in docs
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["apimcp"]' in dockerfile
