"""Sending ended spans: a queue the request path appends to, and a thread that sends them in batches.

The request path pays one `deque.append` per span; encoding and the HTTP POST happen on the export thread
(`OTEL_BSP_*` set its pace and bounds, as for the SDK's batch processor). A full queue drops new spans and
counts them; a collector that fails or does not answer within the timeout loses that batch, said in the log at
most once a minute. The thread starts with the first span, in the process that made it (a forked child starts
its own: `workers.py` forks before any request), and sends what is queued when the process exits (`atexit`;
a worker, which ends with `os._exit`, calls `active.flush`).
"""

from __future__ import annotations

import atexit
import gzip
import http.client
import json
import logging
import os
import ssl
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO
from urllib.parse import urlsplit

from apimcp.telemetry.otlp_encoding import Encoder
from apimcp.telemetry.spans import Span

log = logging.getLogger("apimcp.telemetry")
_WARN_EVERY_SECONDS = 60.0


class CollectorRefused(RuntimeError):
    """The collector answered with a status other than 2xx."""


@dataclass(frozen=True, slots=True)
class BatchSettings:
    schedule_delay: float = 5.0
    max_queue: int = 2048
    max_batch: int = 512
    export_timeout: float = 30.0


@dataclass(frozen=True, slots=True)
class OtlpSettings:
    endpoint: str = "http://localhost:4318/v1/traces"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """May hold a collector's credentials: never logged."""
    timeout: float = 10.0
    gzip: bool = False
    certificate: str | None = None


def _in_forked_children(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    def child() -> None:
        bound = method()
        if bound is not None:
            bound()

    os.register_at_fork(after_in_child=child)


class BatchExporter:
    """Queues ended spans; `send` gets batches of them on the export thread."""

    def __init__(self, send: Callable[[list[Span]], None], settings: BatchSettings = BatchSettings()) -> None:
        self._send = send
        self._settings = settings
        self._queue: deque[Span] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._warned_at = -_WARN_EVERY_SECONDS
        self.dropped = 0
        self.sent = 0
        _in_forked_children(weakref.WeakMethod(self._forked))

    def add(self, span: Span) -> None:
        queue = self._queue
        if len(queue) >= self._settings.max_queue:
            self.dropped += 1
            return
        queue.append(span)
        if self._thread is None:
            self._start()
        if len(queue) == self._settings.max_batch:
            self._wake.set()

    def _forked(self) -> None:
        """A forked child has no export thread: it starts its own with its first span (the parent's queue is
        the parent's to send)."""
        self._queue.clear()
        self._wake = threading.Event()
        self._start_lock = threading.Lock()
        self._thread = None
        forked = getattr(self._send, "forked", None)
        if callable(forked):
            forked()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stopping:
                thread = threading.Thread(target=self._run, name="apimcp-span-export", daemon=True)
                thread.start()
                self._thread = thread
                atexit.register(self.shutdown)

    def _run(self) -> None:
        while True:
            self._wake.wait(self._settings.schedule_delay)
            self._wake.clear()
            stopping = self._stopping
            self._drain()
            if stopping:
                return

    def _drain(self) -> None:
        queue, size = self._queue, self._settings.max_batch
        while queue:
            batch = [queue.popleft() for _ in range(min(size, len(queue)))]
            try:
                self._send(batch)
                self.sent += len(batch)
            except Exception as exc:
                now = time.monotonic()
                if now - self._warned_at >= _WARN_EVERY_SECONDS:
                    self._warned_at = now
                    # the collector's status is said; other messages could quote an address, never a header
                    reason = str(exc) if isinstance(exc, CollectorRefused) else type(exc).__name__
                    log.warning("spans not exported (%d lost): %s", len(batch), reason)
            if len(queue) < size and not self._stopping:
                return  # the rest waits for the next round

    def shutdown(self) -> None:
        """Send what is queued (within the export timeout) and stop."""
        self._stopping = True
        thread = self._thread
        if thread is None:
            return
        self._wake.set()
        thread.join(self._settings.export_timeout)


class OtlpHttpSender:
    """POSTs encoded batches to an OTLP/HTTP collector over one kept-alive connection."""

    def __init__(self, settings: OtlpSettings, encoder: Encoder) -> None:
        parts = urlsplit(settings.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the OTLP traces endpoint must be an http(s) URL")
        self._settings = settings
        self._encoder = encoder
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {**settings.headers, "Content-Type": "application/x-protobuf"}
        if settings.gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._connection: http.client.HTTPConnection | None = None

    def forked(self) -> None:
        """In a forked child: the parent's connection is the parent's."""
        self._connection = None

    def _connect(self) -> http.client.HTTPConnection:
        timeout = self._settings.timeout
        if self._https:
            context = ssl.create_default_context(cafile=self._settings.certificate)
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=context)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def __call__(self, spans: list[Span]) -> None:
        body = self._encoder.request(spans)
        if self._settings.gzip:
            body = gzip.compress(body, compresslevel=5)
        for attempt in (1, 2):  # a kept-alive connection the collector closed is opened again once
            connection = self._connection or self._connect()
            self._connection = connection
            try:
                connection.request("POST", self._path, body=body, headers=self._headers)
                response = connection.getresponse()
                response.read(64 * 1024)
                if response.will_close:
                    connection.close()
                    self._connection = None
            except (OSError, http.client.HTTPException):
                connection.close()
                self._connection = None
                if attempt == 2:
                    raise
                continue
            if not 200 <= response.status < 300:
                raise CollectorRefused(f"the collector answered {response.status}")
            return


class ConsoleSender:
    """One JSON object per span on standard output (for trying telemetry out)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out

    def __call__(self, spans: list[Span]) -> None:
        out = self._out or sys.stdout
        for span in spans:
            record = {
                "name": span.name,
                "kind": {2: "SERVER", 3: "CLIENT"}.get(span.kind, "INTERNAL"),
                "trace_id": f"{span.trace_id:032x}",
                "span_id": f"{span.span_id:016x}",
                "parent_id": f"{span.parent_id:016x}" if span.parent_id else None,
                "start_ns": span.start_ns,
                "end_ns": span.end_ns,
                "status": "ERROR" if span.status_code == 2 else "UNSET",
                "attributes": span.attributes,
            }
            out.write(json.dumps(record) + "\n")
        out.flush()
