"""An OpenAPI description with as many operations as asked, for the tests and benches of long lists."""

from __future__ import annotations

import json


def many_operations(count: int, title: str = "Many") -> bytes:
    """`count` operations `op0001`... (tool names `op0001`...): GET `/things/{n}`, tagged `even` or `odd`, and every
    hundredth also `hundred`, each taking one string argument `note`."""
    paths = {}
    for n in range(1, count + 1):
        tags = ["even" if n % 2 == 0 else "odd"] + (["hundred"] if n % 100 == 0 else [])
        paths[f"/things/{n:04d}"] = {
            "get": {
                "operationId": f"op{n:04d}",
                "summary": f"Read thing number {n}",
                "tags": tags,
                "parameters": [{"name": "note", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "the thing", "content": {"application/json": {"schema": {}}}}},
            }
        }
    document = {"openapi": "3.0.3", "info": {"title": title, "version": "1"}, "paths": paths}
    return json.dumps(document).encode()
