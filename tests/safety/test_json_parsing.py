"""Large JSON parsed without the cyclic collector running meanwhile (it took two thirds of a big parse)."""

from __future__ import annotations

import gc

import orjson

from apimcp.safety.json_parsing import PAUSE_FROM_BYTES, parse_json

MANY = orjson.dumps([{"n": [i]} for i in range(50_000)])


def collections() -> int:
    return sum(generation["collections"] for generation in gc.get_stats())


def test_a_large_answer_is_parsed_without_collections_and_the_collector_is_on_after() -> None:
    assert len(MANY) > PAUSE_FROM_BYTES and gc.isenabled()
    before = collections()
    orjson.loads(MANY)
    assert collections() > before  # what the pause avoids: 100,000 new containers start collections
    before = collections()
    assert parse_json(MANY)[-1] == {"n": [49_999]}
    assert collections() == before
    assert gc.isenabled()


def test_a_collector_turned_off_stays_off_and_small_documents_parse_as_they_are() -> None:
    gc.disable()
    try:
        assert parse_json(MANY)[0] == {"n": [0]}
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert parse_json(b'{"a": [1]}') == {"a": [1]} and parse_json('"text"') == "text"
