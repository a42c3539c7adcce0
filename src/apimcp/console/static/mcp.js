// A small MCP client over Streamable HTTP, for the try-it panel: 2026-07-28 (stateless: every request carries
// its version in `_meta`, mirrored in MCP-Protocol-Version, Mcp-Method and Mcp-Name headers) or 2025-11-25
// (initialize, then requests in the session named by Mcp-Session-Id, deleted at the end).

export const MODERN = "2026-07-28";
export const LEGACY = "2025-11-25";
const ACCEPT = "application/json, text/event-stream";
const CLIENT_INFO = { name: "apimcp-console", version: "1" };
const MAX_PAGES = 50;

export class McpError extends Error {}

/** A header value as MCP carries it: plain when printable ASCII, else `=?base64?...?=` of its UTF-8. */
export function headerValue(value) {
  const text = String(value);
  if (/^[\x20-\x7e]*$/.test(text) && text === text.trim()) return text;
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `=?base64?${btoa(binary)}?=`;
}

/** Mcp-Param-* headers for the arguments a tool's schema marks with `x-mcp-header` (2026-07-28). */
export function paramHeaders(schema, args) {
  const headers = {};
  const walk = (node, value) => {
    const properties = node && typeof node === "object" ? node.properties : null;
    if (!properties || typeof properties !== "object") return;
    for (const [key, sub] of Object.entries(properties)) {
      if (!sub || typeof sub !== "object") continue;
      const inner = value && typeof value === "object" ? value[key] : undefined;
      if (typeof sub["x-mcp-header"] === "string" && inner !== undefined && inner !== null) {
        headers[`Mcp-Param-${sub["x-mcp-header"]}`] = typeof inner === "boolean" ? String(inner) : headerValue(inner);
      }
      walk(sub, inner);
    }
  };
  walk(schema, args);
  return headers;
}

/** The JSON-RPC answer to request `id` in a response: one JSON body, or the events of an SSE stream. */
async function answerOf(response, id) {
  const text = await response.text();
  const media = (response.headers.get("content-type") || "").split(";")[0].trim();
  const messages = [];
  if (media === "text/event-stream") {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) messages.push(JSON.parse(data));
    }
  } else if (text) {
    try {
      messages.push(JSON.parse(text));
    } catch {
      throw new McpError(`HTTP ${response.status}: ${text.slice(0, 300)}`);
    }
  }
  const answer = messages.find((m) => m && m.id === id && ("result" in m || "error" in m));
  if (answer) return answer;
  const first = messages[0];
  if (first && typeof first.error === "string") throw new McpError(`HTTP ${response.status}: ${first.error}`);
  if (first && first.error && first.error.message) throw new McpError(`HTTP ${response.status}: ${first.error.message}`);
  throw new McpError(`HTTP ${response.status}: no answer to the request`);
}

function failed(answer, method) {
  const { code, message } = answer.error;
  return new McpError(`${method} failed: ${message} (code ${code})`);
}

async function send(endpoint, headers, body) {
  try {
    return await fetch(endpoint, {
      method: "POST", headers, body: JSON.stringify(body), cache: "no-store", credentials: "omit",
    });
  } catch (error) {
    throw new McpError(`cannot reach ${endpoint} (${error.message}); a gateway on another origin must list this `
      + "console's origin in --cors-origin");
  }
}

function authorization(apiKey) {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
}

export class ModernClient {
  constructor(endpoint, apiKey) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
    this.nextId = 1;
  }

  async request(method, params = {}, extraHeaders = {}) {
    const id = this.nextId++;
    const meta = {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    };
    const headers = {
      "Content-Type": "application/json", Accept: ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method,
      ...authorization(this.apiKey), ...extraHeaders,
    };
    if (method === "tools/call" || method === "prompts/get") headers["Mcp-Name"] = headerValue(params.name);
    if (method === "resources/read") headers["Mcp-Name"] = headerValue(params.uri);
    const body = { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } };
    const answer = await answerOf(await send(this.endpoint, headers, body), id);
    if (answer.error) throw failed(answer, method);
    return answer.result;
  }

  async listTools() {
    return listAll((cursor) => this.request("tools/list", cursor ? { cursor } : {}));
  }

  callTool(tool, args) {
    return this.request("tools/call", { name: tool.name, arguments: args }, paramHeaders(tool.inputSchema, args));
  }

  async close() {}
}

export class LegacyClient {
  constructor(endpoint, apiKey) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
    this.nextId = 1;
    this.session = null;
    this.version = null;
  }

  headers() {
    const headers = { "Content-Type": "application/json", Accept: ACCEPT, ...authorization(this.apiKey) };
    if (this.session) headers["Mcp-Session-Id"] = this.session;
    if (this.version) headers["MCP-Protocol-Version"] = this.version;
    return headers;
  }

  async initialize() {
    const id = this.nextId++;
    const params = { protocolVersion: LEGACY, capabilities: {}, clientInfo: CLIENT_INFO };
    const response = await send(this.endpoint, this.headers(), { jsonrpc: "2.0", id, method: "initialize", params });
    const answer = await answerOf(response, id);
    if (answer.error) throw failed(answer, "initialize");
    this.session = response.headers.get("mcp-session-id");
    this.version = answer.result.protocolVersion;
    const note = await send(this.endpoint, this.headers(), { jsonrpc: "2.0", method: "notifications/initialized" });
    if (!note.ok) throw new McpError(`notifications/initialized answered HTTP ${note.status}`);
  }

  async request(method, params = {}) {
    if (!this.version) await this.initialize();
    const id = this.nextId++;
    const answer = await answerOf(await send(this.endpoint, this.headers(), { jsonrpc: "2.0", id, method, params }), id);
    if (answer.error) throw failed(answer, method);
    return answer.result;
  }

  listTools() {
    return listAll((cursor) => this.request("tools/list", cursor ? { cursor } : {}));
  }

  callTool(tool, args) {
    return this.request("tools/call", { name: tool.name, arguments: args });
  }

  async close() {
    if (!this.session) return;
    try {
      await fetch(this.endpoint, { method: "DELETE", headers: this.headers(), credentials: "omit" });
    } catch {
      // the session expires on its own
    }
    this.session = null;
    this.version = null;
  }
}

async function listAll(page) {
  const tools = [];
  let cursor;
  for (let i = 0; i < MAX_PAGES; i += 1) {
    const result = await page(cursor);
    tools.push(...(result.tools || []));
    cursor = result.nextCursor;
    if (!cursor) return tools;
  }
  return tools;
}

export function client(era, endpoint, apiKey) {
  return era === LEGACY ? new LegacyClient(endpoint, apiKey) : new ModernClient(endpoint, apiKey);
}
