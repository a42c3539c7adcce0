"""URLs as messages and records show them: no user name, password, query value or fragment."""

from __future__ import annotations

import pytest

from apimcp.safety.shown_urls import shown_location, shown_url


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("https://api.example.com/openapi.json?token=s3cret", "https://api.example.com/openapi.json?token=***"),
        ("https://alice:s3cret@api.example.com:8443/v1/x.yaml", "https://api.example.com:8443/v1/x.yaml"),
        ("https://api.example.com/x?a=1&b&c=", "https://api.example.com/x?a=***&***&c=***"),
        ("https://api.example.com/x#access_token=s3cret", "https://api.example.com/x"),
        ("grpcs://user:s3cret@shop.example.com:443", "grpcs://shop.example.com:443"),
        ("specs/openapi.yaml", "specs/openapi.yaml"),  # a file: nothing to hide
    ],
)
def test_a_url_is_shown_without_its_credentials_or_query_values(given: str, shown: str) -> None:
    assert shown_url(given) == shown


def test_a_location_that_cannot_be_split_loses_its_query_and_credentials_too() -> None:
    assert shown_location("http://alice:s3cret@[::1/openapi.json?token=s3cret") == "http://[::1/openapi.json"
    assert shown_location("grpc://[::1") == "grpc://[::1"
