"""The credentials one backend calls with: where they go in a request, and the mask hiding them in answers.

A service may need several credentials at once (an API key and a client id in
two headers); they are placed together once, when the backend is made, with the
`SecretMask` of their values. OAuth client credentials add an access token that
changes over time: the placement and the mask are rebuilt when the token does
and reused until then. A backend without credentials gets a fixed empty access
that masks nothing, so its calls do no work here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from apimcp.backends.base import CallExtras
from apimcp.backends.credentials import (
    ApiKey,
    Basic,
    Bearer,
    Credentials,
    Placement,
    header_problem,
    merged,
    place_all,
    placed_values,
    secret_values,
)
from apimcp.backends.oauth_client import ClientCredentials, ClientCredentialsTokens, CredentialError, TokenClient
from apimcp.backends.secret_refs import UnresolvedReference, has_reference, resolve
from apimcp.backends.targets import clash_problem
from apimcp.safety.masking import NO_MASK, SecretMask

AnyCredentials = Credentials | ClientCredentials
GivenCredentials = AnyCredentials | Sequence[AnyCredentials] | None
"""What backends accept: nothing, one credential, or several that go together."""

PlacementCheck = Callable[[Placement], str | None]


@dataclass(frozen=True, slots=True)
class Access:
    """What a call sends and what its answer must not show."""

    placement: Placement
    mask: SecretMask
    problem: str | None = None
    """Why these credentials cannot be sent (a control character in a header value...), or None."""


def as_list(credentials: GivenCredentials) -> list[AnyCredentials]:
    if credentials is None:
        return []
    if isinstance(credentials, Bearer | Basic | ApiKey | ClientCredentials):
        return [credentials]
    return list(credentials)


def _kind_and_fields(credentials: AnyCredentials) -> tuple[str, dict[str, str]]:
    if isinstance(credentials, ApiKey):
        return "api_key", {"name": credentials.name, "location": credentials.location}
    if isinstance(credentials, ClientCredentials):
        return "oauth_client_credentials", {}
    return ("bearer" if isinstance(credentials, Bearer) else "basic"), {}


def _label(credentials: AnyCredentials) -> str:
    kind, fields = _kind_and_fields(credentials)
    return f"the API key {fields['name']!r}" if kind == "api_key" else f"the {kind.replace('_', ' ')} credentials"


def http_problem(placement: Placement) -> str | None:
    """Why a placement cannot travel in HTTP headers, or None."""
    for name, value in placement.headers.items():
        problem = header_problem(value)
        if problem is not None:
            return f"the value of the {name} header: {problem}"
    return None


class BackendAccess:
    """The credentials of one backend. `check` says why a placement cannot be sent by this kind of backend."""

    def __init__(
        self,
        credentials: GivenCredentials,
        session: TokenClient | None,
        check: PlacementCheck = http_problem,
    ) -> None:
        given = as_list(credentials)
        clash = clash_problem([(_label(c), *_kind_and_fields(c)) for c in given])
        if clash is not None:
            raise ValueError(clash)
        oauth = [c for c in given if isinstance(c, ClientCredentials)]
        static = [c for c in given if not isinstance(c, ClientCredentials)]
        self._check = check
        self._static = place_all(static)
        values = [value for c in static for value in secret_values(c)]
        values += [c.client_secret for c in oauth]  # sent to the token endpoint only, but no answer should show it
        self._mask = SecretMask(values)
        self._tokens: ClientCredentialsTokens | None = None
        self._current: tuple[Placement, Access] | None = None
        self._referencing = static if any(has_reference(v) for c in static for v in secret_values(c)) else []
        """Static credentials whose values name the gateway's environment (`${env:NAME}`): resolved per call."""
        self._resolved: tuple[tuple[str, ...], Placement, SecretMask] | None = None
        self.fixed: Access | None = None
        """The access of every call when it never changes (no OAuth, no references): no await needed."""
        if oauth:
            if session is None:
                raise ValueError("OAuth client credentials need an HTTP session to fetch tokens with")
            self._tokens = ClientCredentialsTokens(session, oauth[0])  # two would clash on Authorization
        elif not self._referencing:
            self.fixed = Access(self._static, self._mask, check(self._static)) if given else NO_ACCESS

    async def current(self) -> Access:
        """The access of the next call; raises `CredentialError` when an access token cannot be obtained or a
        reference cannot be resolved."""
        if self.fixed is not None:
            return self.fixed
        static, mask = self._static, self._mask
        if self._referencing:
            static, mask = self._resolve()
        if self._tokens is None:
            return Access(static, mask, self._check(static))
        tokens = await self._tokens.placement()
        cached = self._current
        if cached is not None and cached[0] is tokens and not self._referencing:
            return cached[1]
        placement = merged(static, tokens)
        access = Access(placement, mask + SecretMask(placed_values(tokens)), self._check(placement))
        self._current = (tokens, access)
        return access

    def _resolve(self) -> tuple[Placement, SecretMask]:
        """The static credentials with their references resolved now (the environment may change between calls);
        the placement and mask are reused while the resolved values stay the same."""
        try:
            resolved = [_resolved(c) for c in self._referencing]
        except UnresolvedReference as exc:
            raise CredentialError(str(exc)) from None
        values = tuple(v for c in resolved for v in secret_values(c))
        if self._resolved is None or self._resolved[0] != values:
            self._resolved = (values, place_all(resolved), SecretMask(values))
        return self._resolved[1], self._resolved[2]

    def with_extras(self, access: Access, extras: CallExtras) -> Access:
        return with_extras(access, extras, self._check)


NO_ACCESS = Access(Placement(), NO_MASK)


def _resolved(credentials: Credentials) -> Credentials:
    if isinstance(credentials, Bearer):
        return replace(credentials, token=resolve(credentials.token))
    if isinstance(credentials, Basic):
        return replace(credentials, username=resolve(credentials.username), password=resolve(credentials.password))
    return replace(credentials, value=resolve(credentials.value))


def with_extras(access: Access, extras: CallExtras, check: PlacementCheck = http_problem) -> Access:
    """`access` with one call's extras: passed-on headers under the backend's credentials, the user's over them."""
    placement = access.placement
    if extras.credentials is not None:
        placement = merged(placement, extras.credentials)
    if extras.headers:
        # the credentials win (`merged` compares header names without case), their cookies too: they become a Cookie
        passed = {k: v for k, v in extras.headers.items() if not (placement.cookies and k.lower() == "cookie")}
        placement = merged(Placement(headers=passed), placement)
    mask = access.mask + extras.mask if extras.mask else access.mask
    return Access(placement, mask, access.problem or check(placement))
