// Try it beyond tools: get a prompt with its arguments, read a resource or a resource template's URI (its
// variables filled), and send a raw JSON-RPC message with the era's headers, seeing the exchange whole.

import { field, h, replace, uid } from "../dom.js";
import { MODERN } from "../mcp.js";
import { exchangeNode } from "../transcript.js";

function heading(text) {
  return h("h2", { id: uid("h") }, text);
}

function resultOf(result, title, ...parts) {
  replace(result, h("h2", { id: "result-title" }, "Result"), h("p", { class: "ok" }, title), parts);
}

function contents(items) {
  return (items || []).map((item) => h("div", {}, h("p", {}, item.uri || ""),
    typeof item.text === "string" ? h("pre", { class: "output" }, item.text)
      : h("p", {}, `binary content (${item.mimeType || "no media type"}, ${(item.blob || "").length} base64 characters)`)));
}

/** Get one of `prompts` with its arguments. */
export function promptPanel(ctx, prompts, newClient, result) {
  const title = heading("Get a prompt");
  if (prompts.length === 0) return h("section", { "aria-labelledby": title.id }, title, h("p", { class: "empty" }, "No prompt."));
  const chosen = h("select", { name: "prompt" }, prompts.map((p, i) => h("option", { value: String(i) }, p.name)));
  const holder = h("div", {});
  let inputs = [];
  const sync = () => {
    const prompt = prompts[Number(chosen.value)];
    inputs = (prompt.arguments || []).map((argument) => {
      const input = h("input", { type: "text", name: argument.name, autocomplete: "off", required: Boolean(argument.required) });
      return { argument, input, row: field(argument.required ? `${argument.name} (required)` : argument.name, input,
        argument.description).row };
    });
    replace(holder, prompt.description ? h("p", { class: "hint" }, prompt.description) : null, inputs.map((i) => i.row));
  };
  chosen.addEventListener("change", sync);
  sync();
  const form = h("form", { "aria-labelledby": title.id }, title, field("Prompt", chosen).row, holder,
    h("button", { type: "submit" }, "Get the prompt"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const prompt = prompts[Number(chosen.value)];
    const args = Object.fromEntries(inputs.filter((i) => i.input.value !== "").map((i) => [i.argument.name, i.input.value]));
    const mcp = newClient();
    try {
      const answer = await mcp.getPrompt(prompt.name, args);
      resultOf(result, `${prompt.name}: ${(answer.messages || []).length} messages`,
        (answer.messages || []).map((m) => h("div", {}, h("p", {}, m.role),
          h("pre", { class: "output" }, m.content && m.content.type === "text" ? m.content.text : JSON.stringify(m.content, null, 2)))));
      ctx.say(`${prompt.name} answered.`);
    } catch (error) {
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  return form;
}

const EXPRESSION = /\{([+#./;?&]?)([^{}]*)\}/g;
const VARSPEC = /^([A-Za-z0-9_.%]+)(?::([1-9]\d{0,3})|\*)?$/;
// RFC 6570's operators: what starts the expansion, what joins its values, whether they are named, and whether
// reserved characters pass as they are
const OPERATORS = {
  "": { first: "", sep: ",", named: false, reserved: false },
  "+": { first: "", sep: ",", named: false, reserved: true },
  "#": { first: "#", sep: ",", named: false, reserved: true },
  ".": { first: ".", sep: ".", named: false, reserved: false },
  "/": { first: "/", sep: "/", named: false, reserved: false },
  ";": { first: ";", sep: ";", named: true, reserved: false },
  "?": { first: "?", sep: "&", named: true, reserved: false },
  "&": { first: "&", sep: "&", named: true, reserved: false },
};
const RESERVED = ":/?#[]@!$&'()*+,;=";

function specs(body) {
  return body.split(",").map((spec) => VARSPEC.exec(spec)).filter(Boolean)
    .map(([, name, length]) => ({ name, length: length ? Number(length) : null }));
}

/** The variables of an RFC 6570 template (`{var}`, `{+var}`, `{?a,b}`...), each once. */
export function variables(template) {
  return [...new Set([...template.matchAll(EXPRESSION)].flatMap((m) => specs(m[2]).map((s) => s.name)))];
}

function encoded(text, reserved) {
  let out = "";
  for (const char of text) {
    if (/[A-Za-z0-9\-._~]/.test(char) || (reserved && RESERVED.includes(char))) out += char;
    else out += encodeURIComponent(char).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  }
  return out;
}

/** `template` with its variables filled from `values` (RFC 6570 level 3; an empty field is a variable not given). */
export function expand(template, values) {
  return template.replace(EXPRESSION, (_, operator, body) => {
    const op = OPERATORS[operator];
    const parts = [];
    for (const { name, length } of specs(body)) {
      const value = values[name];
      if (value === undefined || value === null || value === "") continue;
      const text = encoded(length ? [...value].slice(0, length).join("") : value, op.reserved);
      parts.push(op.named ? `${name}=${text}` : text);
    }
    return parts.length ? op.first + parts.join(op.sep) : "";
  });
}

/** Read one of `resources`, or one of `templates` with its variables filled. */
export function resourcePanel(ctx, resources, templates, newClient, result) {
  const title = heading("Read a resource");
  const entries = [...resources.map((r) => ({ label: r.name ? `${r.name} (${r.uri})` : r.uri, uri: r.uri })),
    ...templates.map((t) => ({ label: `${t.name || t.uriTemplate} (template ${t.uriTemplate})`, template: t.uriTemplate }))];
  if (entries.length === 0) return h("section", { "aria-labelledby": title.id }, title, h("p", { class: "empty" }, "No resource."));
  const chosen = h("select", { name: "resource" }, entries.map((e, i) => h("option", { value: String(i) }, e.label)));
  const holder = h("div", {});
  let inputs = [];
  const sync = () => {
    const entry = entries[Number(chosen.value)];
    inputs = entry.template ? variables(entry.template).map((name) => {
      const input = h("input", { type: "text", name, autocomplete: "off", required: true });
      return { name, input, row: field(name, input, `fills {${name}} of the template`).row };
    }) : [];
    replace(holder, inputs.map((i) => i.row));
  };
  chosen.addEventListener("change", sync);
  sync();
  const form = h("form", { "aria-labelledby": title.id }, title, field("Resource", chosen).row, holder,
    h("button", { type: "submit" }, "Read the resource"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const entry = entries[Number(chosen.value)];
    const uri = entry.template ? expand(entry.template, Object.fromEntries(inputs.map((i) => [i.name, i.input.value]))) : entry.uri;
    const mcp = newClient();
    try {
      const answer = await mcp.readResource(uri);
      resultOf(result, `${uri}: ${(answer.contents || []).length} contents`, contents(answer.contents));
      ctx.say(`${uri} was read.`);
    } catch (error) {
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  return form;
}

/** A first message to edit: tools/list, with the `_meta` a 2026-07-28 request carries. */
function example(modern) {
  const params = modern ? { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "apimcp-console", version: "1" } } } : {};
  return JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params }, null, 2);
}

/** A JSON-RPC message written by hand, sent with the era's headers (and, in 2026-07-28, nothing added to its
 * params: what is written is what is sent). */
export function rawPanel(ctx, newClient, result, era) {
  const title = heading("Raw JSON-RPC");
  const body = h("textarea", { name: "raw", rows: "10", spellcheck: "false", value: example(era === MODERN) });
  const form = h("form", { "aria-labelledby": title.id }, title,
    field("Message", body, "sent as written, with the era's headers (Content-Type, Accept, MCP-Protocol-Version, "
      + "Mcp-Method, Mcp-Name, the session's id, the API key); a 2026-07-28 request carries its version in "
      + "params._meta").row,
    h("button", { type: "submit" }, "Send the message"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const mcp = newClient();
    try {
      const exchange = await mcp.raw(body.value);
      resultOf(result, `HTTP ${exchange.status} in ${exchange.ms} ms`, exchangeNode(ctx, exchange));
      ctx.say(`The gateway answered HTTP ${exchange.status}.`);
    } catch (error) {
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  return form;
}
