"""The state of one sign-in between the start and the callback: the PKCE verifier, the nonce, where the person
goes back (the console, or the CLI's loopback port) and the organization asked for, sealed with the control
plane's keys into the `state` parameter, so any replica can finish a sign-in another began, and nobody can read
the verifier or forge a state. It lasts `LIFETIME_SECONDS`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import orjson

from apimcp.control.crypto import KeySet, SecretDecryptionError

LIFETIME_SECONDS = 600
_PURPOSE = b"apimcp sso state"

Client = Literal["console", "cli"]


class StateError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SignIn:
    verifier: str
    nonce: str
    client: Client
    port: int | None = None
    """The CLI's loopback port."""
    organization: str | None = None
    expires: float = 0.0
    browser: str = ""
    """The digest of the cookie the start set: the callback goes on only in the browser that started."""
    tab: str | None = None
    """What the console's tab that started said of itself, handed back so that it redeems only its own sign-in."""


def seal(keys: KeySet, sign_in: SignIn) -> str:
    body = {"v": sign_in.verifier, "n": sign_in.nonce, "c": sign_in.client, "p": sign_in.port,
            "o": sign_in.organization, "e": time.time() + LIFETIME_SECONDS, "b": sign_in.browser,
            "t": sign_in.tab}  # fmt: skip
    return keys.encrypt(orjson.dumps(body), associated_data=_PURPOSE).decode()


def open_state(keys: KeySet, sealed: str) -> SignIn:
    try:
        body = orjson.loads(keys.decrypt(sealed, associated_data=_PURPOSE))
    except (SecretDecryptionError, ValueError, orjson.JSONDecodeError):
        raise StateError("this sign-in's state is not one this control plane made: start again") from None
    if not isinstance(body, dict) or float(body.get("e", 0)) < time.time():
        raise StateError("this sign-in took too long: start again")
    client = body.get("c")
    if client not in ("console", "cli"):
        raise StateError("this sign-in's state is not one this control plane made: start again")
    port, tab = body.get("p"), body.get("t")
    return SignIn(str(body["v"]), str(body["n"]), client, port if isinstance(port, int) else None,
                  body.get("o") if isinstance(body.get("o"), str) else None, float(body["e"]), str(body.get("b", "")),
                  tab if isinstance(tab, str) else None)  # fmt: skip
