"""One exposition member's backend, as every call made on behalf of a request reaches it.

A tool's operation and a `file://` resource read alike: the call is prepared for its request (the headers the
member's policy passes on, the user's own credentials, asked for again once after a 401) and made with the
backend the runtime built for the member, instrumented when telemetry is on (a CLIENT span, a latency figure).
Whatever needs adding to every backend call of a request belongs here, not in one of its callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.backends.base import Backend, BackendResult, Failure, Progress
from apimcp.catalog.model import Operation
from apimcp.gateway.call_preparation import CallPreparation
from apimcp.protocol import RequestContext


class MemberBackend:
    """`backend`, called for a request with what `preparation` adds (None: nothing, the backend's own
    credentials alone)."""

    __slots__ = ("backend", "preparation")

    def __init__(self, backend: Backend, preparation: CallPreparation | None = None) -> None:
        self.backend = backend
        self.preparation = preparation

    async def call(
        self, ctx: RequestContext, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        """The backend's answer; raises `CredentialRefused` (or a URL elicitation, `InputRequired`) when the call
        needs a credential of the user's that they have not supplied."""
        preparation = self.preparation
        if preparation is None:
            return await self.backend.call(operation, arguments, progress)
        result = await self.backend.call(operation, arguments, progress, await preparation.extras(ctx))
        if preparation.has_user_credentials and isinstance(result, Failure) and result.status == 401:
            again = await preparation.after_rejection(ctx)
            if again is not None:
                result = await self.backend.call(operation, arguments, progress, again)
        return result
