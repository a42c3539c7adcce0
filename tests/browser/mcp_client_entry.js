// A browser page's MCP client: the official TypeScript SDK's Client over its Streamable HTTP transport (and its
// older HTTP+SSE transport), plus one raw 2026-07-28 request, against the gateway named in the page's query
// (?mcp=URL&key=API_KEY). tests/browser/test_browser_mcp_client.py bundles this with esbuild for Chromium; every
// outcome, failures included, is written into the page as JSON for the test to read.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const query = new URLSearchParams(window.location.search);
const endpoint = new URL(query.get("mcp"));
const headers = { Authorization: `Bearer ${query.get("key")}` };

function failure(error) {
  return { error: `${error?.name}: ${error?.message}` };
}

async function streamable() {
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } });
  const client = new Client({ name: "browser-page", version: "1.0.0" });
  try {
    await client.connect(transport);
    const tools = await client.listTools();
    const call = await client.callTool({ name: "get_item", arguments: { itemId: "7" } });
    return {
      protocolVersion: transport.protocolVersion ?? null,
      sessionId: transport.sessionId ?? null,
      server: client.getServerVersion()?.name ?? null,
      tools: tools.tools.map((tool) => tool.name),
      call: { isError: call.isError ?? false, structuredContent: call.structuredContent ?? null },
    };
  } catch (error) {
    return { ...failure(error), sessionId: transport.sessionId ?? null };
  } finally {
    await client.close().catch(() => {});
  }
}

async function httpSse() {
  const transport = new SSEClientTransport(new URL(`${endpoint.href}/sse`), { requestInit: { headers } });
  const client = new Client({ name: "browser-page-sse", version: "1.0.0" });
  try {
    await client.connect(transport);
    const call = await client.callTool({ name: "get_item", arguments: { itemId: "8" } });
    return { structuredContent: call.structuredContent ?? null };
  } catch (error) {
    return failure(error);
  } finally {
    await client.close().catch(() => {});
  }
}

// The SDK speaks up to 2025-11-25; a 2026-07-28 (stateless) request is one fetch with its mirror headers.
async function stateless() {
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "browser-page", version: "1.0.0" },
  };
  const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_item", arguments: { itemId: "9" }, _meta: meta } };
  try {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        ...headers,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "get_item",
      },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    return {
      status: response.status,
      protocolVersion: response.headers.get("mcp-protocol-version"),
      sessionId: response.headers.get("mcp-session-id"),
      structuredContent: answer.result?.structuredContent ?? null,
      error: answer.error ?? null,
    };
  } catch (error) {
    return failure(error);
  }
}

const results = { streamable: await streamable(), httpSse: await httpSse(), stateless: await stateless() };
const out = document.getElementById("results");
out.textContent = JSON.stringify(results);
out.dataset.done = "true";
