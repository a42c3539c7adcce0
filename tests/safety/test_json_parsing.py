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
    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's default, not a settled server's (`servers.lifecycle`)
    try:
        before = collections()
        orjson.loads(MANY)
        assert collections() - before > 50  # what the pause avoids: 100,000 new containers, a collection per 700
        before = collections()
        value = parse_json(MANY)
        assert collections() - before <= 1  # at most the one the resumed collector owes
    finally:
        gc.set_threshold(*thresholds)
    assert gc.isenabled() and value[-1] == {"n": [49_999]}


def test_small_documents_parse_as_they_are() -> None:
    assert parse_json(b'{"a": [1]}') == {"a": [1]} and parse_json('"text"') == "text"
