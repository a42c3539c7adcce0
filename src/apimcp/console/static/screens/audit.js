// Audit: the newest events the gateways reported for the plans that audit (one per MCP request, answered or
// refused by authentication or a rate limit, and one per tool call a script made; beyond the first few refusals
// alike in a minute, one event counts the rest), filtered as the REST API filters them: by exposition, by kind
// (refusals or the others), at most `limit` of them.

import { field, h, replace, table, when } from "../dom.js";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10000; // the most the control plane answers (it keeps as many refusals, and others)
const KINDS = { "": "(every event)", "false": "answered requests and script calls", "true": "refusals" };

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
    typeof event.retry_after === "number" ? `retry after ${event.retry_after} s` : null,
    Number.isInteger(event.messages) && event.messages > 1 ? `${event.messages} messages refused` : null,
    span(event) && `${event.count} times, ${span(event)}`,
    event.overflow === true ? "from more clients than the gateway tells apart" : null].filter(Boolean).join(", ");
}

// A summary of refusals stands for `count` of them, from its first time to its last; any other event for one.
function count(event) {
  return Number.isInteger(event.count) && event.count > 1 ? `×${event.count}` : "";
}

function span(event) {
  return typeof event.first_time === "number" && typeof event.last_time === "number"
    ? `${seconds(event.first_time)} to ${seconds(event.last_time)}` : null;
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
  const refused = ["true", "false"].includes(params.get("refused")) ? params.get("refused") : "";
  const query = new URLSearchParams({ limit: String(limit) });
  if (chosen) query.set("exposition", chosen);
  if (refused) query.set("refused", refused);
  const [events, expositions] = await Promise.all([
    ctx.api.get(`/audit?${query}`), ctx.api.all("/expositions"),
  ]);
  const exposition = h("select", { name: "exposition" },
    h("option", { value: "" }, "(every exposition)"),
    expositions.map((e) => h("option", { value: e.id, selected: e.id === chosen || e.name === chosen }, e.name || e.id)));
  const kind = h("select", { name: "refused" },
    Object.entries(KINDS).map(([value, label]) => h("option", { value, selected: value === refused }, label)));
  const most = h("input", { type: "number", name: "limit", min: "1", max: String(MAX_LIMIT), step: "1",
    value: String(limit), required: true });
  const filters = h("form", { class: "inline", "aria-label": "Audit filters" },
    field("Exposition", exposition).row,
    field("Kind", kind, "refusals are kept apart: however many, they never push out the others").row,
    field("At most", most, `the newest events, 1 to ${MAX_LIMIT} (the control plane keeps the newest ${MAX_LIMIT} `
      + `refusals and the newest ${MAX_LIMIT} others)`).row,
    h("button", { type: "submit" }, "Show the events"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = { limit: most.value.trim() || String(DEFAULT_LIMIT) };
    if (exposition.value) next.exposition = exposition.value;
    if (kind.value) next.refused = kind.value;
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
      + "tool call a custom tool's script made into the exposition (Via names that tool). Beyond the first three "
      + "refusals alike in a minute, one event counts the rest (Count). Never arguments, results or tokens. "
      + "Gateways report them every second."),
    filters,
    h("div", { class: "actions" }, refresh),
    events.length === 0
      ? h("p", { class: "empty" }, `No audit event${where} yet.`)
      : table(`Audit events${where}, newest first (${events.length}${events.length === limit ? ", the limit" : ""})`,
        ["Time", "Count", "Action", "Target", "Outcome", "Duration (ms)", "Exposition", "User", "Client", "Via",
          "Detail"],
        events.map((e) => [
          seconds(e.time), count(e), e.action, e.target || "", e.outcome, e.duration_ms ?? "",
          e.exposition || e.exposition_id, e.user || "", e.overflow === true ? "(many)" : e.client || "", via(e),
          detail(e),
        ])));
}
