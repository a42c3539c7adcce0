// Discovery: how well search finds each tool of an exposition, and what each listing mode costs a model's
// context: the control plane's discovery report (queries made from each tool's texts and shape, searched as
// `search_tools` searches them). A report takes up to a minute for a thousand tools, so it is made on request.

import { field, h, replace, table } from "../dom.js";

const MODES = { every_tool: "every tool listed", search: "tool search", code_mode: "code mode" };

function rate(value) {
  return typeof value === "number" ? value.toFixed(3) : "–";
}

function cost(measure) {
  if (!measure) return "–";
  return measure.tokens === null || measure.tokens === undefined
    ? `${measure.bytes} bytes` : `${measure.bytes} bytes, ${measure.tokens} tokens`;
}

function report(data) {
  const overall = data.overall;
  return [
    h("div", { class: "figures" },
      h("div", { class: "figure" }, h("p", { class: "figure-label" }, "Found first (recall@1)"),
        h("p", { class: "figure-value" }, rate(overall["recall@1"]))),
      h("div", { class: "figure" }, h("p", { class: "figure-label" }, "Among the first five (recall@5)"),
        h("p", { class: "figure-value" }, rate(overall["recall@5"]))),
      h("div", { class: "figure" }, h("p", { class: "figure-label" }, "MRR@10"), h("p", { class: "figure-value" }, rate(overall.mrr))),
      h("div", { class: "figure" }, h("p", { class: "figure-label" }, "Tools, queries"),
        h("p", { class: "figure-value" }, `${data.tools}, ${overall.queries}`))),
    h("p", { class: "hint" }, `Ranked by ${data.ranking}; made in ${data.seconds} s.`),
    table("By kind of query", ["Kind", "Queries", "recall@1", "recall@5", "MRR"],
      Object.entries(data.by_kind).map(([kind, f]) => [kind, String(f.queries), rate(f["recall@1"]), rate(f["recall@5"]), rate(f.mrr)])),
    h("h2", {}, "What each listing mode costs the model's context"),
    table("Context cost by listing mode", ["Mode", "Listing", "A search's answer", "Describing one tool"],
      Object.entries(data.context).map(([mode, c]) => [MODES[mode] || mode, cost(c.listing), cost(c.search_tools),
        cost(c.describe_one_tool)])),
    h("h2", {}, "Tools search finds least"),
    data.hardest.length === 0 ? h("p", { class: "empty" }, "Every tool's queries find it first.")
      : table("Tools search finds least, lowest MRR first", ["Tool", "recall@1", "MRR", "Queries that missed it"],
        data.hardest.map((t) => [h("code", {}, t.tool), rate(t["recall@1"]), rate(t.mrr),
          h("ul", {}, t.misses.map((m) => h("li", {}, `${m.kind}: “${m.query}” → rank ${m.rank ?? "none"}`,
            m.first ? `, found ${m.first} first` : "")))])),
    h("h2", {}, "Tools search confuses"),
    data.confused.length === 0 ? h("p", { class: "empty" }, "No confusion.")
      : table("Tools search confuses", ["Tool", "Found instead", "Times", "Example query"],
        data.confused.map((c) => [h("code", {}, c.tool), h("code", {}, c.found_instead), String(c.times), c.example])),
  ];
}

export async function render(screen, ctx, params) {
  const expositions = await ctx.api.all("/expositions");
  const chosenId = params.get("exposition") || (expositions[0] && expositions[0].id) || "";
  const chosen = h("select", { name: "exposition" },
    expositions.map((e) => h("option", { value: e.id, selected: e.id === chosenId }, e.name || e.id)));
  const result = h("div", { class: "result", "aria-live": "polite" });
  const measure = h("button", { type: "submit", disabled: expositions.length === 0 }, "Measure how search finds its tools");
  const form = h("form", { class: "inline", "aria-label": "Discovery report", "data-reads": "true" },
    field("Exposition", chosen).row, measure);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    measure.disabled = true;
    replace(result, h("p", {}, "Measuring… (up to a minute for a thousand tools)"));
    try {
      replace(result, report(await ctx.api.get(`/expositions/${encodeURIComponent(chosen.value)}/discovery`)));
      ctx.say("Measured how search finds the exposition's tools.");
    } catch (error) {
      replace(result);
      ctx.fail(error);
    } finally {
      measure.disabled = false;
    }
  });
  replace(screen,
    h("h1", {}, "Discovery"),
    h("p", {}, "How well an agent finds each tool of an exposition with search_tools: queries made from each tool's "
      + "own texts and shape are searched as the gateway searches them. Tools found least, and pairs of tools "
      + "search confuses, are the ones whose titles and descriptions deserve a better word. It also says what each "
      + "listing mode costs a model's context."),
    expositions.length === 0 ? h("p", { class: "empty" }, "No exposition yet.") : form,
    result);
  if (params.get("measure") === "1" && expositions.length) form.requestSubmit();
  return undefined;
}
