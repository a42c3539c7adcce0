// Plans: what to expose of a service and how (selection, backend, secrets, inbound security, cache hints, and
// the other options the REST API takes). Editing sends only what changed; the API checks everything.

import { ApiError } from "../api.js";
import { field, h, lines, replace, table, uid } from "../dom.js";
import { listing } from "../pager.js";
import {
  cacheText, clearFieldErrors, fieldError, headerPolicyEditor, oauthEditor, parseCache, policiesEditor, rateLimitEditor,
  tasksEditor,
} from "./plan_fields.js";
import { selectionPreview } from "./plan_preview.js";

const INBOUND = [["none", "none (anyone who reaches the gateway)"], ["api_key", "API key"], ["oauth", "OAuth"]];
const CODE_MODE = [["off", "off"], ["on", "on: programs call the tools"], ["read_only", "read-only: programs call only tools that change nothing"]];
const BACKEND_SECRET_KINDS = new Set(["bearer", "basic", "api_key", "oauth_client_credentials", "user_token",
  "user_oauth", "oauth_token_exchange"]);

export async function render(screen, ctx, params) {
  if (params.get("plan")) return renderEdit(screen, ctx, params.get("plan"));
  if (params.has("new")) return renderCreate(screen, ctx, params.get("new"));
  // what the table names beside each plan: read before the first page is drawn with them
  const [services, expositions] = await Promise.all([ctx.api.all("/services"), ctx.api.all("/expositions")]);
  const names = new Map(services.map((s) => [s.id, `${s.name} ${s.version}`]));
  const exposed = new Set(expositions.map((e) => e.plan_id));
  const list = listing(ctx, params, {
    screen: "plans",
    noun: "plans",
    hint: "name, description, tool prefix, backend URL, or its service's name and version",
    load: (query) => ctx.api.page(`/plans?${query}`),
    empty: "No plan yet.",
    show: (plans) => plansTable(plans, names, exposed),
  });
  replace(screen,
    h("h1", {}, "Plans"),
    h("p", {}, "A plan says which operations of a service become tools, which backend they call, with which "
      + "secrets, and who may call them. ", h("a", { href: "#/plans?new=" }, "Create a plan")),
    list.node);
  await list.ready;
  return undefined;
}

function plansTable(plans, serviceName, exposed) {
  return table("Plans", ["Name", "Service", "Backend", "Inbound", "Exposed", ""], plans.map((p) => [
    p.name, serviceName.get(p.service_id) || p.service_id, p.backend_endpoint || "(the description's)",
    p.inbound_mode, exposed.has(p.id) ? "yes" : "no",
    h("a", { href: `#/plans?plan=${encodeURIComponent(p.id)}` }, `Edit ${p.name}`),
  ]));
}

/** The API's refusal shown next to the editors it is about (each problem of a validation error), as well as in
 * the alert region. */
function placeErrors(form, error) {
  clearFieldErrors(form);
  if (!(error instanceof ApiError) || error.status !== 422) return;
  const problems = error.problems.length ? error.problems : [{ field: error.field, message: error.detail }];
  for (const problem of problems) fieldError(form, problem.field, problem.message);
}

function checkboxes(legend, options, chosen, hint) {
  const boxes = options.map(([value, label]) => {
    const id = uid("c");
    const input = h("input", { type: "checkbox", id, value, checked: chosen.includes(value) });
    return { input, row: h("div", { class: "check" }, input, h("label", { for: id }, label)) };
  });
  const node = h("fieldset", {}, h("legend", {}, legend),
    boxes.length ? boxes.map((b) => b.row) : h("p", { class: "hint" }, "none available"),
    hint ? h("p", { class: "hint" }, hint) : null);
  return { node, read: () => boxes.filter((b) => b.input.checked).map((b) => b.input.value) };
}

function choice(options, chosen) {
  return h("select", {}, options.map(([value, label]) => h("option", { value, selected: value === (chosen ?? "") }, label)));
}

/** The plan's form: `{node, read}`, `read()` giving the REST fields (throws Error naming a bad one); `preview`
 * makes the node showing the tools the selection serves, from the include, exclude and prefix inputs. */
function planForm(plan, secrets, artifacts, preview) {
  const text = (name, value, type = "text") => h("input", { type, name, value: value ?? "", autocomplete: "off" });
  const area = (name, value, rows = 3) => h("textarea", { name, rows: String(rows), spellcheck: "false", value: value ?? "" });
  const check = (name, value) => h("input", { type: "checkbox", name, checked: Boolean(value) });
  const description = text("description", plan.description);
  const backend = text("backend_endpoint", plan.backend_endpoint, "text");
  const timeout = h("input", { type: "number", name: "backend_timeout_ms", min: "1", step: "1",
    value: plan.backend_timeout_ms ?? "" });
  const include = area("include", (plan.include || []).join("\n"));
  const exclude = area("exclude", (plan.exclude || []).join("\n"));
  const backendSecrets = checkboxes("Backend secrets",
    secrets.filter((s) => BACKEND_SECRET_KINDS.has(s.kind)).map((s) => [s.id, `${s.name} (${s.kind})`]),
    plan.secret_ids || [], "every call carries all of them");
  const tls = choice([["", "(none)"], ...secrets.filter((s) => s.kind === "tls").map((s) => [s.id, s.name])],
    plan.tls_secret_id);
  const inbound = choice(INBOUND, plan.inbound_mode || "none");
  const oauth = oauthEditor(plan.oauth);
  const introspection = choice([["", "(none)"],
    ...secrets.filter((s) => s.kind === "oauth_introspection").map((s) => [s.id, s.name])], plan.introspection_secret_id);
  const cache = area("cache", cacheText(plan.cache));
  const prefix = text("tool_prefix", plan.tool_prefix);
  const outputSchemas = check("output_schemas", plan.output_schemas ?? true);
  const toolSearch = check("tool_search", plan.tool_search);
  const codeMode = choice(CODE_MODE, plan.code_mode || "off");
  const readOnlyNamed = check("read_only_named", Array.isArray(plan.read_only_tools));
  const readOnly = area("read_only_tools", (plan.read_only_tools || []).join("\n"));
  const readOnlyRow = field("Read-only tools", readOnly,
    "one pattern a line, as Include's: these tools are read-only, every other one is not; empty: none").row;
  const syncReadOnly = () => { readOnlyRow.hidden = !readOnlyNamed.checked; };
  readOnlyNamed.addEventListener("change", syncReadOnly);
  syncReadOnly();
  const tasks = tasksEditor(plan.tasks);
  const rateLimit = rateLimitEditor(plan.rate_limit);
  const audit = check("audit", plan.audit);
  const headerPolicy = headerPolicyEditor(plan.header_policy);
  const policies = policiesEditor(plan.policies);
  const chosenArtifacts = checkboxes("Artifacts served",
    artifacts.filter((a) => a.role !== "main").map((a) => [a.name, `${a.name} (${a.kind || "unchecked"})`]),
    plan.artifacts || [], "none checked: all of the service's artifacts");
  const oauthRows = h("fieldset", {}, h("legend", {}, "OAuth"),
    oauth.node,
    field("Introspection secret", introspection, "opaque tokens checked by RFC 7662 introspection").row);
  const sync = () => { oauthRows.hidden = inbound.value !== "oauth"; };
  inbound.addEventListener("change", sync);
  sync();
  const node = h("div", {},
    h("fieldset", {}, h("legend", {}, "Tools"),
      field("Include", include, "one pattern a line: a tool name, operationId, GET /path, tag:x, * wildcards; empty: all").row,
      field("Exclude", exclude, "one pattern a line").row,
      field("Tool name prefix", prefix).row,
      preview({ include, exclude, prefix }).node,
      chosenArtifacts.node,
      h("div", { class: "check" }, outputSchemas, h("label", { for: (outputSchemas.id = uid("c")) }, "Output schemas")),
      h("div", { class: "check" }, toolSearch,
        h("label", { for: (toolSearch.id = uid("c")) }, "Tool search (three tools instead of the whole list, for huge APIs)")),
      field("Code mode", codeMode, "search_tools, describe_tools and execute_code: one JavaScript program makes many calls, each governed as a direct one").row,
      h("div", { class: "check" }, readOnlyNamed, h("label", { for: (readOnlyNamed.id = uid("c")) },
        "Name the read-only tools (instead of what the description or the MCP server claims)")),
      readOnlyRow),
    h("fieldset", {}, h("legend", {}, "Backend"),
      field("Backend URL", backend, "http(s) URL; gRPC host:port, grpc:// or grpcs://; empty: the description's server").row,
      field("Timeout (ms)", timeout).row,
      backendSecrets.node,
      field("TLS secret", tls, "a CA or client certificate for the backend connection").row),
    h("fieldset", {}, h("legend", {}, "Inbound security"),
      field("Who may call", inbound, "an API key is shown once, when it is made").row,
      oauthRows,
      h("div", { class: "check" }, audit, h("label", { for: (audit.id = uid("c")) }, "Audit every request"))),
    h("fieldset", {}, h("legend", {}, "Rate limits"), rateLimit.node),
    h("fieldset", {}, h("legend", {}, "Headers backends receive"), headerPolicy.node),
    h("fieldset", {}, h("legend", {}, "Policies and approvals"), policies.node),
    h("fieldset", {}, h("legend", {}, "Caching and tasks"),
      field("Cache hints", cache, "one a line: method=ttl_ms[:public|private], e.g. tools/list=60000:public").row,
      tasks.node),
    field("Description", description).row);
  const read = () => {
    const timeoutMs = timeout.value.trim() === "" ? null : Number(timeout.value);
    if (timeoutMs !== null && !Number.isInteger(timeoutMs)) throw new Error("the timeout must be a whole number of milliseconds");
    const values = {
      description: description.value.trim() || null,
      backend_endpoint: backend.value.trim() || null,
      backend_timeout_ms: timeoutMs,
      include: lines(include.value),
      exclude: lines(exclude.value),
      secret_ids: backendSecrets.read(),
      tls_secret_id: tls.value || null,
      inbound_mode: inbound.value,
      cache: parseCache(cache.value),
      tool_prefix: prefix.value.trim(),
      output_schemas: outputSchemas.checked,
      tool_search: toolSearch.checked,
      code_mode: codeMode.value,
      read_only_tools: readOnlyNamed.checked ? lines(readOnly.value) : null,
      tasks: tasks.read(),
      rate_limit: rateLimit.read(),
      audit: audit.checked,
      header_policy: headerPolicy.read(),
      policies: policies.read(),
      artifacts: chosenArtifacts.read(),
    };
    if (values.inbound_mode === "oauth") {
      values.oauth = oauth.read();
      values.introspection_secret_id = introspection.value || null;
    }
    return values;
  };
  return { node, read };
}

function shownOnce(key) {
  return h("div", { class: "once", role: "note" },
    h("h2", {}, "The plan's API key"),
    h("p", {}, "Shown this once: give it to the plan's clients (Authorization: Bearer … or X-API-Key)."),
    h("output", { class: "secret-once" }, key));
}

async function renderCreate(screen, ctx, serviceId) {
  const [services, secrets, templates] = await Promise.all([ctx.api.all("/services"), ctx.api.all("/secrets"),
    ctx.api.all("/templates")]);
  const service = choice([["", "(choose a service)"], ...services.map((s) => [s.id, `${s.name} ${s.version}`])], serviceId);
  const template = choice([["", "(none: the defaults)"], ...templates.map((t) => [t.id, t.name])], "");
  let baseline = null; // the form as the template filled it: what is left as it was comes from the template
  const name = h("input", { type: "text", name: "name", autocomplete: "off", required: true, value: "default" });
  const holder = h("div", {});
  let form = null;
  let loads = 0; // a later choice wins: a slower answer to an earlier one must not replace the form being edited
  const load = async () => {
    const turn = ++loads;
    const artifacts = service.value ? await ctx.api.get(`/services/${encodeURIComponent(service.value)}/artifacts`) : [];
    if (turn !== loads) return;
    const preset = templates.find((t) => t.id === template.value);
    form = planForm({ inbound_mode: "none", output_schemas: true, ...(preset ? preset.settings : {}) }, secrets, artifacts,
      (inputs) => selectionPreview(ctx, () => service.value, inputs));
    baseline = preset ? form.read() : null;
    replace(holder, form.node);
  };
  service.addEventListener("change", () => load().catch(ctx.fail));
  template.addEventListener("change", () => load().catch(ctx.fail));
  await load();
  const submit = h("form", { "aria-labelledby": "plan-title" },
    h("h1", { id: "plan-title" }, "New plan"),
    h("p", {}, h("a", { href: "#/plans" }, "All plans")),
    field("Service", service).row,
    field("Plan name", name, "unique for the service").row,
    field("Template", template, "settings the form starts from (see Templates); the plan keeps its own copy").row,
    holder,
    h("button", { type: "submit" }, "Create the plan"));
  submit.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      if (!service.value) throw new Error("choose the service the plan exposes");
      const values = form.read();
      const body = { name: name.value.trim(), service_id: service.value };
      if (baseline) body.template = template.value;
      for (const [key, value] of Object.entries(values)) {
        const empty = value === null || value === "" || (Array.isArray(value) && value.length === 0)
          || (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);
        if (baseline ? JSON.stringify(value) !== JSON.stringify(baseline[key]) : !empty) body[key] = value;
      }
      const plan = await ctx.api.post("/plans", body);
      // the address names the plan now: a reload shows it, not the empty form that would create it again
      window.history.replaceState(null, "", `#/plans?plan=${encodeURIComponent(plan.id)}`);
      await renderEdit(screen, ctx, plan.id, plan.api_key);
      ctx.say(`Created plan ${plan.name}.`);
    } catch (error) {
      placeErrors(submit, error);
      ctx.fail(error);
    }
  });
  replace(screen, submit);
}

async function renderEdit(screen, ctx, planId, newKey) {
  const plan = await ctx.api.get(`/plans/${encodeURIComponent(planId)}`);
  const [service, secrets, artifacts, groups] = await Promise.all([
    ctx.api.get(`/services/${encodeURIComponent(plan.service_id)}`), ctx.api.all("/secrets"),
    ctx.api.get(`/services/${encodeURIComponent(plan.service_id)}/artifacts`), ctx.api.all("/gateway-groups"),
  ]);
  const form = planForm(plan, secrets, artifacts, (inputs) => selectionPreview(ctx, () => plan.service_id, inputs));
  const baseline = form.read();
  const edit = h("form", { "aria-labelledby": "plan-title" },
    h("h1", { id: "plan-title" }, `Plan ${plan.name}`),
    h("p", {}, h("a", { href: "#/plans" }, "All plans"), " · service ",
      h("a", { href: `#/services?service=${encodeURIComponent(service.id)}` }, `${service.name} ${service.version}`),
      " · ", h("a", { href: `#/history?kind=plan&object=${encodeURIComponent(plan.id)}` }, "Its history")),
    newKey ? shownOnce(newKey) : null,
    form.node,
    h("button", { type: "submit" }, "Save the plan"));
  edit.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const values = form.read();
      const changed = {};
      for (const [key, value] of Object.entries(values)) {
        if (JSON.stringify(value) !== JSON.stringify(baseline[key])) changed[key] = value;
      }
      if (Object.keys(changed).length === 0) {
        ctx.say("Nothing changed.");
        return;
      }
      const saved = await ctx.api.patch(`/plans/${encodeURIComponent(planId)}`, changed);
      await renderEdit(screen, ctx, planId, saved.api_key);
      ctx.say(`Saved plan ${plan.name}: ${Object.keys(changed).join(", ")}.`);
    } catch (error) {
      placeErrors(edit, error);
      ctx.fail(error);
    }
  });

  const expoName = h("input", { type: "text", name: "exposition_name", autocomplete: "off", value: plan.name });
  const group = choice(groups.map((g) => [g.id, g.name]), (groups.find((g) => g.name === "default") || {}).id);
  const expose = h("form", { "aria-labelledby": "expose-title" },
    h("h2", { id: "expose-title" }, "Expose this plan"),
    field("Exposition name", expoName, "unique in the organization; its endpoint is /mcp/<organization>/<name>").row,
    field("Gateway group", group).row,
    h("button", { type: "submit" }, "Expose"));
  expose.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { plan_id: planId, group_id: group.value || null, name: expoName.value.trim() || null };
      const exposition = await ctx.api.post("/expositions", body);
      ctx.go("expositions", { exposition: exposition.id }, `Exposed plan ${plan.name} at ${exposition.endpoints[0]}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });

  const actions = h("div", { class: "actions" });
  const renew = h("button", { type: "button" }, "Make a new API key");
  renew.addEventListener("click", async () => {
    try {
      const saved = await ctx.api.post(`/plans/${encodeURIComponent(planId)}/api-key`);
      await renderEdit(screen, ctx, planId, saved.api_key);
      ctx.say("A new API key replaces the old one.");
    } catch (error) {
      ctx.fail(error);
    }
  });
  const remove = h("button", { type: "button", class: "danger" }, `Delete plan ${plan.name}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete plan ${plan.name} and its expositions?`)) return;
    try {
      await ctx.api.delete(`/plans/${encodeURIComponent(planId)}`);
      ctx.go("plans", {}, `Deleted plan ${plan.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  replace(actions, plan.inbound_mode === "api_key" ? renew : null, remove);
  replace(screen, edit, expose, duplicateForm(screen, ctx, plan), h("h2", {}, "More"), actions);
}

/** A copy of the plan under a new name (same service and settings; a new API key when it wants one). */
function duplicateForm(screen, ctx, plan) {
  const name = h("input", { type: "text", name: "copy_name", autocomplete: "off", required: true,
    value: `${plan.name}-copy` });
  const form = h("form", { "aria-labelledby": "duplicate-title" },
    h("h2", { id: "duplicate-title" }, "Duplicate this plan"),
    field("Name of the copy", name, "unique for the service; the copy is not exposed").row,
    h("button", { type: "submit" }, `Duplicate plan ${plan.name}`));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const copy = await ctx.api.post(`/plans/${encodeURIComponent(plan.id)}/duplicate`, { name: name.value.trim() });
      if (copy.api_key) {
        // its key is shown once, here: the address changes without a new rendering that would forget it
        window.history.replaceState(null, "", `#/plans?plan=${encodeURIComponent(copy.id)}`);
        await renderEdit(screen, ctx, copy.id, copy.api_key);
        const heading = screen.querySelector("h1");
        heading.setAttribute("tabindex", "-1");
        heading.focus();
        ctx.say(`Duplicated plan ${plan.name} as ${copy.name}.`);
      } else {
        ctx.go("plans", { plan: copy.id }, `Duplicated plan ${plan.name} as ${copy.name}.`);
      }
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}
