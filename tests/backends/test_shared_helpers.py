"""One helper per question: the origin of a URL and the redirect statuses (`apimcp.safety.fetch`, which backends
and importers use), and whether a value can travel in an HTTP header (`backends.credentials.header_problem`)."""

from __future__ import annotations

import pytest
import yarl

from apimcp.backends import redirects
from apimcp.backends.base import Failure
from apimcp.backends.credentials import header_problem
from apimcp.backends.redirects import Redirect, next_hop
from apimcp.backends.rest_request import InvalidArgument, decode_file, media_type_problem
from apimcp.importers.openapi import loading
from apimcp.safety import fetch, yaml_loading
from apimcp.safety.fetch import REDIRECT_STATUSES, url_origin


def test_three_copies_of_the_origin_helper_and_two_redirect_status_sets() -> None:
    """Finding: fetch, the OpenAPI loader and backend redirects each had an origin helper (they disagreed on
    default ports), and fetch and redirects each a set of redirect statuses."""
    assert vars(redirects)["REDIRECT_STATUSES"] is REDIRECT_STATUSES  # imported from fetch, not defined again
    for module in (fetch, loading, redirects):
        assert not hasattr(module, "_origin") and not hasattr(module, "origin_of")
    assert url_origin("HTTP://Example.COM./a") == url_origin("http://example.com:80/b") == ("http", "example.com", 80)
    assert url_origin("https://[::1]/") == ("https", "::1", 443)
    assert url_origin("https://example.com:8443/") != url_origin("https://example.com/")


def test_a_backend_redirect_to_the_default_port_written_out_stays_in_the_origin() -> None:
    hop = next_hop(Redirect(302, "Found", "http://api.example:80/next"), yarl.URL("http://api.example/v1"), "GET", 0, 5)
    assert not isinstance(hop, Failure), hop


def test_yaml_loading_load_json_is_unused() -> None:
    """Finding: `load_json` was used nowhere; JSON depth is checked by `check_depth` where JSON is parsed."""
    assert not hasattr(yaml_loading, "load_json")


@pytest.mark.parametrize("value", ["a\r\nb", "a\x00", "a\x7f"])
def test_header_problem_is_the_one_check_of_what_a_header_can_carry(value: str) -> None:
    problem = header_problem(value)
    assert problem is not None
    assert media_type_problem(f"text/{value}") == problem
    with pytest.raises(InvalidArgument) as caught:
        decode_file("file", f"data:text/{value};base64,aGk=")
    assert str(caught.value).endswith(problem)
    assert header_problem("text/plain; q=\t1") is None  # a tab may be in a header value
