"""apimcp's lock-free counters and histograms are exposed exactly as prometheus_client exposes its own."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from apimcp.telemetry.metrics import LATENCY_BUCKETS
from apimcp.telemetry.tallies import CounterTally, HistogramTally


def _without_creation_times(text: bytes) -> str:
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", text.decode())


@settings(max_examples=60, deadline=None)
@given(
    observations=st.lists(
        st.tuples(st.sampled_from(["a/x", "b/y"]), st.floats(min_value=0, max_value=120, allow_nan=False)),
        max_size=30,
    ),
    increments=st.lists(
        st.tuples(st.sampled_from(["success", "error"]), st.floats(min_value=0, max_value=5, allow_nan=False)),
        max_size=30,
    ),
)
def test_the_exposition_is_prometheus_clients_own(
    observations: list[tuple[str, float]], increments: list[tuple[str, float]]
) -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    counter = Counter("apimcp_things", "Things, by outcome", ["outcome"], registry=theirs)
    histogram = Histogram("apimcp_time_seconds", "Time", ["exposition"], buckets=LATENCY_BUCKETS, registry=theirs)
    Counter("apimcp_unused", "Never counted", ["exposition"], registry=theirs)
    tally = CounterTally("apimcp_things", "Things, by outcome", ["outcome"])
    spread = HistogramTally("apimcp_time_seconds", "Time", ["exposition"], LATENCY_BUCKETS)
    for collector in (tally, spread, CounterTally("apimcp_unused", "Never counted", ["exposition"])):
        ours.register(collector)
    for outcome, amount in increments:
        counter.labels(outcome).inc(amount)
        tally.labels(outcome).inc(amount)
    for exposition, seconds in observations:
        histogram.labels(exposition).observe(seconds)
        spread.labels(exposition).observe(seconds)
    assert _without_creation_times(generate_latest(ours)) == _without_creation_times(generate_latest(theirs))


def test_a_value_on_a_bucket_bound_counts_in_that_bucket() -> None:
    spread = HistogramTally("apimcp_t", "T", [], (0.1, 1.0))
    for seconds in (0.1, 1.0, 1.5):
        spread.labels().observe(seconds)
    assert spread.labels().counts == [1, 1, 1]


def test_label_values_are_counted_as_many_as_the_names() -> None:
    with pytest.raises(ValueError, match="takes 2 label values, not 1"):
        CounterTally("apimcp_c", "C", ["a", "b"]).labels("x")
