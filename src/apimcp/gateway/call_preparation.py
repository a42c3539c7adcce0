"""What one backend call adds for the request it serves: headers a plan's policy passes on from the client
(with trace context and Forwarded), and credentials of the user the call is made for.

Per-user credentials come from sources of two kinds:

- elicited: the user's own value for a `user_token` or `user_oauth` secret (`apimcp.elicitation`); a call
  without one answers with a URL elicitation;
- exchanged: a token for the backend obtained with the caller's access token (RFC 8693).

When the backend answers 401 to a call that carried a user's credentials, they are all forgotten (a 401 does
not say which one it refused): an elicited one is asked for again, an exchanged one exchanged again once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from apimcp.backends.base import CallExtras
from apimcp.backends.credentials import Placement, merged, placed_values
from apimcp.backends.oauth_http import CredentialError
from apimcp.backends.token_exchange import TokenExchanger
from apimcp.elicitation.broker import CredentialRefused, ElicitationBroker
from apimcp.elicitation.secrets import ElicitedSecret
from apimcp.forwarding.policy import HeaderPolicy
from apimcp.protocol import RequestContext
from apimcp.safety.masking import SecretMask


class UserCredential(ABC):
    @abstractmethod
    async def placement(self, ctx: RequestContext) -> Placement:
        """Where the caller's credential goes; raises CredentialRefused (or an elicitation) without one."""

    @abstractmethod
    async def rejected(self, ctx: RequestContext) -> Placement | None:
        """The backend answered 401: forget it; a new placement to try once more, or None."""


class ElicitedCredential(UserCredential):
    def __init__(self, broker: ElicitationBroker, secret: ElicitedSecret, exposition: str) -> None:
        self._broker = broker
        self._secret = secret
        self._exposition = exposition

    async def placement(self, ctx: RequestContext) -> Placement:
        return await self._broker.placement(ctx, self._secret, self._exposition)

    async def rejected(self, ctx: RequestContext) -> Placement | None:
        return await self._broker.rejected(ctx, self._secret, self._exposition)


class ExchangedCredential(UserCredential):
    def __init__(self, exchanger: TokenExchanger, name: str) -> None:
        self._exchanger = exchanger
        self._name = name

    async def placement(self, ctx: RequestContext) -> Placement:
        caller = ctx.caller
        if caller is None or not caller.token:
            raise CredentialRefused(
                f"This API is called with a token exchanged for the caller's own ({self._name}), and this "
                "request carries no access token: the exposition must authenticate its users with OAuth."
            )
        try:
            return await self._exchanger.placement(caller.principal, caller.token)
        except CredentialError as exc:
            raise CredentialRefused(f"Could not obtain backend credentials: {exc}") from None

    async def rejected(self, ctx: RequestContext) -> Placement | None:
        if ctx.caller is not None and ctx.caller.token:
            self._exchanger.forget(ctx.caller.principal, ctx.caller.token)
        return await self.placement(ctx)


class CallPreparation:
    """What the calls of one exposition member add to its backend's own credentials."""

    __slots__ = ("_credentials", "_policy")

    def __init__(self, policy: HeaderPolicy, credentials: Sequence[UserCredential] = ()) -> None:
        self._policy = policy
        self._credentials = tuple(credentials)

    @property
    def has_user_credentials(self) -> bool:
        return bool(self._credentials)

    async def extras(self, ctx: RequestContext) -> CallExtras:
        headers = self._policy.headers_for(ctx.source)
        if not self._credentials:
            return CallExtras(headers=headers)
        placement = Placement()
        for credential in self._credentials:
            placement = merged(placement, await credential.placement(ctx))
        return _with(headers, placement)

    async def after_rejection(self, ctx: RequestContext) -> CallExtras | None:
        """New extras after the backend refused the user's credentials (None: give up)."""
        placement = Placement()
        for credential in self._credentials:
            renewed = await credential.rejected(ctx)
            if renewed is None:
                return None
            placement = merged(placement, renewed)
        return _with(self._policy.headers_for(ctx.source), placement)


def _with(headers: dict[str, str], placement: Placement) -> CallExtras:
    return CallExtras(headers=headers, credentials=placement, mask=SecretMask(placed_values(placement)))
