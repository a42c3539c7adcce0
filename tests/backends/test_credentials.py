"""Where static credentials go in a request."""

from __future__ import annotations

from apimcp.backends.credentials import ApiKey, Basic, Bearer, place


def test_headers_with_cookies_folds_cookie_credentials_into_one_header() -> None:
    assert place(Bearer("t")).headers_with_cookies() == {"Authorization": "Bearer t"}
    assert place(Basic("ann", "pw")).headers_with_cookies() == {"Authorization": "Basic YW5uOnB3"}
    cookie = place(ApiKey("session", "a b;c", "cookie"))
    assert cookie.headers_with_cookies() == {"Cookie": "session=a%20b%3Bc"}
    assert cookie.headers == {}  # the placement itself is unchanged
    assert place(ApiKey("key", "v", "query")).headers_with_cookies() == {}
    assert place(None).headers_with_cookies() == {}
