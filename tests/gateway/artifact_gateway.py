"""A gateway serving the Bookshelf demo API with its demo artifacts and test-only ones, from a configuration file.

The demo's four files (reShapr's format) plus custom tools that test the script guardrails and a
`ui://` resource whose HTML a small loopback server holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from apimcp.artifacts.scripting import ScriptLimits
from apimcp.backends.rest import close_session, new_session
from apimcp.demo_api import spec_path, start
from apimcp.gateway.config import parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.plan import plan_gateway
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app

DEMO_ARTIFACTS = spec_path().parent / "artifacts"
CARD = "<!doctype html><title>Book card</title><p>A book</p>"

GUARDRAILS = """
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: bookshelf, version: 1.0.0}
customTools:
  endless:
    description: never ends
    input: {type: object}
    tools: [{tool: get_stats}]
    script: "while (true) {}"
  hungry:
    description: eats memory
    input: {type: object}
    tools: [{tool: get_stats}]
    script: "const a = []; while (true) a.push('x'.repeat(100000));"
  sneaky:
    description: calls a tool it did not declare
    input: {type: object}
    tools: [{tool: get_stats}]
    script: "return rs.callTool('delete_book', {bookId: 1});"
  greedy:
    description: calls too often
    input: {type: object}
    tools: [{tool: get_stats}]
    script: "for (let i = 0; i < 100; i++) rs.callTool('get_stats', {}); return 'done';"
  recursive:
    description: calls itself
    input: {type: object, properties: {n: {type: integer}}}
    tools: [{tool: recursive}]
    script: |
      const r = rs.callTool('recursive', {n: (input.n || 0) + 1});
      if (!r.ok) throw new Error(r.error.message);
      return r.content;
  across:
    description: calls the service by its name and version
    input: {type: object}
    tools: [{tool: get_stats, service: "bookshelf:1.0.0"}]
    script: "return rs.callTool('bookshelf:1.0.0', 'get_stats', {}).content;"
  thrower:
    description: throws
    input: {type: object}
    tools: [{tool: get_stats}]
    script: "throw new Error('the shelf is closed today');"
"""

UI = """
apiVersion: reshapr.io/v1alpha1
kind: Resources
service: {name: bookshelf, version: 1.0.0}
resources:
  ui://bookshelf/book-card.html:
    name: book-card
    title: A card showing one book
    remoteContent: {ui}/card.html
    icons: [{src: "https://example.com/card.png", mimeType: image/png, sizes: ["48x48"]}]
    tools: [get_book]
  ui://bookshelf/missing.html:
    name: missing
    remoteContent: {ui}/nowhere.html
"""


def _config(backend: str, ui: str, folder: Path) -> str:
    (folder / "guardrails.yaml").write_text(GUARDRAILS)
    (folder / "ui.yaml").write_text(UI.replace("{ui}", ui))
    files = [DEMO_ARTIFACTS / name for name in ("prompts.yaml", "resources.yaml", "custom-tools.yaml",
                                                "output-filters.yaml")]  # fmt: skip
    listed = "\n".join(f"      - {path}" for path in [*files, folder / "guardrails.yaml", folder / "ui.yaml"])
    return f"""
server:
  fetch_allow: ["127.0.0.0/8"]
services:
  bookshelf:
    openapi: {spec_path()}
    name: bookshelf
    backend: {backend}
    artifacts:
{listed}
expositions:
  bookshelf:
    services: [bookshelf]
    cache:
      prompts/list: {{ttl_ms: 300000, scope: public}}
      resources/read: {{ttl_ms: 1000, scope: private}}
"""


def _ui_app() -> web.Application:
    async def card(_: web.Request) -> web.Response:
        return web.Response(text=CARD, content_type="text/html")

    app = web.Application()
    app.router.add_get("/card.html", card)
    return app


@contextmanager
def artifact_gateway(folder: Path) -> Iterator[str]:
    """The exposition's URL (`/mcp/bookshelf`), served until the block ends; files are written to `folder`."""
    # A deadline the other guardrails (memory, calls, depth) reach long before, even on a busy machine
    limits = ScriptLimits(timeout_seconds=2, memory_bytes=8 * 2**20, max_calls=10, max_depth=3)

    @asynccontextmanager
    async def gateway() -> AsyncIterator[Any]:
        runner, port = await start("127.0.0.1", 0)
        session = new_session()
        try:
            config = parse_config(_config(f"http://127.0.0.1:{port}", ui, folder), "gateway.yaml", folder)
            app = build_gateway(plan_gateway(config), session, script_limits=limits)
            try:
                yield app
            finally:
                await app.runtime.close()
        finally:
            await close_session(session)
            await runner.cleanup()

    with live_aiohttp(_ui_app) as ui, live_app(gateway) as base:
        yield f"{base}/mcp/bookshelf"
