"""Which of a client's request headers a backend receives: a plan's header policy.

- Always dropped: hop-by-hop headers, the MCP transport's own (`Mcp-Session-Id`, `MCP-Protocol-Version`,
  `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), the inbound API-key headers, and what the gateway sets itself
  (Host, Content-Length, Content-Type, Accept…).
- Denied unless allowed: `Authorization` and `Cookie` (the client's token is for the gateway: passing it on is
  the "token passthrough" MCP forbids, so it takes an explicit `passthrough` or `allow`); the headers proxies
  use to tell a backend who calls (`X-Real-IP`, `X-Forwarded-User`, `Remote-User`, `X-Auth-Request-*`…) or to
  rewrite a request (`X-Original-URL`, `X-HTTP-Method-Override`), which a client must not be able to claim;
  and conditional and range headers, whose answers (304, 206) a tool cannot use.
- `allow`, when not empty, is the whole list of what may pass; `deny` adds to the default denials.
- `rename` (`From:To`) passes a header on under another name, whatever allow and deny say of the source
  (renaming is an explicit choice); a missing source is no change. The backend's own credentials win over
  any header passed on.
- Gateway-managed: W3C `traceparent` and `tracestate` are passed on when well-formed, and `Forwarded` /
  `X-Forwarded-For` name the client (appended to what earlier proxies wrote), unless `forwarded` is off.
  With tracing on, the backend call's own span replaces the client's trace context (`with_trace_context`,
  used by `apimcp.telemetry.backend_calls`): same trace, the gateway's span as parent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apimcp.protocol.caller import RequestSource

BASELINE = frozenset(
    {"host", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
     "trailer", "transfer-encoding", "upgrade", "content-length", "content-type", "accept", "accept-encoding",
     "expect", "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
     "x-api-key", "x-reshapr-key", "forwarded", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host",
     "traceparent", "tracestate", "origin", "user-agent"}
)  # fmt: skip
"""Never passed on as a client sent it (the gateway writes its own Forwarded, trace and user-agent headers)."""
DEFAULT_DENY = frozenset(
    {"authorization", "cookie",
     # who the caller is, as proxies in front of a backend tell it: a client must not be able to claim it
     "x-real-ip", "true-client-ip", "cf-connecting-ip", "x-client-ip", "x-cluster-client-ip", "remote-user",
     "x-remote-user", "x-forwarded-user", "x-forwarded-email", "x-forwarded-groups", "x-forwarded-preferred-username",
     "x-auth-request-user", "x-auth-request-email", "x-auth-request-groups", "x-auth-request-access-token",
     "x-original-url", "x-rewrite-url", "x-original-uri", "x-http-method-override", "x-http-method",
     "x-method-override", "x-original-host", "x-forwarded-port", "x-forwarded-prefix", "x-forwarded-scheme",
     "x-forwarded-server", "x-forwarded-ssl",
     # what would change the answer's shape: a partial or an empty (304) body the tool cannot use
     "range", "if-range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since"}
)  # fmt: skip
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
"""A header name (RFC 9110 token), whole: `fullmatch` (a `$` would let a final line break through)."""
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")
_GATEWAY_READ = frozenset({"traceparent", "tracestate", "forwarded", "x-forwarded-for"})
"""Headers of the client's that `headers_for` reads (and writes anew) although they never pass on as sent."""
MAX_TRACESTATE = 512
MAX_FORWARDED = 2048
_FIELDS = frozenset({"allow", "deny", "rename", "passthrough", "forwarded"})


class HeaderPolicyError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class HeaderPolicy:
    allow: frozenset[str] = frozenset()
    """When not empty, nothing else passes under its own name."""
    denied: frozenset[str] = DEFAULT_DENY
    """The default denials and the plan's `deny`, less what it allows."""
    rename: Mapping[str, str] = field(default_factory=dict)
    """lower-case source name -> name the backend receives."""
    forwarded: bool = True
    _skipped: frozenset[bytes] = field(init=False, repr=False, compare=False)
    """Names (as ASGI gives them: lower-case bytes) of headers never passed on nor read here, which a request's
    headers are checked against before anything is decoded: most of a request's headers are these."""

    def __post_init__(self) -> None:
        never = (BASELINE - _GATEWAY_READ) | (self.denied - self.rename.keys())
        object.__setattr__(self, "_skipped", frozenset(name.encode("latin-1") for name in never))

    def passes(self, name: str) -> bool:
        """Whether a client header called `name` (lower case) is passed on under its own name."""
        if name in BASELINE or name.startswith("mcp-param-") or name in self.denied:
            return False
        return not self.allow or name in self.allow

    def headers_for(self, source: RequestSource) -> dict[str, str]:
        """What a backend call made for the request `source` describes adds to its headers."""
        out: dict[str, str] = {}
        prior_forwarded: list[str] = []
        prior_for: list[str] = []
        rename = self.rename
        skipped = self._skipped
        host: bytes | None = None
        hop_by_hop: bytes | None = None
        for raw_name, raw_value in source.headers:
            if raw_name in skipped:
                if raw_name == b"host":  # the last, as the Host check reads it (`protocol.security`)
                    host = raw_value
                elif raw_name == b"connection":
                    hop_by_hop = raw_value if hop_by_hop is None else hop_by_hop + b"," + raw_value
                continue
            if raw_name.startswith(b"mcp-param-"):
                continue
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            if name in rename:
                out[rename[name]] = value
            elif name == "traceparent":
                if _TRACEPARENT.fullmatch(value):
                    out["traceparent"] = value
            elif name == "tracestate":
                if len(value) <= MAX_TRACESTATE:
                    out["tracestate"] = value
            elif name == "forwarded":
                prior_forwarded.append(value)
            elif name == "x-forwarded-for":
                prior_for.append(value)
            elif self.passes(name):
                out[name] = f"{out[name]}, {value}" if name in out else value
        if hop_by_hop is not None:  # what Connection names is for the gateway alone (RFC 9110, 7.6.1)
            for listed in hop_by_hop.decode("latin-1").lower().split(","):
                name = listed.strip()
                if name not in rename:
                    out.pop(name, None)
        if "tracestate" in out and "traceparent" not in out:
            del out["tracestate"]  # meaningless alone (W3C Trace Context, section 3.3)
        if self.forwarded and source.client:
            self._forward(out, source.client, source.scheme, host, prior_forwarded, prior_for)
        return out

    @staticmethod
    def _forward(
        out: dict[str, str], client: str, scheme: str, host: bytes | None, prior: list[str], prior_for: list[str]
    ) -> None:
        element = _element(client, scheme, host)
        chain = ", ".join([*prior, element]) if prior else element
        chain_for = ", ".join([*prior_for, client]) if prior_for else client
        # an overlong chain from the client is not carried on: only this hop is
        out["forwarded"] = chain if len(chain) <= MAX_FORWARDED else element
        out["x-forwarded-for"] = chain_for if len(chain_for) <= MAX_FORWARDED else client


def _element(client: str, scheme: str, host: bytes | None) -> str:
    """This hop's `Forwarded` element (RFC 7239): the same few clients, schemes and hosts over and over, so kept."""
    key = (client, scheme, host)
    element = _ELEMENTS.get(key)
    if element is None:
        node = f'"[{client}]"' if ":" in client else client
        element = f"for={node};proto={scheme}"
        if host is not None and _TOKEN.fullmatch(host.decode("latin-1").replace(":", "")):
            element += f";host={host.decode('latin-1')}"
        if len(_ELEMENTS) >= _MAX_ELEMENTS:
            _ELEMENTS.clear()
        _ELEMENTS[key] = element
    return element


_ELEMENTS: dict[tuple[str, str, bytes | None], str] = {}
_MAX_ELEMENTS = 4096
NO_POLICY = HeaderPolicy()
TRACE_HEADERS = ("traceparent", "tracestate")


def with_trace_context(headers: Mapping[str, str], trace: Mapping[str, str], *, own: bool = False) -> dict[str, str]:
    """`headers` (as `headers_for` made them) with the trace context `trace` gives instead of the client's, under
    the same rules: a malformed `traceparent` is not sent, nor a `tracestate` without one. `own`: `trace` is the
    gateway's own span's (`telemetry.spans`), whose `traceparent` is well-formed as written, so not read again."""
    if "traceparent" in headers or "tracestate" in headers:
        out = {name: value for name, value in headers.items() if name not in TRACE_HEADERS}
    else:
        out = dict(headers)
    parent = trace.get("traceparent")
    if parent is not None and (own or _TRACEPARENT.fullmatch(parent)):
        out["traceparent"] = parent
        state = trace.get("tracestate")
        if state and len(state) <= MAX_TRACESTATE:
            out["tracestate"] = state
    return out


def _names(raw: object, where: str) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, list | tuple) or not all(isinstance(n, str) for n in raw):
        raise HeaderPolicyError(f"{where} is a list of header names", where)
    for name in raw:
        if not _TOKEN.fullmatch(name):
            raise HeaderPolicyError(f"{where}: {name!r} is not a header name", where)
    return frozenset(name.lower() for name in raw)


def _renames(raw: object, where: str) -> dict[str, str]:
    pairs: Iterable[tuple[Any, Any]]
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        pairs = raw.items()
    elif isinstance(raw, list | tuple) and all(isinstance(r, str) and ":" in r for r in raw):
        pairs = (tuple(r.split(":", 1)) for r in raw)
    else:
        raise HeaderPolicyError(f"{where} maps header names to new names (or lists 'From:To')", where)
    out = {}
    for given_source, given_target in pairs:
        if not isinstance(given_source, str) or not isinstance(given_target, str):
            raise HeaderPolicyError(f"{where} maps header names to header names", where)
        source, target = given_source.strip(), given_target.strip()
        for name in (source, target):
            if not _TOKEN.fullmatch(name):
                raise HeaderPolicyError(f"{where}: {name!r} is not a header name", where)
        if source.lower() in BASELINE or source.lower().startswith("mcp-"):
            raise HeaderPolicyError(f"{where}: {source} is the gateway's own and cannot be passed on", where)
        if target.lower() in BASELINE:
            raise HeaderPolicyError(f"{where}: {target} is set by the gateway itself", where)
        out[source.lower()] = target
    return out


def parse_header_policy(raw: object, where: str = "header_policy") -> HeaderPolicy:
    """A policy from `{allow, deny, rename, passthrough, forwarded}`; empty or None: the defaults."""
    if raw is None:
        return NO_POLICY
    if not isinstance(raw, Mapping):
        raise HeaderPolicyError(f"{where} must be an object", where)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise HeaderPolicyError(f"{where} has no field {unknown[0]!r}", f"{where}.{unknown[0]}")
    allow = _names(raw.get("allow"), f"{where}.allow")
    passthrough = raw.get("passthrough", False)
    forwarded = raw.get("forwarded", True)
    for name, value in (("passthrough", passthrough), ("forwarded", forwarded)):
        if not isinstance(value, bool):
            raise HeaderPolicyError(f"{where}.{name} is true or false", f"{where}.{name}")
    if passthrough and allow:
        raise HeaderPolicyError(
            f"{where}: passthrough lets Authorization through; with an allow list, add Authorization to it instead",
            f"{where}.passthrough",
        )
    for name in allow:
        if name in BASELINE:
            raise HeaderPolicyError(f"{where}.allow: {name} is the gateway's own and never passed on", f"{where}.allow")
    deny = _names(raw.get("deny"), f"{where}.deny")
    denied = (DEFAULT_DENY | deny) - allow - ({"authorization"} if passthrough else set())
    return HeaderPolicy(allow=allow, denied=denied, rename=_renames(raw.get("rename"), f"{where}.rename"),
                        forwarded=forwarded)  # fmt: skip


def normalized(raw: object, where: str = "header_policy") -> dict[str, Any] | None:
    """The policy as stored: checked, names in lower case; None for the defaults."""
    if raw is None or raw == {}:
        return None
    parse_header_policy(raw, where)
    assert isinstance(raw, Mapping)
    out: dict[str, Any] = {}
    for key in ("allow", "deny"):
        if raw.get(key):
            out[key] = sorted(_names(raw[key], f"{where}.{key}"))
    if raw.get("rename"):
        out["rename"] = _renames(raw["rename"], f"{where}.rename")
    for key in ("passthrough", "forwarded"):
        if key in raw:
            out[key] = raw[key]
    return out
