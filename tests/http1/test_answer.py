import gzip
import os
import zlib

import pytest

from apimcp.http1.answer import MAX_GZIP_MEMBERS, RawHeaders, decoded
from apimcp.http1.errors import AnswerTooLarge, BadAnswer


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


def _member(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def test_a_gzip_body_of_many_members_is_read_whole_across_the_pieces_it_is_fed_in() -> None:
    large = os.urandom(40_000)  # incompressible: its member spans several pieces
    members = [_member(large)] + [_member(f"{n},".encode()) for n in range(998)] + [_member(large)]
    body = b"".join(members)
    assert decoded(body, "gzip", 1_000_000) == large + b"".join(f"{n},".encode() for n in range(998)) + large


def test_a_gzip_body_of_more_members_than_the_bound_is_refused() -> None:
    """The finding: each member cost a copy of the rest of the body and of the output so far, so a 3.45 MB body of
    150,000 tiny members held the event loop for 22 seconds. Now members are fed in pieces, and bounded."""
    body = _member(b"a" * 20) * (MAX_GZIP_MEMBERS + 1)
    with pytest.raises(BadAnswer, match="more than 1000 members"):
        decoded(body, "gzip", 10 * 1024 * 1024)
    assert decoded(body[: len(body) // (MAX_GZIP_MEMBERS + 1) * MAX_GZIP_MEMBERS], "gzip", 10**6) == b"a" * 20_000


def test_inflating_past_the_bound_is_refused_whichever_piece_crosses_it() -> None:
    body = _member(b"0" * 100_000) + _member(b"1" * 100_000)
    assert len(decoded(body, "gzip", 200_000)) == 200_000
    with pytest.raises(AnswerTooLarge):
        decoded(body, "gzip", 199_999)
    with pytest.raises(zlib.error):
        decoded(body[:-5], "gzip", 200_000)  # the second member stops before its end
