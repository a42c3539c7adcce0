"""The port a request's Host names, against the one it came in on (issue 21, L2: the audience names this server)."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.auth.resource import foreign_port, named_port


@pytest.mark.parametrize(
    ("host", "scheme", "port"),
    [
        ("localhost:8000", "http", 8000),
        ("localhost", "http", 80),
        ("mcp.example.com", "https", 443),
        ("localhost:", "http", 80),
        ("[::1]:8000", "http", 8000),
        ("[::1]", "https", 443),
        ("localhost:80a", "http", None),
        ("localhost:\u00b2", "http", None),  # a digit to str.isdigit, not to int()
        ("localhost:1234567", "http", None),
    ],
)
def test_the_port_a_host_names(host: str, scheme: str, port: int | None) -> None:
    assert named_port(host, scheme) == port


def _scope(host: str, server: Any) -> dict[str, Any]:
    return {"scheme": "http", "headers": [(b"host", host.encode())], "server": server}


def test_a_host_naming_another_port_than_the_request_came_in_on_is_foreign() -> None:
    assert foreign_port(_scope("localhost:8000", ("127.0.0.1", 8000))) is None
    refused = foreign_port(_scope("localhost:9000", ("127.0.0.1", 8000)))
    assert refused is not None and "names port 9000, and this request came in on port 8000" in refused
    assert foreign_port(_scope("localhost", ("127.0.0.1", 8000))) is not None  # port 80
    assert foreign_port(_scope("localhost:9000", None)) is None  # a server that does not say its port
