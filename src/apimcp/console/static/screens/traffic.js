// Traffic, the home screen: what the gateways did over the last hour (by minute) or day (by hour), for the
// organization, one exposition or one tool: calls, errors by kind, latency and backend latency, the busiest and
// the failing tools, and each gateway's health and the revision it serves. Gateways report every few seconds;
// the screen refreshes itself every REFRESH_MS while it is shown and Live is on.

import { callBars, latencyLines } from "../charts.js";
import { field, h, replace, table, when } from "../dom.js";

export const REFRESH_MS = 10000;
const WINDOWS = { hour: "the last hour, by minute", day: "the last day, by hour" };
const KINDS = {
  tool_error: "tool errors (the backend or a check answered an error)",
  error: "protocol errors (JSON-RPC)",
  refused: "refused at the door (401, 403)",
  limited: "rate limited (429)",
  cancelled: "cancelled by the client",
  input_required: "waiting for the user's input",
};

function ms(value) {
  return typeof value === "number" ? `${value < 10 ? value.toFixed(1) : Math.round(value)} ms` : "–";
}

function rate(errors, calls) {
  return calls ? `${((100 * errors) / calls).toFixed(1)}%` : "–";
}

function link(params, text) {
  return h("a", { href: `#/traffic?${new URLSearchParams(params)}` }, text);
}

function card(label, value, detail) {
  return h("div", { class: "figure" }, h("p", { class: "figure-label" }, label), h("p", { class: "figure-value" }, value),
    detail ? h("p", { class: "hint" }, detail) : null);
}

function toolRows(tools, windowName) {
  return tools.map((t) => [
    link({ window: windowName, exposition: t.exposition_id, tool: t.tool }, t.tool),
    link({ window: windowName, exposition: t.exposition_id }, t.exposition || t.exposition_id),
    String(t.calls), String(t.errors), rate(t.errors, t.calls), ms(t.p50_ms), ms(t.p95_ms), ms(t.backend_p95_ms),
  ]);
}

const TOOL_HEADERS = ["Tool", "Exposition", "Calls", "Errors", "Error rate", "p50", "p95", "Backend p95"];

function figures(data, windowName, scopeName) {
  const totals = data.totals;
  const kinds = Object.entries(totals.outcomes);
  const series = data.series;
  return [
    h("div", { class: "figures" },
      card("Calls", String(totals.calls), WINDOWS[windowName]),
      card("Errors", String(totals.errors), `${rate(totals.errors, totals.calls)} of calls`),
      card("Latency p50 / p95", `${ms(totals.p50_ms)} / ${ms(totals.p95_ms)}`, "as the gateway answered"),
      card("Backend p50 / p95", `${ms(totals.backend_p50_ms)} / ${ms(totals.backend_p95_ms)}`,
        "time spent waiting on backends")),
    h("h2", {}, "Calls and errors"),
    callBars(`Calls ${scopeName}, ${WINDOWS[windowName]}: ${totals.calls} calls, ${totals.errors} errors`, series),
    h("p", { class: "legend" }, h("span", { class: "key bar" }), " answered ", h("span", { class: "key failed" }),
      " failed"),
    h("h2", {}, "Latency"),
    latencyLines(`Latency ${scopeName}, ${WINDOWS[windowName]}: p50 ${ms(totals.p50_ms)}, p95 ${ms(totals.p95_ms)}`,
      series, [["p50_ms", "p50"], ["p95_ms", "p95"], ["backend_p95_ms", "backend"]]),
    h("p", { class: "legend" }, h("span", { class: "key p50" }), " p50 ", h("span", { class: "key p95" }), " p95 ",
      h("span", { class: "key backend" }), " backend p95"),
    h("details", {}, h("summary", {}, "The figures of each ", windowName === "hour" ? "minute" : "hour"),
      table(`Traffic ${scopeName} by ${windowName === "hour" ? "minute" : "hour"}`,
        ["From", "Calls", "Errors", "p50", "p95", "Backend p95"],
        series.filter((p) => p.calls).map((p) => [when(p.t * 1000), String(p.calls), String(p.errors), ms(p.p50_ms),
          ms(p.p95_ms), ms(p.backend_p95_ms)]))),
    h("h2", {}, "Errors by kind"),
    kinds.length === 0
      ? h("p", { class: "empty" }, "No error.")
      : table(`Requests ${scopeName} that did not succeed, by kind`, ["Kind", "Requests"],
        kinds.map(([kind, count]) => [KINDS[kind] || kind, String(count)])),
  ];
}

function organizationParts(data, windowName) {
  return [
    h("h2", {}, "Busiest tools"),
    data.busiest.length === 0 ? h("p", { class: "empty" }, "No tool was called.")
      : table("Busiest tools", TOOL_HEADERS, toolRows(data.busiest, windowName)),
    h("h2", {}, "Failing tools"),
    data.failing.length === 0 ? h("p", { class: "empty" }, "No tool call failed.")
      : table("Failing tools, most errors first", TOOL_HEADERS, toolRows(data.failing, windowName)),
    h("h2", {}, "Expositions"),
    data.expositions.length === 0 ? h("p", { class: "empty" }, "No request reached an exposition.")
      : table("Expositions by calls", ["Exposition", "Calls", "Errors", "Error rate", "p50", "p95"],
        data.expositions.map((e) => [link({ window: windowName, exposition: e.exposition_id }, e.exposition || e.exposition_id),
          String(e.calls), String(e.errors), rate(e.errors, e.calls), ms(e.p50_ms), ms(e.p95_ms)])),
  ];
}

function gatewayPart(data) {
  return [
    h("h2", {}, "Gateways"),
    data.gateways.length === 0
      ? h("p", { class: "empty" }, "No gateway has connected yet.")
      : table("Gateways, their health and the revision each serves", ["Gateway", "Health", "Last seen", "Revision"],
        data.gateways.map((g) => [g.name,
          h("span", { class: g.healthy ? "ok" : "error" }, g.healthy ? "up" : `silent for ${Math.round(g.silent_seconds)} s`),
          when(g.last_seen),
          g.up_to_date ? `${g.revision} (latest)` : `${g.revision} (latest is ${g.latest_revision})`])),
  ];
}

function scopeOf(params, data) {
  const exposition = params.get("exposition");
  const tool = params.get("tool");
  const named = data && data.expositions.length ? data.expositions[0].exposition || exposition : exposition;
  if (tool) return { title: `Traffic of ${tool}`, name: `of tool ${tool}${named ? ` in ${named}` : ""}` };
  if (exposition) return { title: `Traffic of ${named}`, name: `of exposition ${named}` };
  return { title: "Traffic", name: "of every exposition" };
}

export async function render(screen, ctx, params) {
  const windowName = WINDOWS[params.get("window")] ? params.get("window") : "hour";
  const query = new URLSearchParams({ window: windowName });
  for (const key of ["exposition", "tool"]) if (params.get(key)) query.set(key, params.get(key));
  const load = () => ctx.api.get(`/traffic?${query}`);
  const first = await load();
  const scope = scopeOf(params, first);
  const chosen = h("select", { name: "window" },
    Object.entries(WINDOWS).map(([value, label]) => h("option", { value, selected: value === windowName }, label)));
  chosen.addEventListener("change", () => {
    const next = Object.fromEntries(query);
    next.window = chosen.value;
    ctx.go("traffic", next);
  });
  const live = h("input", { type: "checkbox", checked: true, id: "traffic-live" });
  const content = h("div", { class: "traffic" });
  const stamp = h("p", { class: "hint", "aria-live": "off" });
  const draw = (data) => {
    const parts = figures(data, windowName, scope.name);
    if (!params.get("exposition") && !params.get("tool")) parts.push(...organizationParts(data, windowName));
    else if (!params.get("tool")) parts.push(h("h2", {}, "Busiest tools"), data.busiest.length === 0
      ? h("p", { class: "empty" }, "No tool was called.")
      : table("Busiest tools of the exposition", TOOL_HEADERS, toolRows(data.busiest, windowName)));
    parts.push(...gatewayPart(data));
    replace(content, parts);
    stamp.textContent = `Updated ${new Date().toLocaleTimeString()}.`;
  };
  const back = params.get("tool") && params.get("exposition")
    ? link({ window: windowName, exposition: params.get("exposition") }, "The exposition's traffic")
    : params.get("exposition") || params.get("tool") ? link({ window: windowName }, "Every exposition's traffic") : null;
  const findability = params.get("exposition") && !params.get("tool")
    ? h("a", { href: `#/discovery?${new URLSearchParams({ exposition: params.get("exposition") })}` },
      "How well search finds its tools") : null;
  replace(screen,
    h("h1", {}, scope.title),
    h("p", {}, "What the gateways answered, as they report it every few seconds: calls, errors and latency. Follow "
      + "a tool or an exposition for its own figures; the ", h("a", { href: "#/audit" }, "audit trail"), " lists "
      + "each request of the plans that audit."),
    h("div", { class: "inline" }, field("Window", chosen).row,
      h("div", { class: "check" }, live, h("label", { for: live.id }, "Live (refresh every 10 s)")),
      back, findability),
    stamp,
    content);
  draw(first);
  const timer = setInterval(async () => {
    if (!screen.isConnected) {
      clearInterval(timer);
      return;
    }
    if (!live.checked || document.hidden) return;
    try {
      draw(await load());
    } catch (error) {
      clearInterval(timer);
      ctx.fail(error);
    }
  }, REFRESH_MS);
}
