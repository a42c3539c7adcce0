// Expositions: plans published on a gateway group, with the URLs MCP clients use and a configuration to copy.

import { clientConfig, serverName } from "../clientconfig.js";
import { copyButton, field, h, replace, table } from "../dom.js";
import { listing } from "../pager.js";

const ENDPOINT_ROLES = {
  named: "Canonical (Streamable HTTP, every revision: 2025-11-25 sessions and 2026-07-28 stateless)",
  id: "By id (Streamable HTTP, every revision)",
  service: "By service and version: the service's latest exposition (answers with a Link to the canonical URL)",
};

/** The exposition's endpoints as full URLs on the gateway, each with what it is. */
export function endpointsOf(exposition, gatewayBase) {
  const found = [];
  for (const path of exposition.endpoints) {
    const role = path === `/mcp/${exposition.id}` ? "id" : (exposition.name && found.length === 0 ? "named" : "service");
    found.push({ role, label: ENDPOINT_ROLES[role], url: `${gatewayBase}${path}` });
  }
  const main = found[0];
  found.push({ role: "sse", label: "HTTP+SSE, for 2024-11-05 clients (GET opens the stream)", url: `${main.url}/sse` });
  return found;
}

function gatewaySetting(ctx, onChange) {
  const input = h("input", { type: "url", name: "gateway", value: ctx.gatewayBase(), autocomplete: "off" });
  const form = h("form", { class: "inline", "aria-label": "Which gateway", "data-reads": "true" },
    field("Gateway base URL", input, "where MCP clients reach the gateway; apimcp serve: this page's origin").row,
    h("button", { type: "submit" }, "Use this gateway"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      ctx.setGatewayBase(input.value.trim());
      ctx.say(`MCP URLs now use ${ctx.gatewayBase()}.`);
      onChange();
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}

export async function render(screen, ctx, params) {
  const chosen = params.get("exposition");
  const [one, plans, groups] = await Promise.all([
    chosen ? ctx.api.get(`/expositions/${encodeURIComponent(chosen)}`) : null,
    ctx.api.all("/plans"), ctx.api.all("/gateway-groups"),
  ]);
  const planOf = new Map(plans.map((p) => [p.id, p]));
  const groupName = new Map(groups.map((g) => [g.id, g.name]));
  const rerender = () => render(screen, ctx, params).catch(ctx.fail);
  const cards = (found) => found.map((exposition) => card(ctx, exposition, planOf.get(exposition.plan_id),
    groupName.get(exposition.group_id), editForm(ctx, exposition, plans, groups)));
  const list = chosen ? null : listing(ctx, params, {
    screen: "expositions",
    noun: "expositions",
    hint: "name or id, its plan's name, its service's name and version",
    load: (query) => ctx.api.page(`/expositions?${query}`),
    empty: "No exposition yet: expose a plan.",
    show: cards,
  });
  replace(screen,
    h("h1", {}, "Expositions"),
    chosen ? h("p", {}, h("a", { href: "#/expositions" }, "All expositions")) : null,
    gatewaySetting(ctx, rerender),
    chosen ? cards([one]) : list.node,
    chosen ? null : createForm(ctx, plans, groups));
  if (list) await list.ready;
}

function card(ctx, exposition, plan, group, edit) {
  const title = exposition.name || exposition.id;
  const endpoints = endpointsOf(exposition, ctx.gatewayBase());
  const config = JSON.stringify(clientConfig(serverName(exposition, plan), endpoints[0].url, plan && plan.inbound_mode), null, 2);
  const configId = `config-${exposition.id}`;
  const remove = h("button", { type: "button", class: "danger" }, `Stop exposing ${title}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Stop exposing ${title}? Gateways drop the endpoint within a second.`)) return;
    try {
      await ctx.api.delete(`/expositions/${encodeURIComponent(exposition.id)}`);
      ctx.go("expositions", {}, `${title} is no longer exposed.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return h("article", { class: "card", "aria-labelledby": `expo-${exposition.id}` },
    h("h2", { id: `expo-${exposition.id}` }, `Exposition ${title}`),
    h("p", {}, `Plan ${plan ? plan.name : exposition.plan_id}, gateway group ${group || exposition.group_id}`,
      plan && plan.inbound_mode !== "none" ? `, inbound ${plan.inbound_mode}` : "", "."),
    table(`Endpoints of ${title}`, ["Endpoint", "URL", ""], endpoints.map((e) => [
      e.label, h("code", { class: "url" }, e.url), copyButton(ctx, `Copy the ${e.role} URL`, () => e.url),
    ])),
    h("h3", { id: `${configId}-title` }, "Client configuration"),
    h("pre", { class: "config", id: configId, "aria-labelledby": `${configId}-title`, tabindex: "0" }, config),
    edit,
    h("div", { class: "actions" },
      copyButton(ctx, "Copy the client configuration", () => config),
      h("a", { class: "button", href: `#/try?exposition=${encodeURIComponent(exposition.id)}` }, `Try ${title}`),
      plan ? h("a", { class: "button", href: `#/plans?plan=${encodeURIComponent(plan.id)}` }, `Edit plan ${plan.name}`) : null,
      remove));
}

function createForm(ctx, plans, groups) {
  const plan = h("select", { name: "plan" }, plans.map((p) => h("option", { value: p.id }, p.name)));
  const group = h("select", { name: "group" }, groups.map((g) => h("option", { value: g.id, selected: g.name === "default" }, g.name)));
  const name = h("input", { type: "text", name: "name", autocomplete: "off" });
  const form = h("form", { "aria-labelledby": "new-expo-title" },
    h("h2", { id: "new-expo-title" }, "New exposition"),
    field("Plan", plan).row,
    field("Gateway group", group).row,
    field("Name", name, "optional, unique in the organization: it makes the canonical URL /mcp/<organization>/<name>").row,
    h("button", { type: "submit", disabled: plans.length === 0 }, "Expose"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const exposition = await ctx.api.post("/expositions",
        { plan_id: plan.value, group_id: group.value || null, name: name.value.trim() || null });
      ctx.go("expositions", { exposition: exposition.id }, `Exposed at ${exposition.endpoints[0]}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}

/** Change the plan, the gateway group or the name (and so the canonical URL); only what changed is sent. */
function editForm(ctx, exposition, plans, groups) {
  const title = exposition.name || exposition.id;
  const plan = h("select", { name: "plan" }, plans.map((p) => h("option", { value: p.id, selected: p.id === exposition.plan_id }, p.name)));
  const group = h("select", { name: "group" },
    groups.map((g) => h("option", { value: g.id, selected: g.id === exposition.group_id }, g.name)));
  const name = h("input", { type: "text", name: "name", autocomplete: "off", value: exposition.name || "" });
  const form = h("form", { "aria-label": `Edit the exposition ${title}` },
    field(`Plan of ${title}`, plan).row,
    field(`Gateway group of ${title}`, group).row,
    field(`Name of ${title}`, name, "its canonical URL is /mcp/<organization>/<name>; empty: no name (then /mcp/<id>)").row,
    h("button", { type: "submit" }, `Save the exposition ${title}`));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const changed = {};
    if (plan.value !== exposition.plan_id) changed.plan_id = plan.value;
    if (group.value !== exposition.group_id) changed.group_id = group.value;
    if (name.value.trim() !== (exposition.name || "")) changed.name = name.value.trim() || null;
    if (Object.keys(changed).length === 0) {
      ctx.say("Nothing changed.");
      return;
    }
    try {
      const saved = await ctx.api.patch(`/expositions/${encodeURIComponent(exposition.id)}`, changed);
      ctx.go("expositions", { exposition: saved.id },
        `Saved the exposition ${saved.name || saved.id} (${Object.keys(changed).join(", ")}): now at ${ctx.gatewayBase()}${saved.endpoints[0]}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return h("details", {}, h("summary", {}, `Edit the exposition ${title}`), form);
}
