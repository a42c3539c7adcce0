import pytest

from apimcp.http1.answer import RawHeaders


def test_raw_headers_are_read_by_name_without_case_first_value_first() -> None:
    headers = RawHeaders([(b"Content-Type", b"application/json"), (b"Set-Cookie", b"a=1"), (b"set-cookie", b"b=2")])
    assert headers.get("content-type") == headers["CONTENT-TYPE"] == "application/json"
    assert headers.get("Set-Cookie") == "a=1"
    assert headers.get("Content-Encoding") is None and headers.get("Content-Encoding", "identity") == "identity"
    assert "content-type" in headers and "Location" not in headers and 1 not in headers
    assert list(headers) == ["Content-Type", "Set-Cookie"] and len(headers) == 2
    with pytest.raises(KeyError):
        headers["Location"]


def test_a_value_outside_ascii_is_read_as_latin_1() -> None:
    assert RawHeaders([(b"X-Name", "café".encode("latin-1"))])["x-name"] == "café"
