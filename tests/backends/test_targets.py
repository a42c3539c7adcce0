"""Backend endpoints and API keys, checked per kind of service before any gateway sees them."""

from __future__ import annotations

import pytest

from apimcp.backends.targets import api_key_problem, endpoint_problem


@pytest.mark.parametrize(
    "endpoint",
    ["127.0.0.1:50051", "grpc://shop:50051", "grpcs://shop.example.com:443", "[::1]:50051", "dns:///shop:443"],
)
def test_grpc_targets_that_are_accepted(endpoint: str) -> None:
    assert endpoint_problem("grpc", endpoint) is None


@pytest.mark.parametrize(
    "endpoint", ["https://shop:443", "shop", "grpc://shop", "shop:50051/", "grpcs://shop:443/v1", "shop :1"]
)
def test_grpc_targets_that_are_refused(endpoint: str) -> None:
    assert endpoint_problem("grpc", endpoint) == "a gRPC backend is host:port, grpc://host:port or grpcs://host:port"


@pytest.mark.parametrize("kind", ["openapi", "graphql"])
def test_http_kinds_need_an_http_url(kind: str) -> None:
    assert endpoint_problem(kind, "https://api.example.com/graphql") is None
    assert endpoint_problem(kind, "grpc://api:1") == "the backend endpoint must be an http:// or https:// URL"


def test_grpc_api_keys_are_metadata_headers() -> None:
    assert api_key_problem("grpc", "X-Api-Key", "header") is None
    assert "in the query cannot be sent" in (api_key_problem("grpc", "key", "query") or "")
    assert "cannot be a gRPC metadata key" in (api_key_problem("grpc", "grpc-timeout", "header") or "")
    assert "cannot be a gRPC metadata key" in (api_key_problem("grpc", "token-bin", "header") or "")
    assert "cannot be a gRPC metadata key" in (api_key_problem("grpc", "a key", "header") or "")
    assert api_key_problem("openapi", "key", "query") is None
