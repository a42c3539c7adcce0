"""A minimal OAuth issuer for bench/auth_bench.py: its RFC 8414 metadata and its JWK set (one ES256 key made at
start, whose private half is written to --key-out so that the benchmark signs tokens with it)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key-out", type=Path, required=True)
    args = parser.parse_args()
    issuer = f"http://127.0.0.1:{args.port}"
    private = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
    private.update(kid="bench-es256", alg="ES256", use="sig")
    public = {k: v for k, v in private.items() if k != "d"}
    args.key_out.write_text(json.dumps(private))
    metadata = {"issuer": issuer, "jwks_uri": f"{issuer}/jwks", "token_endpoint": f"{issuer}/token"}

    async def well_known(request: web.Request) -> web.Response:
        return web.json_response(metadata)

    async def jwks(request: web.Request) -> web.Response:
        return web.json_response({"keys": [public]})

    app = web.Application()
    app.router.add_get("/.well-known/oauth-authorization-server", well_known)
    app.router.add_get("/jwks", jwks)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
