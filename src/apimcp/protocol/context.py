"""The request context a handler receives: one API for both eras.

A handler reports progress, writes log messages and asks the client for input
(elicitation, sampling, roots) through this object without knowing how the
negotiated revision carries them:

- session era: notifications and server-to-client requests travel on the SSE
  stream that answers the POST, and `request_inputs` waits for the client's
  responses;
- 2026-07-28: notifications travel on the request's SSE stream, and
  `request_inputs` either returns the answers the client sent with this
  retry or stops the handler with `InputRequired`, which the engine turns
  into an `input_required` result. Handlers are re-run from the start on
  each retry, so input-request keys must be stable across runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from apimcp.protocol.caller import NO_SOURCE, Caller, RequestSource
from apimcp.protocol.errors import INVALID_REQUEST, McpError, MissingClientCapability
from apimcp.protocol.jsonrpc import JsonObject, RequestId
from apimcp.protocol.models import (
    LOG_LEVELS,
    InputRequest,
    LogLevel,
    elicitation_form,
    elicitation_url,
    roots_request,
    sampling_request,
)
from apimcp.protocol.versions import Revision

_LEVEL_RANK: dict[str, int] = {level: rank for rank, level in enumerate(LOG_LEVELS)}


class InputRequired(Exception):
    """Raised inside a 2026-07-28 handler: these inputs are needed before it can finish."""

    def __init__(self, requests: Mapping[str, InputRequest]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = dict(requests)


class Outbound(ABC):
    """How a context reaches the client; one implementation per era (see legacy.py and modern.py)."""

    @abstractmethod
    async def notify(self, method: str, params: JsonObject) -> None:
        """Send a notification related to the current request (dropped when it cannot stream)."""

    @abstractmethod
    async def request_inputs(self, ctx: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Obtain the client's response to each input request, by key."""


class ChangeNotifier(ABC):
    """Announces list changes and resource updates to every listening client."""

    @abstractmethod
    def tools_changed(self) -> None: ...

    @abstractmethod
    def prompts_changed(self) -> None: ...

    @abstractmethod
    def resources_changed(self) -> None: ...

    @abstractmethod
    def resource_updated(self, uri: str) -> None: ...


class RequestContext:
    """Everything a handler may know about, and do within, the request it serves."""

    __slots__ = (
        "_client_capabilities",
        "_client_info",
        "_key_counters",
        "_log_threshold",
        "_outbound",
        "changes",
        "meta",
        "method",
        "progress_token",
        "request_id",
        "revision",
        "session_id",
        "source",
        "state",
    )

    def __init__(
        self,
        *,
        revision: Revision,
        request_id: RequestId,
        method: str,
        meta: Mapping[str, Any],
        client_capabilities: Mapping[str, Any] | bytes,
        client_info: Mapping[str, Any] | bytes | None,
        session_id: str | None,
        log_level: str | None,
        outbound: Outbound,
        changes: ChangeNotifier,
        state: dict[str, Any] | None = None,
        source: RequestSource = NO_SOURCE,
    ) -> None:
        self.revision = revision
        self.request_id = request_id
        self.method = method
        self.meta = meta
        # Session records keep these as JSON: decoded only if someone looks at them.
        self._client_capabilities = client_capabilities
        self._client_info = client_info
        self.session_id = session_id
        self.changes = changes
        token = meta.get("progressToken")
        self.progress_token: str | int | None = token if isinstance(token, str | int) else None
        self._log_threshold = _LEVEL_RANK.get(log_level) if log_level is not None else None
        self._outbound = outbound
        self._key_counters: dict[str, int] = {}
        self.state: dict[str, Any] = state if state is not None else {}
        """Values a handler keeps across the rounds of a 2026-07-28 multi round-trip request."""
        self.source = source
        """Who sent the request, from where, with which HTTP headers."""

    @property
    def caller(self) -> Caller | None:
        """The authenticated caller, when an authentication layer established one."""
        return self.source.caller

    @property
    def client_capabilities(self) -> Mapping[str, Any]:
        value = self._client_capabilities
        if isinstance(value, bytes):
            value = self._client_capabilities = orjson.loads(value)
        return value

    @property
    def client_info(self) -> Mapping[str, Any] | None:
        value = self._client_info
        if isinstance(value, bytes):
            value = self._client_info = orjson.loads(value)
        return value

    def redirect(self, outbound: Outbound) -> Outbound:
        """Reach the client through `outbound` from now on (a call that goes on as a task); the previous way."""
        previous, self._outbound = self._outbound, outbound
        return previous

    def has_client_capability(self, name: str) -> bool:
        return name in self.client_capabilities

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; a no-op unless the client asked for it with a progress token."""
        if self.progress_token is None:
            return
        params: JsonObject = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._outbound.notify("notifications/progress", params)

    def logs(self, level: LogLevel) -> bool:
        """Whether a message at `level` would reach the client."""
        return self._log_threshold is not None and _LEVEL_RANK[level] >= self._log_threshold

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message about this request, if the client's log level lets it through."""
        if not self.logs(level):
            return
        params: JsonObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._outbound.notify("notifications/message", params)

    async def request_inputs(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """The client's response to each request, by key (all asked at once)."""
        if not requests:
            return {}
        return await self._outbound.request_inputs(self, requests)

    def occurrence(self, what: str) -> int:
        """How many times `what` was counted before in this round of the request (0 the first time): a handler
        that runs again from its start in each round finds the same count at the same step."""
        name = f"occurrence:{what}"  # beside the kinds of `_next_key`, which hold no colon
        count = self._key_counters.get(name, 0)
        self._key_counters[name] = count + 1
        return count

    def _next_key(self, kind: str, key: str | None) -> str:
        if key is not None:
            return key
        count = self._key_counters.get(kind, 0) + 1
        self._key_counters[kind] = count
        return f"{kind}_{count}"

    async def _ask(self, kind: str, key: str | None, request: InputRequest) -> Any:
        name = self._next_key(kind, key)
        return (await self.request_inputs({name: request}))[name]

    async def elicit(
        self, message: str, requested_schema: Mapping[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the user to fill a form; returns the ElicitResult (`action`, `content`)."""
        return await self._ask("elicitation", key, elicitation_form(message, requested_schema))  # type: ignore[no-any-return]

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None
    ) -> dict[str, Any]:
        """Send the user to `url` (for secrets and third-party consent); returns the ElicitResult."""
        return await self._ask("elicitation", key, elicitation_url(message, url, elicitation_id))  # type: ignore[no-any-return]

    async def sample(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int, *, key: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Ask the client's model for a completion; returns the CreateMessageResult."""
        return await self._ask("sampling", key, sampling_request(messages, max_tokens, **extra))  # type: ignore[no-any-return]

    async def list_roots(self, *, key: str | None = None) -> dict[str, Any]:
        """Ask the client for its roots; returns the ListRootsResult."""
        return await self._ask("roots", key, roots_request())  # type: ignore[no-any-return]


def check_input_response(key: str, response: object) -> dict[str, Any]:
    """An input response must be a JSON object; anything else is the client's error."""
    if not isinstance(response, dict):
        raise McpError(-32602, f"inputResponses[{key!r}] must be an object", {"field": f"inputResponses.{key}"})
    return response


def check_client_supports(request: InputRequest, revision: Revision, capabilities: Mapping[str, Any]) -> None:
    """A server must not send a request type the revision or the client's capabilities lack."""
    capability = request.capability
    declared = capabilities.get(capability)
    if request.method == "elicitation/create":
        url_mode = request.params.get("mode", "form") == "url"
        if not (revision.url_elicitation if url_mode else revision.structured_output):
            kind = "URL elicitation" if url_mode else "elicitation"
            raise McpError(INVALID_REQUEST, f"Protocol {revision} has no {kind}; it needs a newer client")
        if url_mode:
            if not isinstance(declared, dict) or "url" not in declared:
                raise MissingClientCapability({"elicitation": {"url": {}}})
            return
        if declared is None:
            raise MissingClientCapability({"elicitation": {}})
        if isinstance(declared, dict) and declared and "form" not in declared:
            raise MissingClientCapability({"elicitation": {"form": {}}})
        return
    if declared is None:
        raise MissingClientCapability({capability: {}})
