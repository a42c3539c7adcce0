// Templates: an organization's presets of plan settings (who may call, rate limits, headers, policies, audit,
// tasks...), which the New plan form starts from. A plan keeps its copy: changing a template changes no plan.

import { ApiError } from "../api.js";
import { field, h, replace, table, uid } from "../dom.js";
import {
  cacheText, clearFieldErrors, fieldError, headerPolicyEditor, oauthEditor, parseCache, policiesEditor, rateLimitEditor,
  tasksEditor,
} from "./plan_fields.js";

const INBOUND = [["none", "none (anyone who reaches the gateway)"], ["api_key", "API key"], ["oauth", "OAuth"]];
const CODE_MODE = [["off", "off"], ["on", "on: programs call the tools"], ["read_only", "read-only: programs call only tools that change nothing"]];

function choice(name, options, chosen) {
  return h("select", { name }, options.map(([value, label]) => h("option", { value, selected: value === (chosen ?? "") }, label)));
}

function checkbox(name, label, value) {
  const input = h("input", { type: "checkbox", name, id: uid("c"), checked: Boolean(value) });
  return { input, row: h("div", { class: "check" }, input, h("label", { for: input.id }, label)) };
}

function jsonArea(name, value) {
  return h("textarea", { name, rows: "3", spellcheck: "false", value: value ? JSON.stringify(value, null, 2) : "" });
}

function readJson(area, label) {
  const text = area.value.trim();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${label} is not JSON: ${error.message}`);
  }
}

/** The settings editors: `{node, read}`, `read()` giving the settings set (defaults left out). */
export function settingsForm(settings, secrets) {
  const inbound = choice("inbound_mode", INBOUND, settings.inbound_mode || "none");
  const oauth = oauthEditor(settings.oauth);
  const introspection = choice("introspection_secret_id", [["", "(none)"],
    ...secrets.filter((s) => s.kind === "oauth_introspection").map((s) => [s.id, s.name])], settings.introspection_secret_id);
  const oauthRows = h("fieldset", {}, h("legend", {}, "OAuth"), oauth.node,
    field("Introspection secret", introspection, "opaque tokens checked by RFC 7662 introspection (an admin's choice)").row);
  const sync = () => { oauthRows.hidden = inbound.value !== "oauth"; };
  inbound.addEventListener("change", sync);
  sync();
  const audit = checkbox("audit", "Audit every request", settings.audit);
  const toolSearch = checkbox("tool_search", "Tool search (three tools instead of the whole list, for huge APIs)", settings.tool_search);
  const outputSchemas = checkbox("output_schemas", "Output schemas", settings.output_schemas ?? true);
  const codeMode = choice("code_mode", CODE_MODE, settings.code_mode || "off");
  const timeout = h("input", { type: "number", name: "backend_timeout_ms", min: "1", step: "1", value: settings.backend_timeout_ms ?? "" });
  const cache = h("textarea", { name: "cache", rows: "2", spellcheck: "false", value: cacheText(settings.cache) });
  const rateLimit = rateLimitEditor(settings.rate_limit);
  const headerPolicy = headerPolicyEditor(settings.header_policy);
  const policies = policiesEditor(settings.policies);
  const tasks = tasksEditor(settings.tasks);
  const guardrails = jsonArea("guardrails", settings.guardrails);
  const resilience = jsonArea("resilience", settings.resilience);
  const node = h("div", {},
    h("fieldset", {}, h("legend", {}, "Inbound security"),
      field("Who may call", inbound, "an API key is made for each plan, and shown once").row, oauthRows, audit.row),
    h("fieldset", {}, h("legend", {}, "Rate limits"), rateLimit.node),
    h("fieldset", {}, h("legend", {}, "Headers backends receive"), headerPolicy.node),
    h("fieldset", {}, h("legend", {}, "Policies and approvals"), policies.node),
    h("fieldset", {}, h("legend", {}, "Tools, backend and caching"),
      toolSearch.row, outputSchemas.row, field("Code mode", codeMode).row,
      field("Backend timeout (ms)", timeout, "empty: 30000").row,
      field("Cache hints", cache, "one a line: method=ttl_ms[:public|private], e.g. tools/list=60000:public").row,
      tasks.node,
      field("Guardrails (JSON)", guardrails, '[{"use": "secrets", "action": "redact"}]; empty: none').row,
      field("Resilience (JSON)", resilience, '{"retries": true, "breaker": true}; empty: none').row));
  const read = () => {
    const timeoutMs = timeout.value.trim() === "" ? null : Number(timeout.value);
    if (timeoutMs !== null && !Number.isInteger(timeoutMs)) throw new Error("the timeout must be a whole number of milliseconds");
    const values = {
      inbound_mode: inbound.value,
      rate_limit: rateLimit.read(),
      header_policy: headerPolicy.read(),
      policies: policies.read(),
      tasks: tasks.read(),
      backend_timeout_ms: timeoutMs,
      cache: parseCache(cache.value),
      guardrails: readJson(guardrails, "Guardrails"),
      resilience: readJson(resilience, "Resilience"),
      code_mode: codeMode.value === "off" ? null : codeMode.value,
      audit: audit.input.checked || null,
      tool_search: toolSearch.input.checked || null,
      output_schemas: outputSchemas.input.checked ? null : false,
    };
    if (values.inbound_mode === "oauth") {
      values.oauth = oauth.read();
      values.introspection_secret_id = introspection.value || null;
    }
    const kept = {};
    for (const [key, value] of Object.entries(values)) {
      const empty = value === null || (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0);
      if (!empty) kept[key] = value;
    }
    return kept;
  };
  return { node, read };
}

/** The API's refusal next to the editor it is about (`settings.rate_limit...` is about the rate limits). */
function placeErrors(form, error) {
  clearFieldErrors(form);
  if (!(error instanceof ApiError) || error.status !== 422) return;
  const problems = error.problems.length ? error.problems : [{ field: error.field, message: error.detail }];
  for (const problem of problems) fieldError(form, String(problem.field || "").replace(/^settings\./, ""), problem.message);
}

function summary(settings) {
  const keys = Object.keys(settings || {});
  return keys.length ? keys.join(", ") : "(none: the defaults)";
}

export async function render(screen, ctx, params) {
  if (params.get("template")) return renderEdit(screen, ctx, params.get("template"));
  const [templates, secrets] = await Promise.all([ctx.api.all("/templates"), ctx.api.all("/secrets")]);
  const name = h("input", { type: "text", name: "name", autocomplete: "off", required: true });
  const description = h("input", { type: "text", name: "description", autocomplete: "off" });
  const settings = settingsForm({}, secrets);
  const create = h("form", { "aria-labelledby": "template-new-title" },
    h("h2", { id: "template-new-title" }, "New template"),
    field("Template name", name, "unique in the organization: letters, digits, '_', '.' or '-'").row,
    field("Description", description).row,
    settings.node,
    h("button", { type: "submit" }, "Create the template"));
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const made = await ctx.api.post("/templates", { name: name.value.trim(),
        description: description.value.trim() || null, settings: settings.read() });
      ctx.go("templates", {}, `Created template ${made.name}.`);
    } catch (error) {
      placeErrors(create, error);
      ctx.fail(error);
    }
  });
  replace(screen,
    h("h1", {}, "Templates"),
    h("p", {}, "A template presets a new plan's settings: who may call it, rate limits, the headers backends "
      + "receive, policies, audit, tasks and more. Choose one on the ", h("a", { href: "#/plans?new=" }, "New plan"),
      " form; the plan keeps its own copy, and changing a template changes no plan."),
    templates.length === 0
      ? h("p", { class: "empty" }, "No template yet.")
      : table("Templates", ["Name", "Settings", "Description", ""], templates.map((t) => [
        t.name, summary(t.settings), t.description || "", actions(ctx, t)])),
    create);
  return undefined;
}

function actions(ctx, template) {
  const remove = h("button", { type: "button", class: "danger" }, `Delete the template ${template.name}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete the template ${template.name}? Plans made from it keep their settings.`)) return;
    try {
      await ctx.api.delete(`/templates/${encodeURIComponent(template.id)}`);
      ctx.go("templates", {}, `Deleted the template ${template.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return h("div", { class: "actions" },
    h("a", { href: `#/templates?template=${encodeURIComponent(template.id)}` }, `Edit ${template.name}`), remove);
}

async function renderEdit(screen, ctx, templateId) {
  const [template, secrets] = await Promise.all([
    ctx.api.get(`/templates/${encodeURIComponent(templateId)}`), ctx.api.all("/secrets")]);
  const name = h("input", { type: "text", name: "name", autocomplete: "off", required: true, value: template.name });
  const description = h("input", { type: "text", name: "description", autocomplete: "off", value: template.description || "" });
  const settings = settingsForm(template.settings, secrets);
  const edit = h("form", { "aria-labelledby": "template-title" },
    h("h1", { id: "template-title" }, `Template ${template.name}`),
    h("p", {}, h("a", { href: "#/templates" }, "All templates"),
      " · saving changes what new plans start with; plans made from it stay as they are."),
    field("Template name", name).row,
    field("Description", description).row,
    settings.node,
    h("button", { type: "submit" }, "Save the template"));
  edit.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const saved = await ctx.api.patch(`/templates/${encodeURIComponent(template.id)}`, { name: name.value.trim(),
        description: description.value.trim() || null, settings: settings.read() });
      ctx.go("templates", {}, `Saved the template ${saved.name}.`);
    } catch (error) {
      placeErrors(edit, error);
      ctx.fail(error);
    }
  });
  replace(screen, edit);
}
