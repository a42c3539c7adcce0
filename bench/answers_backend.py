"""A REST backend with answers of chosen sizes: `GET /{answer}/items/{itemId}` returns the answer named.

- `small`: the small JSON item every benchmark uses (`{"id":1,"name":"widget","price":9.5}`);
- `big`: `{"items": [...]}`, a uniform list of records of about 5.6 MB of compact JSON (the size issue 21
  measured a TOON conversion with): the worst a result-shaping step may meet under the default 10 MiB
  `max_response_bytes`.

A service of `bench/item_api.yaml` picks its answer by its backend URL (`http://127.0.0.1:PORT/big`).
Answers are built once at start-up, so serving one costs the backend no more than sending its bytes.

    python -m bench.answers_backend --port 8083
"""

from __future__ import annotations

import argparse

import orjson
import uvloop
from aiohttp import web

SMALL = b'{"id":1,"name":"widget","price":9.5}'
BIG_RECORDS = 59_000


def big_answer(records: int = BIG_RECORDS) -> bytes:
    rows = [
        {"id": i, "name": f"widget {i}", "price": i / 4, "tags": ["blue", "small"], "stock": {"shelf": i % 97}}
        for i in range(records)
    ]
    return orjson.dumps({"items": rows, "total": records})


def make_app() -> web.Application:
    answers = {"small": SMALL, "big": big_answer()}

    async def item(request: web.Request) -> web.Response:
        body = answers.get(request.match_info["answer"])
        if body is None:
            raise web.HTTPNotFound()
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/{answer}/items/{itemId}", item)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvloop.install()
    web.run_app(make_app(), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
