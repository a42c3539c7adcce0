// The try-it panel's record of recent requests: the last `KEPT` HTTP exchanges with the gateway (request and
// response headers and bodies, status, time), kept in the tab's sessionStorage so they survive moving between
// screens, each with a "Copy as curl" button. The plan's API key is never kept: the Authorization header is
// masked when the exchange is recorded, and curl reads the key from $APIMCP_API_KEY.

import { copyButton, h, replace, when } from "./dom.js";
import { MASKED } from "./mcp.js";

const KEY = "apimcp.console.recent";
export const KEPT = 10;

function quoted(text) {
  return `'${String(text).replaceAll("'", "'\\''")}'`;
}

/** A curl command repeating `exchange` (the API key from the environment, never the page). */
export function curlOf(exchange) {
  const parts = ["curl -sS -X POST", quoted(exchange.url)];
  for (const [name, value] of Object.entries(exchange.requestHeaders)) {
    parts.push("-H", value === MASKED ? `"${name}: Bearer $APIMCP_API_KEY"` : quoted(`${name}: ${value}`));
  }
  parts.push("--data-raw", quoted(exchange.requestBody));
  return parts.join(" ");
}

function method(exchange) {
  try {
    const body = JSON.parse(exchange.requestBody);
    return body && typeof body.method === "string" ? body.method : "(a batch or a response)";
  } catch {
    return "(not JSON)";
  }
}

function headerLines(headers) {
  return Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join("\n");
}

/** One exchange, as the raw form and the record show it. */
export function exchangeNode(ctx, exchange) {
  return h("div", { class: "exchange" },
    h("p", {}, `HTTP ${exchange.status} in ${exchange.ms} ms · ${when(exchange.at)}`),
    h("h3", {}, "Request"), h("pre", { class: "output" }, `POST ${exchange.url}\n${headerLines(exchange.requestHeaders)}`),
    h("pre", { class: "output" }, exchange.requestBody),
    h("h3", {}, "Response"), h("pre", { class: "output" }, headerLines(exchange.responseHeaders)),
    h("pre", { class: "output" }, exchange.responseBody || "(no body)"),
    h("div", { class: "actions" }, copyButton(ctx, "Copy as curl", () => curlOf(exchange))));
}

/** Drop the record (the session ends, or moves to another organization). */
export function forgetTranscript() {
  sessionStorage.removeItem(KEY);
}

export class Transcript {
  constructor(ctx) {
    this.ctx = ctx;
    this.node = h("section", { class: "recent", "aria-labelledby": "recent-title" });
    try {
      const saved = JSON.parse(sessionStorage.getItem(KEY) || "[]");
      this.exchanges = Array.isArray(saved) ? saved.slice(0, KEPT) : [];
    } catch {
      this.exchanges = [];
    }
    this.add = this.add.bind(this);
    this.draw();
  }

  add(exchange) {
    this.exchanges = [exchange, ...this.exchanges].slice(0, KEPT);
    try {
      sessionStorage.setItem(KEY, JSON.stringify(this.exchanges));
    } catch {
      // a full storage keeps the record in the page only
    }
    this.draw();
  }

  draw() {
    replace(this.node, h("h2", { id: "recent-title" }, `Recent requests (${this.exchanges.length})`),
      this.exchanges.length === 0 ? h("p", { class: "empty" }, "None yet: every request the panel sends is kept here.")
        : h("ol", {}, this.exchanges.map((exchange) => h("li", {}, h("details", {},
          h("summary", {}, `${method(exchange)} · HTTP ${exchange.status} · ${exchange.ms} ms`),
          exchangeNode(this.ctx, exchange))))));
  }
}
