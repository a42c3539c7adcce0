"""The Backend interface and the neutral results every backend returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apimcp.backends.credentials import Placement
from apimcp.catalog.model import Operation
from apimcp.protocol.json_writing import unwritable_reason
from apimcp.protocol.models import CallToolResult, InputRequest, LogLevel
from apimcp.safety.masking import NO_MASK, SecretMask


@dataclass(frozen=True, slots=True)
class JsonBody:
    """A JSON answer: its value, and its compact text."""

    value: Any
    text: str
    status: int = 200
    notes: tuple[str, ...] = ()
    """Remarks the client should see beside the value (a GraphQL answer's errors next to partial data)."""


@dataclass(frozen=True, slots=True)
class TextBody:
    text: str
    media_type: str
    status: int = 200
    unread: str = ""
    """Why an answer that says it is JSON is text: what stopped its reading (`unread_json`)."""


@dataclass(frozen=True, slots=True)
class BinaryBody:
    data: bytes
    media_type: str
    uri: str
    """Where it came from (without credentials), to name the content for the client."""
    status: int = 200


@dataclass(frozen=True, slots=True)
class EmptyBody:
    status: int


@dataclass(frozen=True, slots=True)
class Failure:
    """The call did not succeed: an error status, a timeout, a refused connection..."""

    message: str
    status: int | None = None
    transient: bool = False
    """The backend could not be reached or said it could not answer now (a refused or dropped connection, a
    timeout, 502, 503, 504, gRPC UNAVAILABLE): the same call may succeed later (`apimcp.resilience`)."""
    unsent: bool = False
    """The request never reached the backend (no connection could be made, or its address is refused): any call may
    be made elsewhere."""
    local: bool = False
    """The gateway failed the call before any request was made (its arguments, the credentials to send): it says
    nothing of the backend's health, and would fail the same elsewhere."""


def unread_json(exc: Exception) -> str:
    """Why a JSON answer could not be read (`exc`: orjson's `JSONDecodeError`), never quoting it."""
    said = str(exc)
    if "infinity" in said:  # valid JSON, but no reader that uses doubles (JavaScript's included) can hold it
        return "it holds a number beyond the range of a double"
    if "depth limit" in said:
        return "it is nested more than 1,024 levels deep"
    return "it is not valid JSON"


def unpassable(exc: Exception) -> Failure:
    """A backend's JSON answer that parsed but cannot be written again (`exc`: orjson's `JSONEncodeError`): a tool
    error that says why, not an internal one."""
    return Failure(f"The backend's JSON answer cannot be passed on: {unwritable_reason(exc)}.")


ReadAnswer = JsonBody | TextBody | Failure
AnswerReader = Callable[[bytes, int, str], ReadAnswer]
"""(bytes, status, media type) → what a backend makes of a JSON answer; a module-level function, so that a
shaping process can run it (`UnparsedJson`)."""


@dataclass(frozen=True, slots=True)
class UnparsedJson:
    """A JSON answer of at least the backend's `large_from_bytes`, as its (masked) bytes, unparsed.

    Building the value of a large answer holds the event loop (a 5.6 MB list took 80 ms to parse, 70 ms more
    for each full collection while it lived, tens to free): the backend leaves that to whoever needs it, and
    `read` says what it would have answered, run where that may take time (the gateway's shaping processes).
    """

    data: bytes
    read: AnswerReader
    status: int = 200
    media_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What an upstream MCP server's tool answered: already a tool result (checked by `federation.results`),
    which the gateway passes on as it is."""

    result: CallToolResult
    status: int = 200


@dataclass(frozen=True, slots=True)
class McpResult:
    """What an upstream MCP server answered to a request other than a tool call (`prompts/get`, `resources/read`):
    its result object, which the gateway reads (`federation.offerings`)."""

    value: Mapping[str, Any]
    status: int = 200


BackendResult = JsonBody | TextBody | BinaryBody | EmptyBody | Failure | UnparsedJson | ToolAnswer | McpResult

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Reports progress of a long call to the client: (progress, total or None, message or None)."""


AskClient = Callable[[Mapping[str, InputRequest]], Awaitable[dict[str, Any]]]
"""Asks the client of the call's request (elicitation, sampling, roots) on an upstream MCP server's behalf, in the
client's own dialect: each answer by key (a 2026-07-28 client's `InputRequired` propagates: the call runs again)."""
LogToClient = Callable[[LogLevel, Any, "str | None"], Awaitable[None]]
"""Sends a log message to the client of the call's request, when its log level lets it through."""


@dataclass(frozen=True, slots=True)
class CallClient:
    """The client of the request a call is made for, as an upstream MCP server talks to it during the call."""

    ask: AskClient
    capabilities: Mapping[str, Any]
    """What the client declared (a 2026-07-28 server is told, so that it asks only what the client can answer)."""
    log: LogToClient


@dataclass(frozen=True, slots=True)
class CallExtras:
    """What one call adds to what the backend always sends: headers passed on from the client (trace context,
    what a header policy lets through) and credentials of the user the call is made for, with their mask."""

    headers: Mapping[str, str] = field(default_factory=dict)
    """Added first: the backend's own credentials and the user's win over them."""
    credentials: Placement | None = None
    mask: SecretMask = NO_MASK
    client: CallClient | None = None
    """For an MCP server's calls: the client it may talk to (None: what it asks is answered an error)."""

    def __bool__(self) -> bool:
        return bool(self.headers) or self.credentials is not None


class Backend(ABC):
    """Calls the operations of one service."""

    @abstractmethod
    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        """Call `operation`; `progress` is given only when the client asked to hear about progress; `extras`
        when the call carries more than the backend's own credentials."""

    async def close(self) -> None:  # noqa: B027 - optional hook, most backends share their connections
        """Release connections (the default holds none)."""
