// Gateways and their health: the gateways the control plane has seen (live when seen lately), the groups that
// decide what each serves, and the configured gateway's own /healthz.

import { field, h, replace, table, when } from "../dom.js";

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

export async function render(screen, ctx) {
  const [gateways, groups] = await Promise.all([ctx.api.get("/gateways"), ctx.api.get("/gateway-groups")]);
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
      const parsed = {};
      for (const pair of groupLabels.value.split(",").map((p) => p.trim()).filter(Boolean)) {
        const [key, ...rest] = pair.split("=");
        if (!rest.length) throw new Error(`label "${pair}" must read key=value`);
        parsed[key.trim()] = rest.join("=").trim();
      }
      const group = await ctx.api.post("/gateway-groups", { name: name.value.trim(), labels: parsed });
      await render(screen, ctx);
      ctx.say(`Created gateway group ${group.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  replace(screen,
    h("h1", {}, "Gateways"),
    h("h2", {}, `Gateway at ${base}`),
    healthz,
    gateways.length === 0
      ? h("p", { class: "empty" }, "No gateway has synchronized yet.")
      : table("Gateways seen by the control plane", ["Name", "Health", "Labels", "Version", "Started", "Last seen"],
        gateways.map((g) => [g.name, health(g), labels(g.labels), g.version || "", when(g.started_at), when(g.last_seen)])),
    table("Gateway groups", ["Name", "Labels", "Created"], groups.map((g) => [g.name, labels(g.labels), when(g.created_at)])),
    create);
  healthz.textContent = `/healthz: ${await gatewayHealth(base)}`;
}
