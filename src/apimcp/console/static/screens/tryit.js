// Try it: pick an exposition and one of its tools, fill the form made from the tool's input schema, and call it
// through the real gateway endpoint, in either era, as any MCP client would; get its prompts, read its resources,
// send raw JSON-RPC. Every request is kept in the page's record (headers, bodies, time, copy as curl); a
// 2026-07-28 call that needs the user (an approval, a credential) asks in the page.

import { field, h, replace, uid } from "../dom.js";
import { markdown } from "../markdown.js";
import { askInput } from "../elicitation.js";
import { client, LEGACY, MODERN } from "../mcp.js";
import { FormError, schemaForm } from "../schemaform.js";
import { Transcript } from "../transcript.js";
import { endpointsOf } from "./expositions.js";
import { promptPanel, rawPanel, resourcePanel } from "./tryit_more.js";

export async function render(screen, ctx, params) {
  const [expositions, plans] = await Promise.all([ctx.api.all("/expositions"), ctx.api.all("/plans")]);
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
  const asked = h("div", {});
  const more = h("div", {});
  const transcript = new Transcript(ctx);
  const hooks = { onExchange: transcript.add, onInput: (requests) => askInput(asked, requests) };
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
    replace(more);
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
    const chosenEra = era();
    const newClient = () => client(chosenEra, now.url, apiKey.value.trim(), hooks);
    const mcp = newClient();
    try {
      const tools = await mcp.listTools();
      const [prompts, resources, templates] = [await mcp.listPrompts(), await mcp.listResources(), await mcp.listTemplates()];
      showTools(ctx, toolHolder, tools, newClient, result);
      replace(more, promptPanel(ctx, prompts, newClient, result),
        resourcePanel(ctx, resources, templates, newClient, result), rawPanel(ctx, newClient, result, chosenEra));
      ctx.say(`${tools.length} tools at ${now.url}.`);
    } catch (error) {
      ctx.fail(error);
    } finally {
      await mcp.close();
    }
  });
  replace(screen, load, toolHolder, asked, result, more, transcript.node);
}

export const MAX_SHOWN = 50; // the most matching tools listed at a time: type more to narrow

/** The tools whose name or title holds every word typed (case-insensitive), the ones whose name starts with it
 * first: `{matches, total}`, at most `MAX_SHOWN` of them. */
export function matchTools(tools, typed) {
  const words = typed.toLowerCase().split(/\s+/).filter(Boolean);
  const found = words.length === 0 ? tools : tools.filter((t) => {
    const text = `${t.name}\n${t.title || ""}`.toLowerCase();
    return words.every((word) => text.includes(word));
  });
  const first = words.join(" ");
  const ordered = first ? [...found.filter((t) => t.name.toLowerCase().startsWith(first)),
    ...found.filter((t) => !t.name.toLowerCase().startsWith(first))] : found;
  return { matches: ordered.slice(0, MAX_SHOWN), total: found.length };
}

/** A searchable list of tools (the ARIA combobox pattern: type to filter, Down and Up move through the matches,
 * Enter picks one, Escape closes the list): `{row, input, chosen()}`; `onPick(tool)` when one is picked. */
function toolPicker(tools, onPick) {
  const listId = uid("tools");
  const input = h("input", { type: "text", name: "tool", autocomplete: "off", spellcheck: "false", role: "combobox",
    "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": listId });
  const list = h("ul", { id: listId, role: "listbox", class: "picker", "aria-label": "Matching tools", hidden: true });
  const found = h("p", { class: "hint", id: uid("tools-found"), "aria-live": "polite" });
  const described = field("Tool", input, `type to find one of ${tools.length} tools by name or title; Down and Up `
    + "move through the matches, Enter picks one");
  let chosen = tools[0] || null;
  let options = [];
  let active = -1;
  input.value = chosen ? chosen.name : "";

  const open = (isOpen) => {
    list.hidden = !isOpen;
    input.setAttribute("aria-expanded", String(isOpen));
    if (!isOpen) input.removeAttribute("aria-activedescendant");
  };
  const highlight = (index) => {
    active = index;
    options.forEach(({ node }, i) => node.setAttribute("aria-selected", String(i === index)));
    if (index >= 0) {
      input.setAttribute("aria-activedescendant", options[index].node.id);
      options[index].node.scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  };
  const pick = (tool) => {
    chosen = tool;
    input.value = tool.name;
    open(false);
    found.textContent = "";
    onPick(tool);
  };
  const filter = () => {
    const { matches, total } = matchTools(tools, input.value);
    options = matches.map((tool) => {
      const node = h("li", { role: "option", id: uid("tool"), "aria-selected": "false" }, tool.name,
        tool.title && tool.title !== tool.name ? h("span", { class: "hint" }, ` ${tool.title}`) : null);
      node.addEventListener("mousedown", (event) => event.preventDefault()); // keeps the focus in the input
      node.addEventListener("click", () => pick(tool));
      return { tool, node };
    });
    replace(list, options.map((o) => o.node));
    active = -1;
    input.removeAttribute("aria-activedescendant");
    open(options.length > 0);
    found.textContent = total === 0 ? "No tool matches."
      : total > matches.length ? `${total} tools match; the first ${matches.length} are listed: type more to narrow.`
        : `${total} ${total === 1 ? "tool matches" : "tools match"}.`;
  };
  input.addEventListener("input", filter);
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (list.hidden) filter();
      if (!options.length) return;
      const step = event.key === "ArrowDown" ? 1 : -1;
      highlight(active < 0 ? (step > 0 ? 0 : options.length - 1) : (active + step + options.length) % options.length);
    } else if (event.key === "Enter" && !list.hidden) {
      event.preventDefault(); // picking is not calling
      const target = active >= 0 ? options[active] : (options.length === 1 ? options[0] : null);
      if (target) pick(target.tool);
    } else if (event.key === "Escape" && !list.hidden) {
      event.preventDefault();
      open(false);
    }
  });
  input.addEventListener("blur", () => {
    open(false);
    if (chosen && input.value !== chosen.name) {
      const exact = tools.find((t) => t.name === input.value.trim());
      if (exact) pick(exact);
    }
  });
  described.row.append(list, found);
  return { row: described.row, input, chosen: () => (chosen && input.value.trim() === chosen.name ? chosen : null) };
}

function showTools(ctx, holder, tools, newClient, result) {
  const description = h("div", { class: "description", id: uid("tool-description") });
  const formHolder = h("div", {});
  let form = null;
  const sync = (chosen) => {
    replace(description, chosen ? markdown(chosen.description || chosen.title || "") : null);
    form = chosen ? schemaForm(chosen.inputSchema || {}) : null;
    replace(formHolder, form ? form.node : null);
  };
  const picker = toolPicker(tools, sync);
  const tool = picker.input;
  tool.setAttribute("aria-describedby", `${tool.getAttribute("aria-describedby")} ${description.id}`);
  sync(picker.chosen());
  const call = h("form", { "aria-labelledby": "call-title" },
    h("h2", { id: "call-title" }, "Call a tool"),
    picker.row,
    description,
    h("fieldset", {}, h("legend", {}, "Arguments"), formHolder),
    h("button", { type: "submit", disabled: tools.length === 0 }, "Call the tool"));
  call.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = picker.chosen();
    if (!chosen) {
      ctx.fail(new Error(`no tool is named “${tool.value.trim()}”: pick one of the list`));
      tool.focus();
      return;
    }
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
      h("p", {}, `${name} answered ${answer.resultType}: the question it asked was left unanswered.`));
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
