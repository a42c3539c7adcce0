"""The `rs` API on the Python side: host functions called from the worker thread relaying a script (its
process forwards each call there: `sandbox`).

Each tool call is scheduled on the event loop with `run_coroutine_threadsafe`; `rs.callTool`
then blocks the worker thread (never the loop) until the call ends, and `rs.callToolAsync`
returns at once so several calls run concurrently until `rs.awaitPromises`. Everything crossing
from JavaScript is a JSON text, parsed and checked here: this is the sandbox's boundary.

Host functions answer `[0, value]`, or `[1, message]` which the prelude throws as an Error: a
refused call (a tool outside the allow-list, the call budget spent, the deadline passed, the run
cancelled or already failed) throws inside the script, so it cannot go unnoticed, and surfaces as
the tool's error result unless the script catches it. Once the deadline passes or the run is
cancelled, every host function refuses and the engine is interrupted, so the script stops even
in a loop that calls nothing.

Each tool call runs in a copy of the context of the request that started the script (contextvars:
the request's span, for one), as a call the handler made itself would.

A call that needs the user first (a credential asked for by URL elicitation: `UrlElicitationRequired` in a
session, `InputRequired` in 2026-07-28) stops the run: the runner raises it to the client, who retries the
whole call once the user has answered (`needs_input`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

import orjson

from apimcp.artifacts.scripting.limits import ScriptLimits
from apimcp.artifacts.scripting.script import Script, ToolRef
from apimcp.protocol.context import InputRequired
from apimcp.protocol.dispatch import ToolError
from apimcp.protocol.errors import INTERNAL_ERROR, REQUEST_CANCELLED, McpError, UrlElicitationRequired
from apimcp.protocol.models import NO_VALUE, CallToolResult, RawJson, TextContent

log = logging.getLogger("apimcp.artifacts.scripting")

Invoke = Callable[[ToolRef, Mapping[str, Any], int], Coroutine[Any, Any, CallToolResult]]
"""How a script reaches a tool: (which tool, its arguments, the depth of that inner call).

The gateway provides it, with the same validation, credentials and filters as a client's call.
"""


class Refused(Exception):
    """A host function's refusal; its message is thrown inside the script."""


class Interruptible(Protocol):
    def interrupt(self) -> None:
        """Stop the script's JavaScript soon, from any thread."""


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(value: Any) -> str:
    """Compact JSON of tool results and inputs (Mappings and Sequences allowed)."""
    return orjson.dumps(value, default=_plain).decode()


def _answer(value: Any) -> str:
    return dumps([0, value])


def _refusal(message: str) -> str:
    return dumps([1, message])


def _failure(code: int | None, message: str) -> str:
    return dumps({"ok": False, "content": None, "error": {"code": code, "message": message}})


def _content(result: CallToolResult) -> Any:
    """The structured content, else the text parsed as JSON, else the text (None without text)."""
    structured = result.structured_content
    if isinstance(structured, RawJson):  # serialized already: it goes into the script's JSON as it is
        return orjson.Fragment(structured.data)
    if structured is not NO_VALUE:
        return structured
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    if not texts:
        return None
    text = "\n".join(texts)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


class Host:
    """One run's host functions and state: call budget, pending calls, deadline, stop reason.

    Made on the event loop, in the task of the request the run serves."""

    def __init__(
        self,
        script: Script,
        limits: ScriptLimits,
        invoke: Invoke,
        depth: int,
        loop: asyncio.AbstractEventLoop,
        deadline: float,
    ) -> None:
        self._script = script
        self._limits = limits
        self._invoke = invoke
        self._depth = depth
        self._loop = loop
        self.deadline = deadline
        """`time.monotonic()` at which the run times out."""
        self._lock = threading.Lock()
        self._calls = 0
        self._handles: dict[int, tuple[ToolRef, concurrent.futures.Future[CallToolResult]]] = {}
        self._started = 0
        """Calls started so far: the next one's handle (a program's wait forgets the handles of calls that ended, so
        their count is no handle that is free)."""
        self._in_flight: set[concurrent.futures.Future[CallToolResult]] = set()
        self._stopped: str | None = None
        self._engine: Interruptible | None = None
        self._context = contextvars.copy_context()
        self.failure: tuple[str, Any] | None = None
        """(message, data) of `rs.fail`, which decides the result whatever the script does next."""
        self.needs_input: InputRequired | UrlElicitationRequired | None = None
        """What the first call that needed the user asked for: the run stops, and this is the caller's answer."""

    @property
    def functions(self) -> dict[str, Callable[[str], str]]:
        return {
            "call": self.call, "start": self.start, "await": self.wait, "fail": self.fail, "ready": self.ready,
            "next": self.next,
        }  # fmt: skip

    @property
    def fallback(self) -> str:
        """What a host function answers if it has a bug (it is logged)."""
        return _refusal(f"{self._script.subject} hit an internal error in the gateway")

    def timeout_message(self) -> str:
        return f"{self._script.subject} timed out after {self._limits.timeout_seconds:g} s"

    # --- called on the event loop --------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Refuse everything from now on, cancel the tool calls under way and interrupt the engine (thread-safe)."""
        with self._lock:
            if self._stopped is None:
                self._stopped = reason
            pending = list(self._in_flight)
            engine = self._engine
        for future in pending:
            future.cancel()
        if engine is not None:
            engine.interrupt()

    @property
    def stopped(self) -> str | None:
        """Why the run was stopped (its deadline, a cancellation), or None."""
        return self._stopped

    def attach(self, engine: Interruptible) -> None:
        """The engine running the script, interrupted by `stop` (at once if the run is stopped already)."""
        with self._lock:
            self._engine = engine
            stopped = self._stopped is not None
        if stopped:
            engine.interrupt()

    def finish(self) -> None:
        """Cancel the calls the script started and never awaited: nothing runs on its behalf after it."""
        self.stop(f"{self._script.subject} has finished")

    # --- called in the worker thread, from JavaScript ------------------------------------------

    def ready(self, _: str) -> str:
        return _answer(None)

    def call(self, request: str) -> str:
        try:
            ref, future = self._begin(request, "rs.callTool")
            return f"[0,{self._settle([(ref, future)])[0]}]"
        except Refused as refusal:
            return _refusal(str(refusal))

    def start(self, request: str) -> str:
        try:
            ref, future = self._begin(request, "tools.<name>" if self._script.kind == "program" else "rs.callToolAsync")
        except Refused as refusal:
            return _refusal(str(refusal))
        with self._lock:
            handle = self._started
            self._started += 1
            self._handles[handle] = (ref, future)
        return _answer(handle)

    def wait(self, request: str) -> str:
        try:
            handles = orjson.loads(request)
            with self._lock:
                calls = [self._handles[handle] for handle in handles]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return _refusal("rs.awaitPromises expects handles returned by rs.callToolAsync")
        if len(calls) > self._limits.max_calls:  # a run starts no more calls than that: the rest are repeats
            return _refusal(f"rs.awaitPromises takes at most {self._limits.max_calls} promises (a run's calls)")
        try:
            return f"[0,[{','.join(self._settle(calls))}]]"
        except Refused as refusal:
            return _refusal(str(refusal))

    def next(self, request: str) -> str:
        """A program's wait: the outcomes of the first of these calls to end (of all that have ended by then), as
        `[[handle, outcome], ...]`; refused once the deadline passes or the run is stopped."""
        try:
            handles = orjson.loads(request)
            with self._lock:
                calls = {handle: self._handles[handle] for handle in handles}
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return _refusal("the program waits for calls it never started")
        futures = {future for _, future in calls.values()}
        if not futures:  # the prelude never asks for nothing; anything else would wait for its deadline
            return _refusal("the program waits for no call")
        done, _ = concurrent.futures.wait(
            futures, timeout=max(self.deadline - time.monotonic(), 0), return_when=concurrent.futures.FIRST_COMPLETED
        )
        if not done:
            self.stop(self.timeout_message())
        with self._lock:
            if self._stopped is not None:
                return _refusal(self._stopped)
            ended = [handle for handle, (_, future) in calls.items() if future.done()]
            for handle in ended:
                del self._handles[handle]
        texts = self._outcomes([calls[handle] for handle in ended])
        outcomes = ",".join(f"[{handle},{text}]" for handle, text in zip(ended, texts, strict=True))
        return f"[0,[{outcomes}]]"

    def fail(self, request: str) -> str:
        if _utf8_length(request) > self._limits.max_result_bytes:
            return _refusal(f"the data of rs.fail exceed {self._limits.max_result_bytes} bytes of JSON")
        try:
            message, data = orjson.loads(request)
        except (ValueError, TypeError):  # orjson.JSONDecodeError is a ValueError
            return _refusal("rs.fail(message, data) needs JSON data")
        with self._lock:
            if self.failure is None:
                self.failure = (str(message), data)
        return _answer(None)

    def _begin(self, request: str, api: str) -> tuple[ToolRef, concurrent.futures.Future[CallToolResult]]:
        name = self._script.subject
        if _utf8_length(request) > self._limits.max_result_bytes:  # the prelude checks UTF-16 units first
            raise Refused(f"{api}: the arguments exceed {self._limits.max_result_bytes} bytes of JSON")
        try:
            service, tool, arguments = orjson.loads(request)
        except (ValueError, TypeError) as exc:
            raise Refused(f"{api}: the arguments must be JSON") from exc
        if not isinstance(tool, str):
            raise Refused(f"{api}: the tool name must be a string")
        if service is not None and not isinstance(service, str):
            raise Refused(f"{api}: the service must be a string 'Name:version'")
        if not isinstance(arguments, dict):
            raise Refused(f"{api}: the arguments of tool '{tool}' must be an object")
        ref = ToolRef(service, tool)
        allowed = self._script.allowed
        if allowed is not None and ref not in allowed:
            raise Refused(f"{name} may not call {ref}: it is not declared in its tools")
        with self._lock:
            self._check_running()
            if self._calls >= self._limits.max_calls:
                raise Refused(f"{name} may make at most {self._limits.max_calls} tool calls per run")
            self._calls += 1
            try:
                future = asyncio.run_coroutine_threadsafe(self._call(ref, arguments), self._loop)
            except RuntimeError as exc:  # the loop is closed: the gateway is stopping
                raise Refused(f"{name} cannot call {ref}: the gateway is stopping") from exc
            self._in_flight.add(future)
        future.add_done_callback(self._landed)
        return ref, future

    async def _call(self, ref: ToolRef, arguments: dict[str, Any]) -> CallToolResult:
        # The task `run_coroutine_threadsafe` made has the worker thread's (empty) context: the call runs in the
        # request's instead, and is cancelled with this task.
        call = self._invoke(ref, arguments, self._depth + 1)
        return await self._loop.create_task(call, context=self._context.copy())

    def _landed(self, future: concurrent.futures.Future[CallToolResult]) -> None:
        with self._lock:
            self._in_flight.discard(future)
        asked = None if future.cancelled() else future.exception()
        if isinstance(asked, InputRequired | UrlElicitationRequired):
            with self._lock:
                if self.needs_input is None:
                    self.needs_input = asked
            self.stop(f"{self._script.subject} needs the user to supply a credential first")

    def _check_running(self) -> None:
        """Under the lock: refuse when stopped, past the deadline or failed."""
        if self._stopped is None and time.monotonic() >= self.deadline:
            self._stopped = self.timeout_message()
        if self._stopped is not None:
            raise Refused(self._stopped)
        if self.failure is not None:
            raise Refused(f"{self._script.subject} has already failed with rs.fail")

    def _settle(self, calls: Sequence[tuple[ToolRef, concurrent.futures.Future[CallToolResult]]]) -> list[str]:
        """Wait for the calls until the deadline; the JSON text of each one's outcome."""
        futures = {future for _, future in calls}
        _, waiting = concurrent.futures.wait(futures, timeout=max(self.deadline - time.monotonic(), 0))
        if waiting:
            self.stop(self.timeout_message())
        with self._lock:
            if self._stopped is not None:
                raise Refused(self._stopped)
        return self._outcomes(calls)

    def _outcomes(self, calls: Sequence[tuple[ToolRef, concurrent.futures.Future[CallToolResult]]]) -> list[str]:
        """Each call's outcome as JSON, all of them together within what the script can hold (half its memory: the
        text, then the values read from it): a result past what is left is a failure that says so, never written
        into the answer (a program may wait for a hundred calls of 10 MiB each)."""
        room = half = self._limits.memory_bytes // 2
        outcomes = []
        written: dict[int, str] = {}  # a call waited for twice is written once
        for ref, future in calls:
            outcome = written.get(id(future))
            if outcome is None:
                outcome = written[id(future)] = self._outcome(ref, future)
            if len(outcome) > room:
                outcome = _failure(
                    None,
                    f"the result of {ref} is {len(outcome):,} characters of JSON, more than the script can take in at "
                    f"once ({half:,}: half its memory)",
                )
            room -= len(outcome)
            outcomes.append(outcome)
        return outcomes

    def _outcome(self, ref: ToolRef, future: concurrent.futures.Future[CallToolResult]) -> str:
        """What the script sees of one call, {ok, content, error}, as JSON: failures never throw."""
        try:
            result = future.result(timeout=0)
        except McpError as exc:
            return _failure(exc.code, exc.message)
        except ToolError as exc:
            return _failure(None, str(exc))
        except concurrent.futures.CancelledError:
            return _failure(REQUEST_CANCELLED, f"the call to {ref} was cancelled")
        except InputRequired:  # the run stops (`needs_input`)
            return _failure(None, f"the call to {ref} needs the user first")
        except Exception:
            log.exception("custom tool %r: calling %s failed", self._script.tool_name, ref)
            return _failure(INTERNAL_ERROR, f"the call to {ref} failed with an internal error")
        error = None
        if result.is_error:
            texts = [block.text for block in result.content if isinstance(block, TextContent)]
            error = {"code": None, "message": "\n".join(texts) or f"{ref} returned an error"}
        try:
            return dumps({"ok": not result.is_error, "content": _content(result), "error": error})
        except TypeError:  # orjson.JSONEncodeError too: not JSON, or a str with lone surrogates
            return _failure(INTERNAL_ERROR, f"the result of {ref} is not JSON")


def _utf8_length(text: str) -> int:
    """Bytes of `text` in UTF-8, a lone surrogate as the three bytes it takes (`isascii` is read, not computed)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
