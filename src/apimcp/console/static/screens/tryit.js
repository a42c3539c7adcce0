// Try it: pick an exposition and one of its tools, fill the form made from the tool's input schema, and call it
// through the real gateway endpoint, in either era, as any MCP client would.

import { field, h, replace, uid } from "../dom.js";
import { markdown } from "../markdown.js";
import { client, LEGACY, MODERN } from "../mcp.js";
import { FormError, schemaForm } from "../schemaform.js";
import { endpointsOf } from "./expositions.js";

export async function render(screen, ctx, params) {
  const [expositions, plans] = await Promise.all([ctx.api.get("/expositions"), ctx.api.get("/plans")]);
  const planOf = new Map(plans.map((p) => [p.id, p]));
  const exposition = h("select", { name: "exposition" },
    expositions.map((e) => h("option", { value: e.id, selected: e.id === params.get("exposition") }, e.name || e.id)));
  const apiKey = h("input", { type: "password", name: "api_key", autocomplete: "off", spellcheck: "false" });
  const keyRow = field("The plan's API key", apiKey, "sent as Authorization: Bearer; kept in this page only").row;
  const eraName = uid("era");
  const eras = [[MODERN, `${MODERN} (stateless: one request per call)`], [LEGACY, `${LEGACY} (a session: initialize, then the call)`]]
    .map(([value, label], index) => {
      const input = h("input", { type: "radio", name: eraName, value, checked: index === 0, id: uid("r") });
      return { input, row: h("div", { class: "check" }, input, h("label", { for: input.id }, label)) };
    });
  const era = () => eras.find((e) => e.input.checked).input.value;
  const endpoint = h("p", { class: "hint" });
  const toolHolder = h("div", {});
  const result = h("section", { class: "result", "aria-live": "polite", "aria-labelledby": "result-title" },
    h("h2", { id: "result-title" }, "Result"), h("p", { class: "empty" }, "No call yet."));
  const current = () => {
    const chosen = expositions.find((e) => e.id === exposition.value);
    if (!chosen) return null;
    return { exposition: chosen, plan: planOf.get(chosen.plan_id), url: endpointsOf(chosen, ctx.gatewayBase())[0].url };
  };
  const sync = () => {
    const now = current();
    keyRow.hidden = !now || !now.plan || now.plan.inbound_mode !== "api_key";
    endpoint.textContent = now ? `Calls go to ${now.url}` : "";
    replace(toolHolder);
  };
  exposition.addEventListener("change", sync);
  sync();

  const load = h("form", { "aria-labelledby": "try-title" },
    h("h1", { id: "try-title" }, "Try it"),
    expositions.length === 0 ? h("p", { class: "empty" }, "Nothing is exposed yet.") : null,
    field("Exposition", exposition).row,
    endpoint,
    keyRow,
    h("fieldset", {}, h("legend", {}, "MCP revision"), eras.map((e) => e.row)),
    h("button", { type: "submit", disabled: expositions.length === 0 }, "List its tools"));
  load.addEventListener("submit", async (event) => {
    event.preventDefault();
    const now = current();
    if (!now) return;
    const mcp = client(era(), now.url, apiKey.value.trim());
    try {
      const tools = await mcp.listTools();
      showTools(ctx, toolHolder, tools, () => client(era(), now.url, apiKey.value.trim()), result);
      ctx.say(`${tools.length} tools at ${now.url}.`);
    } catch (error) {
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  replace(screen, load, toolHolder, result);
}

function showTools(ctx, holder, tools, newClient, result) {
  const tool = h("select", { name: "tool" }, tools.map((t, index) => h("option", { value: String(index) }, t.name)));
  const description = h("div", { class: "description", id: uid("tool-description") });
  tool.setAttribute("aria-describedby", description.id);
  const formHolder = h("div", {});
  let form = null;
  const sync = () => {
    const chosen = tools[Number(tool.value)];
    replace(description, chosen ? markdown(chosen.description || chosen.title || "") : null);
    form = chosen ? schemaForm(chosen.inputSchema || {}) : null;
    replace(formHolder, form ? form.node : null);
  };
  tool.addEventListener("change", sync);
  sync();
  const call = h("form", { "aria-labelledby": "call-title" },
    h("h2", { id: "call-title" }, "Call a tool"),
    field("Tool", tool).row,
    description,
    h("fieldset", {}, h("legend", {}, "Arguments"), formHolder),
    h("button", { type: "submit", disabled: tools.length === 0 }, "Call the tool"));
  call.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = tools[Number(tool.value)];
    let args;
    try {
      args = form.read();
    } catch (error) {
      ctx.fail(error);
      if (error instanceof FormError && error.input) error.input.focus();
      return;
    }
    const mcp = newClient();
    replace(result, h("h2", { id: "result-title" }, "Result"), h("p", {}, `Calling ${chosen.name}…`));
    try {
      const answer = await mcp.callTool(chosen, args);
      showResult(result, chosen.name, answer);
      if (answer.isError) ctx.fail(new Error(`${chosen.name} reported an error${firstText(answer)}`));
      else ctx.say(`${chosen.name} answered.`);
    } catch (error) {
      replace(result, h("h2", { id: "result-title" }, "Result"), h("p", { class: "error" }, error.message));
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  replace(holder, call);
}

/** ": " and the start of the result's first text, to say what went wrong ("" when it has no text). */
function firstText(answer) {
  const text = (answer.content || []).find((item) => item.type === "text" && typeof item.text === "string");
  return text ? `: ${text.text.length > 200 ? `${text.text.slice(0, 200)}…` : text.text}` : "";
}

function contentNode(item) {
  if (item.type === "text") return h("pre", { class: "output" }, item.text);
  if (item.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(item.mimeType || "")
    && /^[A-Za-z0-9+/]*={0,2}$/.test(item.data || "")) {
    return h("img", { src: `data:${item.mimeType};base64,${item.data}`, alt: "an image the tool returned" });
  }
  if (item.type === "resource" || item.type === "resource_link") {
    const uri = item.resource ? item.resource.uri : item.uri;
    const text = item.resource && typeof item.resource.text === "string" ? item.resource.text : "";
    return h("div", {}, h("p", {}, `Resource ${uri}`), text ? h("pre", { class: "output" }, text) : null);
  }
  return h("p", {}, `${item.type} content (${item.mimeType || "no media type"})`);
}

function showResult(node, name, answer) {
  if (answer.resultType && answer.resultType !== "complete") {
    replace(node, h("h2", { id: "result-title" }, "Result"),
      h("p", {}, `${name} answered ${answer.resultType}: it needs input the console cannot give (use an MCP client).`));
    return;
  }
  replace(node,
    h("h2", { id: "result-title" }, "Result"),
    h("p", { class: answer.isError ? "error" : "ok" }, answer.isError ? `${name} reported an error` : `${name} succeeded`),
    (answer.content || []).map(contentNode),
    answer.structuredContent !== undefined
      ? h("details", {}, h("summary", {}, "Structured content"), h("pre", { class: "output" }, JSON.stringify(answer.structuredContent, null, 2)))
      : null,
    h("details", {}, h("summary", {}, "The whole result"), h("pre", { class: "output" }, JSON.stringify(answer, null, 2))));
}
