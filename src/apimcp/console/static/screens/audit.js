// Audit: the newest events the gateways reported for the plans that audit (one per MCP request, answered or
// refused by authentication or a rate limit, and one per tool call a script made), filtered as the REST API
// filters them: by exposition, at most `limit` of them.

import { field, h, replace, table, when } from "../dom.js";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10000; // what the control plane keeps per organization, and the most it answers

function limitOf(params) {
  const asked = Number(params.get("limit") || DEFAULT_LIMIT);
  return Number.isInteger(asked) && asked >= 1 && asked <= MAX_LIMIT ? asked : DEFAULT_LIMIT;
}

function seconds(time) {
  return typeof time === "number" ? when(time * 1000) : when(time);
}

function detail(event) {
  return [event.error_code !== null && event.error_code !== undefined ? `error ${event.error_code}` : null,
    event.reason, event.status ? `HTTP ${event.status}` : null,
    typeof event.retry_after === "number" ? `retry after ${event.retry_after} s` : null].filter(Boolean).join(", ");
}

// A call a script made: the custom tool whose script it was, and that tool's exposition when it is another.
function via(event) {
  const made = event.via;
  if (!made || typeof made !== "object" || !made.tool) return "";
  const where = made.exposition || made.exposition_id;
  return where && where !== (event.exposition || event.exposition_id) ? `${made.tool} (${where})` : made.tool;
}

export async function render(screen, ctx, params) {
  const limit = limitOf(params);
  const chosen = params.get("exposition") || "";
  const query = new URLSearchParams({ limit: String(limit) });
  if (chosen) query.set("exposition", chosen);
  const [events, expositions] = await Promise.all([
    ctx.api.get(`/audit?${query}`), ctx.api.get("/expositions"),
  ]);
  const exposition = h("select", { name: "exposition" },
    h("option", { value: "" }, "(every exposition)"),
    expositions.map((e) => h("option", { value: e.id, selected: e.id === chosen || e.name === chosen }, e.name || e.id)));
  const count = h("input", { type: "number", name: "limit", min: "1", max: String(MAX_LIMIT), step: "1",
    value: String(limit), required: true });
  const filters = h("form", { class: "inline", "aria-label": "Audit filters" },
    field("Exposition", exposition).row,
    field("At most", count, `the newest events, 1 to ${MAX_LIMIT} (the control plane keeps the newest ${MAX_LIMIT})`).row,
    h("button", { type: "submit" }, "Show the events"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = { limit: count.value.trim() || String(DEFAULT_LIMIT) };
    if (exposition.value) next.exposition = exposition.value;
    ctx.go("audit", next);
  });
  const refresh = h("button", { type: "button" }, "Refresh");
  refresh.addEventListener("click", () => {
    render(screen, ctx, params).then(() => ctx.say("Refreshed the audit events."), ctx.fail);
  });
  const where = chosen ? ` of ${exposition.selectedOptions[0] ? exposition.selectedOptions[0].textContent : chosen}` : "";
  replace(screen,
    h("h1", {}, "Audit"),
    h("p", {}, "One event per MCP request of the plans that audit (a plan's ",
      h("a", { href: "#/plans" }, "Audit every request"), " setting), answered or refused: by authentication "
      + "(HTTP 401 or 403) or by a rate limit (HTTP 429, with whose limit it was and when to retry), and one per "
      + "tool call a custom tool's script made into the exposition (Via names that tool). Never arguments, "
      + "results or tokens. Gateways report them every second."),
    filters,
    h("div", { class: "actions" }, refresh),
    events.length === 0
      ? h("p", { class: "empty" }, `No audit event${where} yet.`)
      : table(`Audit events${where}, newest first (${events.length}${events.length === limit ? ", the limit" : ""})`,
        ["Time", "Action", "Target", "Outcome", "Duration (ms)", "Exposition", "User", "Client", "Via", "Detail"],
        events.map((e) => [
          seconds(e.time), e.action, e.target || "", e.outcome, e.duration_ms ?? "", e.exposition || e.exposition_id,
          e.user || "", e.client || "", via(e), detail(e),
        ])));
}
