// Gateways and their health: the gateways the control plane has seen (live when seen lately), the groups that
// decide what each serves, and the configured gateway's own /healthz.

import { field, h, parseLabels, replace, table, when } from "../dom.js";
import { quotaSection } from "./quotas.js";
import { listing } from "../pager.js";

const LIVE_SECONDS = 60; // gateways long-poll for changes every 25 s and are seen again at least then

export function health(gateway, now = Date.now()) {
  const seconds = (now - new Date(gateway.last_seen).getTime()) / 1000;
  return seconds <= LIVE_SECONDS ? "live" : `not seen for ${Math.round(seconds / 60)} min`;
}

function labels(map) {
  const entries = Object.entries(map || {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(", ") : "(none: serves every group)";
}

async function gatewayHealth(base) {
  try {
    const response = await fetch(`${base}/healthz`, { cache: "no-store", credentials: "omit" });
    if (!response.ok) return `HTTP ${response.status}`;
    const body = await response.json();
    return `${body.status}, revision ${body.revision}, ${body.expositions} expositions`;
  } catch (error) {
    const elsewhere = new URL(base).origin !== window.location.origin;
    return `not readable from this page (${error.message})${elsewhere
      ? "; a gateway on another origin answers it only to origins it allows (CORS): its last sync is below" : ""}`;
  }
}

export async function render(screen, ctx, params = new URLSearchParams()) {
  const again = () => render(screen, ctx, params);
  const gateways = listing(ctx, params, {
    screen: "gateways",
    prefix: "gateways_",
    noun: "gateways",
    hint: "name, labels (zone=eu), version or host name",
    load: (query) => ctx.api.page(`/gateways?${query}`),
    empty: "No gateway has synchronized yet.",
    show: (found) => table("Gateways seen by the control plane", ["Name", "Health", "Labels", "Version", "Started",
      "Last seen"], found.map((g) => [g.name, health(g), labels(g.labels), g.version || "", when(g.started_at),
      when(g.last_seen)])),
  });
  const groups = listing(ctx, params, {
    screen: "gateways",
    prefix: "groups_",
    noun: "gateway groups",
    hint: "name or labels (zone=eu)",
    load: (query) => ctx.api.page(`/gateway-groups?${query}`),
    empty: "No gateway group.",
    show: (found) => table("Gateway groups", ["Name", "Labels", "Created", ""],
      found.map((g) => [g.name, labels(g.labels), when(g.created_at), groupActions(ctx, again, g)])),
  });
  const quotas = quotaSection(ctx);
  const base = ctx.gatewayBase();
  const healthz = h("p", { id: "healthz" }, "Asking…");
  const name = h("input", { type: "text", name: "group_name", autocomplete: "off", required: true });
  const groupLabels = h("input", { type: "text", name: "group_labels", autocomplete: "off" });
  const create = h("form", { "aria-labelledby": "group-title" },
    h("h2", { id: "group-title" }, "New gateway group"),
    field("Group name", name).row,
    field("Labels", groupLabels, "comma-separated key=value; a gateway serves the group when each of its labels is in it").row,
    h("button", { type: "submit" }, "Create the group"));
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const group = await ctx.api.post("/gateway-groups", { name: name.value.trim(), labels: parseLabels(groupLabels.value) });
      await again();
      ctx.say(`Created gateway group ${group.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  replace(screen,
    h("h1", {}, "Gateways"),
    quotas.node,
    h("h2", {}, `Gateway at ${base}`),
    healthz,
    h("h2", {}, "Gateways seen by the control plane"),
    gateways.node,
    h("h2", {}, "Gateway groups"),
    groups.node,
    create);
  await Promise.all([gateways.ready, groups.ready]);
  await quotas.ready;
  healthz.textContent = `/healthz: ${await gatewayHealth(base)}`;
}

function labelText(map) {
  return Object.entries(map || {}).map(([k, v]) => `${k}=${v}`).join(", ");
}

/** Edit a group's labels (which gateways serve it), or delete it (the API refuses while it has expositions). */
function groupActions(ctx, again, group) {
  const input = h("input", { type: "text", name: "labels", autocomplete: "off", value: labelText(group.labels) });
  const edit = h("details", {},
    h("summary", {}, `Edit the labels of ${group.name}`),
    h("form", { "aria-label": `Labels of the group ${group.name}` },
      field(`Labels of ${group.name}`, input, "comma-separated key=value; empty: every gateway serves it").row,
      h("button", { type: "submit" }, `Save the labels of ${group.name}`)));
  edit.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const saved = await ctx.api.patch(`/gateway-groups/${encodeURIComponent(group.id)}`, { labels: parseLabels(input.value) });
      await again();
      ctx.say(`Saved the labels of ${saved.name}: ${labels(saved.labels)}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  const remove = h("button", { type: "button", class: "danger" }, `Delete the group ${group.name}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete the gateway group ${group.name}?`)) return;
    try {
      await ctx.api.delete(`/gateway-groups/${encodeURIComponent(group.id)}`);
      await again();
      ctx.say(`Deleted the gateway group ${group.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return h("div", { class: "actions" }, edit, remove);
}
