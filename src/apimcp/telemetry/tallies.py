"""Counters and histograms counted without a lock, read as Prometheus metric families when `/metrics` is scraped.

prometheus_client's own take a lock on every increment and check, on every observation, that the metric may be
observed: about a microsecond per request with three of them, a large part of what metrics cost a call that
takes a few hundred. Here an increment is an attribute update and an observation a bisection and two: they are
made on the event loop's thread, where the request path runs (an update from another thread could at worst be
lost, never corrupt anything). The exposition is the one prometheus_client writes for its own (`_total`,
`_bucket`, `_count`, `_sum` and `_created` samples, the same `le` values).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, cast

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

_go_float = cast(Callable[[float], str], floatToGoString)
"""How prometheus_client writes a bucket's bound (`le`)."""


class Count:
    """One label set's counter."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class Spread:
    """One label set's histogram: a count per bucket (the last one +Inf), and the sum."""

    __slots__ = ("_bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self._bounds, value)] += 1  # the first bucket whose bound is >= value
        self.sum += value


C = TypeVar("C", Count, Spread)


class _Family(Collector, Generic[C]):
    """A metric family: `labels(*values)` gives a label set's child, made on first use by `child`."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], child: Callable[[], C]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._child: Callable[[], C] = child
        self._children: dict[tuple[str, ...], C] = {}

    def labels(self, *values: str) -> C:
        found = self._children.get(values)
        if found is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes {len(self.labelnames)} label values, not {len(values)}")
            found = self._children.setdefault(values, self._child())
        return found


class CounterTally(_Family[Count]):
    """A counter family."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        super().__init__(name, documentation, labelnames, Count)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in list(self._children.items()):
            family.add_metric(values, child.value, created=child.created)
        yield family


class HistogramTally(_Family[Spread]):
    """A histogram family with fixed bucket bounds."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        bounds = tuple(sorted(float(bound) for bound in buckets))
        super().__init__(name, documentation, labelnames, lambda: Spread(bounds))
        self._les = [_go_float(bound) for bound in bounds] + ["+Inf"]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in list(self._children.items()):
            counts, total = list(child.counts), child.sum  # one reading: cumulative counts agree with each other
            cumulative, buckets = 0, []
            for le, count in zip(self._les, counts, strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(values, buckets, total)
            labels = dict(zip(self.labelnames, values, strict=True))
            family.samples.append(Sample(f"{self.name}_created", labels, child.created))
        yield family
