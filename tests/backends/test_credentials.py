"""Where static credentials go in a request."""

from __future__ import annotations

from apimcp.backends.credentials import ApiKey, Basic, Bearer, Placement, merged, place, place_all


def test_headers_with_cookies_folds_cookie_credentials_into_one_header() -> None:
    assert place(Bearer("t")).headers_with_cookies() == {"Authorization": "Bearer t"}
    assert place(Basic("ann", "pw")).headers_with_cookies() == {"Authorization": "Basic YW5uOnB3"}
    cookie = place(ApiKey("session", "a b;c", "cookie"))
    assert cookie.headers_with_cookies() == {"Cookie": "session=a%20b%3Bc"}
    assert cookie.headers == {}  # the placement itself is unchanged
    assert place(ApiKey("key", "v", "query")).headers_with_cookies() == {}
    assert place(None).headers_with_cookies() == {}


def test_a_users_credential_replaces_the_services_whatever_the_case_of_its_name() -> None:
    """The finding: `authorization` from a user beside the service's `Authorization` sent both, the service's
    first: a backend reading the first value took every user for the service account."""
    service = place_all([Bearer("service-token"), ApiKey("key", "service-key", "query")])
    user = place_all([ApiKey("authorization", "Bearer user-token"), ApiKey("key", "user-key", "query")])
    assert merged(service, user) == Placement(
        headers={"authorization": "Bearer user-token"}, query=[("key", "user-key")], cookies={}
    )
