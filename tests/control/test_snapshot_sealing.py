"""Snapshot secrets sealed to a gateway key (HPKE), opened by the gateway, bound to their place."""

from __future__ import annotations

import copy
import os
import pickle
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from apimcp.backends.rest import close_session, new_session
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.importers.openapi import import_openapi
from apimcp.protocol import EndpointOptions
from apimcp.sealing.keys import GatewayKey, GatewayPublicKey
from apimcp.sealing.snapshots import SealError, is_sealed, open_exposition, seal_exposition
from tests.control.factories import ECHO_SPEC

TOKEN = "tok-0123456789-abcdef"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VuBCIEI...\n-----END PRIVATE KEY-----\n"


def _exposition(identifier: str = "e1", plan: str = "p1", token: str = TOKEN, **member: Any) -> dict[str, Any]:
    return {
        "id": identifier,
        "name": identifier,
        "organization": "acme",
        "created_at": "2026-01-01",
        "title": None,
        "instructions": None,
        "cache": {},
        "output_schemas": True,
        "inbound": {"mode": "none"},
        "members": [
            {
                "service": {"id": "s1", "name": "Echo API", "version": "2.1", "hash": "h1"},
                "plan": plan,
                "backend_endpoint": "http://127.0.0.1:9",
                "backend_timeout_ms": 1000,
                "include": ["get_item"],
                "exclude": [],
                "tool_prefix": "",
                "credentials": {"kind": "bearer", "fields": {}, "values": {"token": token}},
                "backend_tls": {"ca": "CA PEM", "certificate": "CERT PEM", "private_key": PEM_KEY},
                **member,
            }
        ],
    }


def test_sealed_secrets_open_with_the_gateway_key_only() -> None:
    key, other = GatewayKey.generate(), GatewayKey.generate()
    clear = _exposition()
    sealed = seal_exposition(clear, key.public)
    wire = orjson.dumps(sealed)
    assert TOKEN.encode() not in wire
    assert b"PRIVATE KEY" not in wire
    assert b"CERT PEM" not in wire
    member = sealed["members"][0]
    assert member["credentials"]["kind"] == "bearer"  # only the values are sealed
    assert is_sealed(member["credentials"]["values"])
    assert is_sealed(member["backend_tls"])
    assert open_exposition(sealed, key) == clear
    with pytest.raises(SealError, match=f"sealed to key {key.public.fingerprint}"):
        open_exposition(sealed, other)
    with pytest.raises(SealError, match="holds no key"):
        open_exposition(sealed, None)
    assert clear == _exposition()  # sealing copies, it does not touch what it was given


def test_sealing_twice_gives_other_bytes_for_the_same_secrets() -> None:
    key = GatewayKey.generate()
    first, second = seal_exposition(_exposition(), key.public), seal_exposition(_exposition(), key.public)
    assert first != second
    assert open_exposition(first, key) == open_exposition(second, key)


@pytest.mark.parametrize(
    "move",
    ["to another exposition", "to another plan", "to another organization", "between places", "altered"],
)
def test_a_sealed_value_moved_or_altered_does_not_open(move: str) -> None:
    key = GatewayKey.generate()
    sealed = seal_exposition(_exposition(), key.public)
    moved = copy.deepcopy(sealed)
    member = moved["members"][0]
    if move == "to another exposition":
        moved["id"] = "e2"
    elif move == "to another plan":
        member["plan"] = "p2"
    elif move == "to another organization":
        moved["organization"] = "globex"
    elif move == "between places":
        member["credentials"]["values"], member["backend_tls"] = member["backend_tls"], member["credentials"]["values"]
    else:
        token = member["credentials"]["values"]["sealed"]
        member["credentials"]["values"]["sealed"] = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    with pytest.raises(SealError, match="does not open") as refused:
        open_exposition(moved, key)
    assert TOKEN not in str(refused.value)


def test_every_credential_of_a_member_list_is_sealed_in_its_place() -> None:
    """Members whose `credentials` is a list (several backend secrets) are sealed object by object."""
    key = GatewayKey.generate()
    credentials = [
        {"kind": "api_key", "fields": {"name": "X-Key", "location": "header"}, "values": {"value": "key-one-1234"}},
        {"kind": "api_key", "fields": {"name": "X-Client", "location": "header"}, "values": {"value": "key-two-5678"}},
    ]
    clear = _exposition(credentials=credentials, backend_tls=None)
    sealed = seal_exposition(clear, key.public)
    assert b"key-one-1234" not in orjson.dumps(sealed)
    assert b"key-two-5678" not in orjson.dumps(sealed)
    assert [c["fields"]["name"] for c in sealed["members"][0]["credentials"]] == ["X-Key", "X-Client"]
    assert open_exposition(sealed, key) == clear
    swapped = copy.deepcopy(sealed)
    first, second = swapped["members"][0]["credentials"]
    first["values"], second["values"] = second["values"], first["values"]
    with pytest.raises(SealError, match="credentials/0/values"):
        open_exposition(swapped, key)


def test_an_exposition_without_secrets_is_left_as_it_is() -> None:
    key = GatewayKey.generate()
    clear = _exposition(credentials=None, backend_tls=None)
    assert seal_exposition(clear, key.public) == clear
    assert open_exposition(clear, None) is clear  # a configuration file's snapshot: nothing to open


def test_gateway_keys_are_written_privately_and_read_back(tmp_path: Path) -> None:
    key = GatewayKey.generate()
    path = tmp_path / "edge.pem"
    key.write(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert GatewayKey.load(path).public == key.public
    with pytest.raises(FileExistsError):
        key.write(path)  # never replaced
    assert GatewayKey.from_pem(key.to_pem().decode()).public == key.public
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        GatewayKey.load(path)
    assert "PRIVATE" not in repr(key)
    assert key.public.fingerprint in repr(key)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(key)


@pytest.mark.parametrize("text", ["", "short", "A" * 44, "A" * 42 + "!", "A" * 42 + "B"])
def test_a_malformed_public_key_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="base64url"):
        GatewayPublicKey.from_text(text)


def test_a_pem_that_is_no_gateway_key_is_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="X25519 expected"):
        GatewayKey.from_pem(other)
    with pytest.raises(ValueError, match="not a gateway key") as refused:
        GatewayKey.from_pem("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n")
    assert "c2VjcmV0" not in str(refused.value)


# --- the gateway runtime ---------------------------------------------------------------------------------


@pytest.fixture
async def runtime_with_key() -> AsyncIterator[tuple[GatewayRuntime, GatewayKey]]:
    key = GatewayKey.generate()
    session = new_session()
    runtime = GatewayRuntime(session, EndpointOptions(), key=key)
    yield runtime, key
    runtime.shutdown()
    await close_session(session)


def _snapshot(revision: int, *expositions: dict[str, Any]) -> dict[str, Any]:
    return {"format": 1, "revision": revision, "services": {"h1": SERVICE}, "expositions": list(expositions)}


SERVICE = import_openapi(str(ECHO_SPEC))


@pytest.mark.anyio
async def test_resealed_secrets_do_not_rebuild_an_unchanged_exposition(
    runtime_with_key: tuple[GatewayRuntime, GatewayKey],
) -> None:
    runtime, key = runtime_with_key
    runtime.apply(_snapshot(1, seal_exposition(_exposition(backend_tls=None), key.public)))
    served = runtime.routes.by_id["e1"]
    runtime.apply(_snapshot(2, seal_exposition(_exposition(backend_tls=None), key.public)))  # same secret, new bytes
    assert runtime.routes.by_id["e1"] is served
    runtime.apply(_snapshot(3, seal_exposition(_exposition(backend_tls=None, token="rotated"), key.public)))
    assert runtime.routes.by_id["e1"] is not served  # a rotated secret is a change
    assert runtime.routes.by_id["e1"].endpoint is served.endpoint


@pytest.mark.anyio
async def test_an_exposition_sealed_to_another_key_is_not_served(
    runtime_with_key: tuple[GatewayRuntime, GatewayKey], caplog: pytest.LogCaptureFixture
) -> None:
    runtime, key = runtime_with_key
    stranger = GatewayKey.generate()
    first = seal_exposition(_exposition("e1", backend_tls=None), stranger.public)
    runtime.apply(_snapshot(1, first, seal_exposition(_exposition("e2", backend_tls=None), key.public)))
    assert set(runtime.routes.by_id) == {"e2"}
    assert f"sealed to key {stranger.public.fingerprint}" in caplog.text
    assert "Traceback" not in caplog.text
    with pytest.raises(SealError):
        runtime.apply(_snapshot(2, first), strict=True)
