"""Every tool call an exposition answers takes one path: a check before it, a record after it.

A client's own `tools/call`, a script's call to a tool of its own exposition and a script's `Service:version`
call into another exposition all go through the `CallPath` of the exposition whose tool is called:

- before: that exposition's rate limits. A script's call spends a token of the exposition's bucket and of its
  caller's, as a request does; a client's call spent its tokens when its HTTP request arrived
  (`gateway/app.py`), so it is not counted twice. A refused call raises an `McpError` saying whose limit it
  reached, as the door's 429 does: the script sees `{ok: false, error}`, the audit trail a `refused` call with
  status 429, the limit's reason and its `retry_after`.
- after: that exposition's audit trail and telemetry hear of a script's call, with the custom tool whose
  script made it (`via`) and the caller it was made for; a client's call is heard of as the request it is
  (`protocol/observe.py`), so not twice either.

- before everything: the exposition's policies (`apimcp.policies`), for every call, a client's or a script's. A
  denied call is a tool error naming the rule, told to the observers (`call_denied`: the audit trail keeps the
  rule's name); one an `approve` rule holds waits for a person's answer (`approval.py`), or an administrator's
  (`admin_approval.py`, through the control plane), told as `call_approval`;
  an allowed one has the fields `redact` rules name hidden in its answer.
- around the call: the plan's guardrails (`apimcp.guardrails`), on its arguments and on its answer; what they find
  is told to the observers (`call_guarded`), and one may block the call or withhold its answer.

What every call needs checked, whoever makes it, belongs here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from apimcp.gateway.results import error_result
from apimcp.gateway.tool_entries import ToolEntry
from apimcp.guardrails.chain import Guardrails, Heard
from apimcp.guardrails.hooks import GuardedCall
from apimcp.policies import approval
from apimcp.policies.admin_approval import AdminAsk, ask_admin
from apimcp.policies.approval import APPROVAL_SECONDS
from apimcp.policies.decisions import ALLOWED, CallFacts
from apimcp.policies.policy_set import PolicySet
from apimcp.protocol import CallToolResult, RequestContext, ToolError
from apimcp.protocol.caller import RequestSource, caller_key
from apimcp.protocol.errors import INTERNAL_ERROR, SERVER_BUSY, McpError
from apimcp.protocol.models import RawJson
from apimcp.protocol.observe import Outcome, RequestRecord
from apimcp.ratelimit.limiter import RateLimiter, Refused

Via = Mapping[str, str]
"""What made a call inside a request: `{tool, exposition_id, exposition}` of the custom tool whose script made it."""


class CallObserver(Protocol):
    """Hears of the calls scripts make into an exposition (audit, telemetry); called on the event loop, in the
    task of the call, and must not block."""

    def call_started(self, tool: str, source: RequestSource, via: Via) -> None: ...

    def call_finished(self, record: RequestRecord, via: Via) -> None:
        """`record` is the call as a `tools/call` request of the caller (its request and session ids)."""

    def call_denied(self, tool: str, source: RequestSource, rule: str | None, via: Via | None) -> None:
        """A policy denied a call of `tool` (`rule`: the rule that decided; via: None for a client's own call)."""

    def call_approval(self, tool: str, source: RequestSource, rule: str | None, outcome: str, via: Via | None) -> None:
        """A call of `tool` that `rule` makes wait for a person: approved, refused, expired, unavailable (the
        client, or the control plane, cannot be asked) or pending (an administrator has not answered yet)."""

    def call_guarded(self, tool: str, source: RequestSource, heard: Heard, via: Via | None) -> None:
        """A guardrail found something in a call of `tool` (its kinds and counts, never its value)."""


class CallPath:
    """One exposition's checks around each call of its tools."""

    __slots__ = ("_admin", "_limiter", "_observers", "exposition_id", "guardrails", "name", "policies")

    def __init__(
        self, exposition_id: str, name: str, limiter: RateLimiter | None = None, observers: Sequence[CallObserver] = (),
        guardrails: Guardrails | None = None, admin: Callable[[], AdminAsk | None] = lambda: None,
    ) -> None:  # fmt: skip
        self._admin = admin
        """Who asks the control plane for an administrator's approval, when the gateway has one (it may come and
        go: asked at each call)."""
        self.exposition_id = exposition_id
        self.name = name
        self._limiter = limiter
        self._observers = tuple(observers)
        self.guardrails = guardrails or Guardrails(())
        """The plan's guardrails (`apimcp.guardrails`), in its order."""
        self.policies: PolicySet | None = None
        """Set by the exposition's handler once its tools are known (`govern`)."""

    def govern(self, policies: PolicySet | None) -> None:
        self.policies = policies

    def via(self, tool: str) -> Via:
        """What the calls of `tool`'s script (a custom tool of this exposition) say they come from."""
        return {"tool": tool, "exposition_id": self.exposition_id, "exposition": self.name}

    async def call(
        self,
        entry: ToolEntry,
        ctx: RequestContext,
        arguments: Mapping[str, Any],
        depth: int = 0,
        via: Via | None = None,
    ) -> CallToolResult:
        """Call `entry` (a tool of this exposition) for `ctx`'s request; `via`: the script making the call, if any."""
        if self.policies is None and not self.guardrails:
            return await self._call(entry, ctx, arguments, depth, via)
        return await self._governed(entry, ctx, arguments, depth, via)

    async def _governed(
        self, entry: ToolEntry, ctx: RequestContext, arguments: Mapping[str, Any], depth: int, via: Via | None
    ) -> CallToolResult:
        """A call under the exposition's policies and guardrails, in that order; the answer's guardrails before the
        fields a policy redacts."""
        source, decision = ctx.source, ALLOWED
        policies = self.policies
        if policies is not None:
            decision = policies.decide(entry.name, CallFacts(source.caller, source.client, ctx.revision.version,
                                                             arguments))  # fmt: skip
            if not decision.allowed:
                for observer in self._observers:
                    observer.call_denied(entry.name, source, decision.rule, via)
                return error_result(decision.refusal(entry.name))
            if decision.effect == "approve":
                lifetime = decision.approval_seconds or APPROVAL_SECONDS
                if decision.approver == "admin":
                    answer = await ask_admin(self._admin(), self.exposition_id, entry.name, arguments, source.caller,
                                             decision.message, lifetime)  # fmt: skip
                else:
                    answer = await approval.ask(ctx, entry.name, arguments, decision.message, lifetime)
                for observer in self._observers:
                    observer.call_approval(entry.name, source, decision.rule, answer.outcome, via)
                if answer.refusal is not None:
                    return error_result(answer.refusal)
        if decision.redact:
            entry = entry.redacting(decision.redact)
        if self.guardrails:
            return await self._guarded(entry, ctx, arguments, depth, via)
        return await self._call(entry, ctx, arguments, depth, via)

    async def _guarded(
        self, entry: ToolEntry, ctx: RequestContext, arguments: Mapping[str, Any], depth: int, via: Via | None
    ) -> CallToolResult:
        """A call between the plan's guardrails: on its arguments before, on its answer after."""
        guardrails, source = self.guardrails, ctx.source
        guarded = GuardedCall(entry.name, self.name, arguments, source.caller, entry.mirrored)
        before = guardrails.before(guarded)
        self._heard(entry.name, source, before.heard, via)
        if before.block is not None:
            return error_result(before.block)
        if before.arguments is not arguments:  # the answer's guardrails see what was sent
            arguments = before.arguments
            guarded = replace(guarded, arguments=arguments)
        result = await self._call(entry, ctx, arguments, depth, via)
        if isinstance(result.structured_content, RawJson):  # a large answer: read off the event loop
            after = await asyncio.to_thread(guardrails.after, guarded, result)
        else:
            after = guardrails.after(guarded, result)
        self._heard(entry.name, source, after.heard, via)
        return error_result(after.block) if after.block is not None else after.result

    def heard(self, subject: str, source: RequestSource, heard: Sequence[Heard]) -> None:
        """What the guardrails found in something other than a call (a resource read, a prompt: `subject` is its
        URI or name), told to the observers as they hear of calls."""
        self._heard(subject, source, heard, None)

    def _heard(self, tool: str, source: RequestSource, heard: Sequence[Heard], via: Via | None) -> None:
        for each in heard:
            for observer in self._observers:
                observer.call_guarded(tool, source, each, via)

    async def _call(
        self, entry: ToolEntry, ctx: RequestContext, arguments: Mapping[str, Any], depth: int, via: Via | None
    ) -> CallToolResult:
        if via is None or not (self._observers or self._limiter):  # a client's: limited and heard of as its request
            return await entry.call(ctx, arguments, depth)
        source = ctx.source
        for observer in self._observers:
            observer.call_started(entry.name, source, via)
        started = time.perf_counter()
        outcome: Outcome = "error"
        code: int | None = INTERNAL_ERROR
        refused: Refused | None = None
        try:
            refused = await self._refusal(source)
            if refused is not None:  # told as the door tells a request it refuses: whose limit, when to come back
                outcome, code = "refused", None
                raise McpError(SERVER_BUSY, refused.message(self.name), refused.data)
            result = await entry.call(ctx, arguments, depth)
            outcome, code = ("tool_error" if result.is_error else "success"), None
            return result
        except McpError as exc:
            if refused is None:
                code = exc.code
            raise
        except ToolError:
            outcome, code = "tool_error", None
            raise
        except asyncio.CancelledError:
            outcome, code = "cancelled", None
            raise
        finally:
            if self._observers:
                record = RequestRecord(
                    method="tools/call",
                    target=entry.name,
                    request_id=ctx.request_id,
                    session_id=ctx.session_id,
                    revision=ctx.revision.version,
                    outcome=outcome,
                    error_code=code,
                    duration_ms=(time.perf_counter() - started) * 1000,
                    source=source,
                    status=429 if refused is not None else None,
                    reason=refused.reason if refused is not None else None,
                    retry_after=refused.retry_after if refused is not None else None,
                )
                for observer in self._observers:
                    observer.call_finished(record, via)

    def refused(self, tool: str, ctx: RequestContext, error: McpError, via: Via) -> McpError:
        """`error`, for a call a script made that is refused before it reaches any tool (no such tool, the plan's
        read-only mode, a scope the caller lacks): heard of first as that call, as a client's refused call is heard
        of as its request, so that a program cannot probe tools unseen."""
        if self._observers:
            source = ctx.source
            for observer in self._observers:
                observer.call_started(tool, source, via)
            record = RequestRecord(
                method="tools/call",
                target=tool,
                request_id=ctx.request_id,
                session_id=ctx.session_id,
                revision=ctx.revision.version,
                outcome="error",
                error_code=error.code,
                duration_ms=0.0,
                source=source,
            )
            for observer in self._observers:
                observer.call_finished(record, via)
        return error

    async def _refusal(self, source: RequestSource) -> Refused | None:
        """Whether the exposition's or the caller's rate limit refuses the call (None: it may go on)."""
        if self._limiter is None:
            return None
        principal = source.caller.principal if source.caller is not None else None
        return await self._limiter.check(caller_key(principal, source.client))


@dataclass(frozen=True, slots=True)
class CallTarget:
    """A tool as a script reaches it: its entry, and the path of the exposition it belongs to."""

    entry: ToolEntry
    path: CallPath
