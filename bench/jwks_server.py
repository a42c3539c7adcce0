"""A minimal OAuth issuer for bench/auth_bench.py: its RFC 8414 metadata and its JWK set (one ES256 key made at
start, whose private half is written to --key-out so that the benchmark signs tokens with it)."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
from pathlib import Path

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm


def make_key() -> dict[str, str]:
    private: dict[str, str] = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
    private.update(kid="bench-es256", alg="ES256", use="sig")
    return private


def application(issuer: str, private: dict[str, str]) -> web.Application:
    public = {k: v for k, v in private.items() if k != "d"}
    metadata = {"issuer": issuer, "jwks_uri": f"{issuer}/jwks", "token_endpoint": f"{issuer}/token"}

    async def well_known(request: web.Request) -> web.Response:
        return web.json_response(metadata)

    async def jwks(request: web.Request) -> web.Response:
        return web.json_response({"keys": [public]})

    app = web.Application()
    app.router.add_get("/.well-known/oauth-authorization-server", well_known)
    app.router.add_get("/jwks", jwks)
    return app


def serve_in_thread() -> tuple[str, dict[str, str]]:
    """The issuer served from a thread of this process (for the in-process measurement): its URL and key."""
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}"
    private = make_key()
    ready = threading.Event()

    def run() -> None:
        loop = asyncio.new_event_loop()
        runner = web.AppRunner(application(issuer, private))
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return issuer, private


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key-out", type=Path, required=True)
    args = parser.parse_args()
    private = make_key()
    args.key_out.write_text(json.dumps(private))
    app = application(f"http://127.0.0.1:{args.port}", private)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
