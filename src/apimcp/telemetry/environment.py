"""The standard `OTEL_*` variables an exporter follows, read once and bounded: a value apimcp cannot follow
stops the server command with an error naming the variable (never quoting a header's value)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from apimcp import __version__
from apimcp.telemetry.config import TelemetryConfigError
from apimcp.telemetry.export import BatchSettings, OtlpSettings
from apimcp.telemetry.spans import AttributeValue

DEFAULT_SERVICE_NAME = "apimcp"
DEFAULT_ENDPOINT = "http://localhost:4318"
MAX_ENTRIES = 64
MAX_LIST_CHARS = 8192
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def _traces_or_all(environ: Mapping[str, str], suffix: str) -> tuple[str, str]:
    """(variable, value) of `OTEL_EXPORTER_OTLP_TRACES_<suffix>`, else of `OTEL_EXPORTER_OTLP_<suffix>`."""
    for variable in (f"OTEL_EXPORTER_OTLP_TRACES_{suffix}", f"OTEL_EXPORTER_OTLP_{suffix}"):
        value = environ.get(variable, "").strip()
        if value:
            return variable, value
    return "", ""


def _pairs(variable: str, raw: str) -> dict[str, str]:
    """`key=value,key2=value2` with percent-encoded values (the W3C Baggage form the SDKs read)."""
    if len(raw) > MAX_LIST_CHARS:
        raise TelemetryConfigError(f"{variable}: longer than {MAX_LIST_CHARS} characters")
    found: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TelemetryConfigError(f"{variable}: each entry must be key=value")
        found[unquote(key.strip())] = unquote(value.strip())
        if len(found) > MAX_ENTRIES:
            raise TelemetryConfigError(f"{variable}: more than {MAX_ENTRIES} entries")
    return found


def _count(environ: Mapping[str, str], variable: str, default: int, high: int, unit: str = "") -> int:
    """A whole number (of `unit`) in 1..`high`; `default` when the variable is unset."""
    raw = environ.get(variable, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise TelemetryConfigError(f"{variable}: a whole number{unit} from 1 to {high} is needed")
    return int(raw)


def _milliseconds(environ: Mapping[str, str], variable: str, default: float, high: int) -> float:
    """Seconds, from a whole number of milliseconds in 1..`high`."""
    return _count(environ, variable, round(default * 1000), high, " of milliseconds") / 1000


def otlp_settings_from(environ: Mapping[str, str]) -> OtlpSettings:
    variable, endpoint = _traces_or_all(environ, "ENDPOINT")
    if variable == "OTEL_EXPORTER_OTLP_ENDPOINT" or not endpoint:
        endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/") + "/v1/traces"  # the base URL's signal path
    if not _is_http_url(endpoint):
        raise TelemetryConfigError(f"{variable}: an http(s) URL with a host (and a valid port) is needed")
    header_variable, raw_headers = _traces_or_all(environ, "HEADERS")
    headers = _pairs(header_variable, raw_headers) if raw_headers else {}
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name) or not _HEADER_VALUE.fullmatch(value):
            # http.client would refuse it at every export, and each batch would be lost
            raise TelemetryConfigError(f"{header_variable}: a header name or value HTTP does not allow")
    timeout_variable, _ = _traces_or_all(environ, "TIMEOUT")
    compression_variable, compression = _traces_or_all(environ, "COMPRESSION")
    if compression.lower() not in ("", "gzip", "none"):
        raise TelemetryConfigError(f"{compression_variable}: gzip or none, not {compression!r}")
    _, certificate = _traces_or_all(environ, "CERTIFICATE")
    return OtlpSettings(
        endpoint=endpoint,
        headers=headers,
        timeout=_milliseconds(environ, timeout_variable, 10.0, 600_000) if timeout_variable else 10.0,
        gzip=compression.lower() == "gzip",
        certificate=certificate or None,
    )


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not one)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def batch_settings_from(environ: Mapping[str, str]) -> BatchSettings:
    queue = _count(environ, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1_000_000)
    batch = _count(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", min(512, queue), 1_000_000)
    if batch > queue:
        raise TelemetryConfigError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE: larger than OTEL_BSP_MAX_QUEUE_SIZE")
    return BatchSettings(
        schedule_delay=_milliseconds(environ, "OTEL_BSP_SCHEDULE_DELAY", 5.0, 3_600_000),
        max_queue=queue,
        max_batch=batch,
        export_timeout=_milliseconds(environ, "OTEL_BSP_EXPORT_TIMEOUT", 30.0, 3_600_000),
    )


def resource_from(environ: Mapping[str, str]) -> dict[str, AttributeValue]:
    """The process as spans name it: `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME` above them, else `apimcp`."""
    raw = environ.get("OTEL_RESOURCE_ATTRIBUTES", "").strip()
    given = _pairs("OTEL_RESOURCE_ATTRIBUTES", raw) if raw else {}
    resource: dict[str, AttributeValue] = {
        "telemetry.sdk.name": "apimcp",
        "telemetry.sdk.language": "python",
        "telemetry.sdk.version": __version__,
        "service.version": __version__,
        **given,
    }
    resource["service.name"] = environ.get("OTEL_SERVICE_NAME", "").strip() or given.get(
        "service.name", DEFAULT_SERVICE_NAME
    )
    return resource
