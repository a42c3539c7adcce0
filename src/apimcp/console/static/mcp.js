// A small MCP client over Streamable HTTP, for the try-it panel: 2026-07-28 (stateless: every request carries
// its version in `_meta`, mirrored in MCP-Protocol-Version, Mcp-Method and Mcp-Name headers) or 2025-11-25
// (initialize, then requests in the session named by Mcp-Session-Id, deleted at the end). Every HTTP exchange is
// told to `onExchange` (method, headers with the Authorization masked, bodies, status, time) for the page's record
// of recent requests; a 2026-07-28 call that needs the user's input (an approval, a credential) asks `onInput`.

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

export const MASKED = "Bearer <the plan's API key>";
const MAX_KEPT_CHARS = 20000; // of each body kept in the record of an exchange

function kept(text) {
  return text.length > MAX_KEPT_CHARS ? `${text.slice(0, MAX_KEPT_CHARS)}… (${text.length} characters in all)` : text;
}

/** POST `body` (an object, or raw JSON text) to `endpoint`; `onExchange` hears of it once it is answered. */
async function send(endpoint, headers, body, onExchange) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const started = performance.now();
  let response;
  try {
    response = await fetch(endpoint, { method: "POST", headers, body: text, cache: "no-store", credentials: "omit" });
  } catch (error) {
    throw new McpError(`cannot reach ${endpoint} (${error.message}); a gateway on another origin must list this `
      + "console's origin in --cors-origin");
  }
  const answer = await response.text();
  if (onExchange) {
    const shownHeaders = { ...headers };
    if (shownHeaders.Authorization) shownHeaders.Authorization = MASKED;
    onExchange({
      at: Date.now(), url: endpoint, requestHeaders: shownHeaders, requestBody: kept(text), status: response.status,
      responseHeaders: Object.fromEntries(response.headers.entries()), responseBody: kept(answer),
      ms: Math.round(performance.now() - started),
    });
  }
  return { status: response.status, headers: response.headers, text: async () => answer };
}

function authorization(apiKey) {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
}

const MAX_INPUT_ROUNDS = 5; // rounds of input one call may ask for before the console gives up

export class ModernClient {
  constructor(endpoint, apiKey, { onExchange = null, onInput = null } = {}) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
    this.nextId = 1;
    this.onExchange = onExchange;
    this.onInput = onInput;
  }

  headersFor(method, params, extraHeaders = {}) {
    const headers = {
      "Content-Type": "application/json", Accept: ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method,
      ...authorization(this.apiKey), ...extraHeaders,
    };
    if (params && (method === "tools/call" || method === "prompts/get") && params.name !== undefined) {
      headers["Mcp-Name"] = headerValue(params.name);
    }
    if (params && method === "resources/read" && params.uri !== undefined) headers["Mcp-Name"] = headerValue(params.uri);
    return headers;
  }

  async request(method, params = {}, extraHeaders = {}) {
    const capabilities = this.onInput ? { elicitation: { form: {}, url: {} } } : {};
    const meta = {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientCapabilities": capabilities,
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    };
    let sent = { ...params, _meta: meta };
    for (let round = 0; ; round += 1) {
      const id = this.nextId++;
      const body = { jsonrpc: "2.0", id, method, params: sent };
      const answer = await answerOf(
        await send(this.endpoint, this.headersFor(method, params, extraHeaders), body, this.onExchange), id);
      if (answer.error) throw failed(answer, method);
      const result = answer.result;
      if (!result || result.resultType !== "input_required" || !this.onInput || round >= MAX_INPUT_ROUNDS) return result;
      const responses = await this.onInput(result.inputRequests || {});
      if (!responses) return result; // the user closed the question: the call stays unanswered
      sent = { ...params, _meta: meta, requestState: result.requestState, inputResponses: responses };
    }
  }

  /** What the server offers (`server/discover`): only what it offers is listed. */
  async capabilities() {
    if (!this.offered) {
      const found = await this.request("server/discover");
      this.offered = (found && found.capabilities) || {};
    }
    return this.offered;
  }

  /** `text` (a JSON-RPC message the user wrote) sent as it is, with this era's headers: the exchange. */
  async raw(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch (error) {
      throw new McpError(`the request is not JSON (${error.message})`);
    }
    const method = message && typeof message.method === "string" ? message.method : "";
    let exchange = null;
    await send(this.endpoint, this.headersFor(method, message && message.params), text, (seen) => {
      exchange = seen;
      if (this.onExchange) this.onExchange(seen);
    });
    return exchange;
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
  constructor(endpoint, apiKey, { onExchange = null } = {}) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
    this.nextId = 1;
    this.session = null;
    this.version = null;
    this.onExchange = onExchange;
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
    const response = await send(this.endpoint, this.headers(), { jsonrpc: "2.0", id, method: "initialize", params },
      this.onExchange);
    const answer = await answerOf(response, id);
    if (answer.error) throw failed(answer, "initialize");
    this.session = response.headers.get("mcp-session-id");
    this.version = answer.result.protocolVersion;
    this.offered = answer.result.capabilities || {};
    const note = await send(this.endpoint, this.headers(), { jsonrpc: "2.0", method: "notifications/initialized" },
      this.onExchange);
    if (note.status < 200 || note.status > 299) throw new McpError(`notifications/initialized answered HTTP ${note.status}`);
  }

  async request(method, params = {}) {
    if (!this.version) await this.initialize();
    const id = this.nextId++;
    const body = { jsonrpc: "2.0", id, method, params };
    const answer = await answerOf(await send(this.endpoint, this.headers(), body, this.onExchange), id);
    if (answer.error) throw failed(answer, method);
    return answer.result;
  }

  async capabilities() {
    if (!this.version) await this.initialize();
    return this.offered;
  }

  /** `text` sent as it is in the session (initialized first): the exchange. */
  async raw(text) {
    try {
      JSON.parse(text);
    } catch (error) {
      throw new McpError(`the request is not JSON (${error.message})`);
    }
    if (!this.version) await this.initialize();
    let exchange = null;
    await send(this.endpoint, this.headers(), text, (seen) => {
      exchange = seen;
      if (this.onExchange) this.onExchange(seen);
    });
    return exchange;
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

async function listAll(page, key = "tools") {
  const items = [];
  let cursor;
  for (let i = 0; i < MAX_PAGES; i += 1) {
    const result = await page(cursor);
    items.push(...(result[key] || []));
    cursor = result.nextCursor;
    if (!cursor) return items;
  }
  return items;
}

/** What both clients list besides tools, when the server offers it (`capabilities()`), else nothing. */
function lists() {
  const all = (method, key, capability) => async function listed() {
    const offered = await this.capabilities();
    if (!offered[capability]) return [];
    return listAll((cursor) => this.request(method, cursor ? { cursor } : {}), key);
  };
  return {
    listPrompts: all("prompts/list", "prompts", "prompts"),
    listResources: all("resources/list", "resources", "resources"),
    listTemplates: all("resources/templates/list", "resourceTemplates", "resources"),
    getPrompt(name, args) {
      return this.request("prompts/get", { name, arguments: args });
    },
    readResource(uri) {
      return this.request("resources/read", { uri });
    },
  };
}

for (const Client of [ModernClient, LegacyClient]) Object.assign(Client.prototype, lists());

export function client(era, endpoint, apiKey, hooks = {}) {
  return era === LEGACY ? new LegacyClient(endpoint, apiKey, hooks) : new ModernClient(endpoint, apiKey, hooks);
}
