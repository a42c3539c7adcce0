// Structured editors for a plan's settings that the REST API takes as JSON: rate limits, header policy, OAuth,
// tasks and policy rules. Each is `{node, read}`: `read()` gives the field's REST value (null for none) and
// throws an Error naming the control at fault; `fieldError(name)` below puts the API's refusal next to the
// editor it is about. Settings a form does not show (OAuth introspection, say) are kept as they were.

import { field, h, lines, uid } from "../dom.js";

const PERIODS = [["1", "second"], ["60", "minute"], ["3600", "hour"], ["86400", "day"]];
const EFFECTS = [["deny", "deny (with a message)"], ["allow", "allow"], ["approve", "ask a person to approve"],
  ["redact", "redact fields of the answer"]];
const APPROVERS = [["caller", "the caller (asked in their client)"],
  ["admin", "an administrator (console or CLI), for agents acting alone"]];

function number(name, value, attrs = {}) {
  return h("input", { type: "number", name, step: "1", min: "0", value: value ?? "", ...attrs });
}

function text(name, value) {
  return h("input", { type: "text", name, autocomplete: "off", spellcheck: "false", value: value ?? "" });
}

function area(name, value, rows = 2) {
  return h("textarea", { name, rows: String(rows), spellcheck: "false", value: value ?? "" });
}

function check(label, value) {
  const input = h("input", { type: "checkbox", id: uid("c"), checked: Boolean(value) });
  return { input, row: h("div", { class: "check" }, input, h("label", { for: input.id }, label)) };
}

function wholeNumber(input, label, { min = 0, max = Infinity } = {}) {
  if (input.value.trim() === "") return null;
  const value = Number(input.value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${label} must be a whole number from ${min}${max === Infinity ? "" : ` to ${max}`}`);
  }
  return value;
}

/** Cache hints as the form shows them: `method=ttl_ms:scope`, one a line. */
export function cacheText(cache) {
  return Object.entries(cache || {}).map(([method, hint]) => `${method}=${hint.ttl_ms}:${hint.scope}`).join("\n");
}

/** Cache hints from the form's lines; Error naming a line that does not read method=ttl_ms[:public|private]. */
export function parseCache(text) {
  const cache = {};
  for (const line of lines(text)) {
    const match = /^([^=\s]+)\s*=\s*(\d+)(?::(public|private))?$/.exec(line);
    if (!match) throw new Error(`cache hint "${line}" must read method=ttl_ms[:public|private], e.g. tools/list=60000:public`);
    cache[match[1]] = { ttl_ms: Number(match[2]), scope: match[3] || "private" };
  }
  return cache;
}

/** Rate limits: for the whole exposition and for each caller, so many requests per period, with a burst. */
export function rateLimitEditor(value) {
  const scopes = [["exposition", "The whole exposition (every caller together)"], ["caller", "Each caller"]];
  const parts = scopes.map(([scope, legend]) => {
    const limit = value && typeof value[scope] === "object" ? value[scope] : null;
    const requests = number(`${scope}_requests`, limit ? limit.requests : "", { min: "1" });
    const periods = PERIODS.some(([seconds]) => Number(seconds) === (limit && limit.per_seconds))
      ? PERIODS : limit ? [...PERIODS, [String(limit.per_seconds), `${limit.per_seconds} s`]] : PERIODS;
    const per = h("select", { name: `${scope}_per` }, periods.map(([seconds, label]) =>
      h("option", { value: seconds, selected: limit ? Number(seconds) === limit.per_seconds : seconds === "1" }, label)));
    const burst = number(`${scope}_burst`, limit && limit.burst !== limit.requests ? limit.burst : "", { min: "1" });
    const node = h("fieldset", {}, h("legend", {}, legend),
      h("div", { class: "inline" }, field("Requests", requests, "empty: no limit").row, field("Per", per).row,
        field("Burst", burst, "at once after a quiet spell; empty: as many as the requests").row));
    const read = () => {
      const count = wholeNumber(requests, `${legend}: requests`, { min: 1, max: 1000000 });
      if (count === null) return null;
      const most = wholeNumber(burst, `${legend}: burst`, { min: 1, max: 1000000 });
      return { requests: count, per_seconds: Number(per.value), burst: most ?? count };
    };
    return { scope, node, read };
  });
  return {
    node: h("div", { "data-field": "rate_limit" }, parts.map((p) => p.node)),
    read: () => {
      const limits = {};
      for (const part of parts) {
        const limit = part.read();
        if (limit) limits[part.scope] = limit;
      }
      return Object.keys(limits).length ? limits : null;
    },
  };
}

function names(textarea) {
  return lines(textarea.value.replaceAll(",", "\n"));
}

/** The header policy: which client headers backends receive. */
export function headerPolicyEditor(value) {
  const policy = value || {};
  const allow = area("header_allow", (policy.allow || []).join("\n"));
  const deny = area("header_deny", (policy.deny || []).join("\n"));
  const rename = area("header_rename", Object.entries(policy.rename || {}).map(([from, to]) => `${from}=${to}`).join("\n"));
  const passthrough = check("Pass the client's Authorization on (passthrough)", policy.passthrough);
  const forwarded = check("Tell backends who called (Forwarded headers)", policy.forwarded ?? true);
  return {
    node: h("div", { "data-field": "header_policy" },
      field("Headers passed on", allow, "one a line (or commas); empty: every header not denied").row,
      field("Headers never passed on", deny, "one a line, beside the gateway's own list").row,
      field("Headers renamed", rename, "one a line: client-name=backend-name").row,
      passthrough.row, forwarded.row),
    read: () => {
      const out = {};
      if (names(allow).length) out.allow = names(allow);
      if (names(deny).length) out.deny = names(deny);
      const renames = {};
      for (const line of lines(rename.value)) {
        const [from, to, ...rest] = line.split("=").map((part) => part.trim());
        if (!from || !to || rest.length) throw new Error(`Headers renamed: "${line}" must read client-name=backend-name`);
        renames[from] = to;
      }
      if (Object.keys(renames).length) out.rename = renames;
      if (passthrough.input.checked) out.passthrough = true;
      if (!forwarded.input.checked) out.forwarded = false;
      return Object.keys(out).length ? out : null;
    },
  };
}

/** OAuth resource-server settings: the authorization servers trusted, audiences, scopes, per-tool scopes. */
export function oauthEditor(value) {
  const settings = value || {};
  const issuers = area("oauth_issuers", (settings.issuers || []).join("\n"));
  const audiences = area("oauth_audiences", (settings.audiences || []).join("\n"));
  const scopes = text("oauth_scopes", (settings.scopes || []).join(" "));
  const toolScopes = area("oauth_tool_scopes",
    Object.entries(settings.tool_scopes || {}).map(([tool, wanted]) => `${tool}: ${wanted.join(" ")}`).join("\n"), 3);
  const jwks = h("input", { type: "url", name: "oauth_jwks_uri", autocomplete: "off", value: settings.jwks_uri || "" });
  const audienceCheck = check("Check the token's audience", settings.audience_check ?? true);
  const leeway = number("oauth_leeway", settings.leeway_seconds ?? "", { max: "300" });
  return {
    node: h("div", { "data-field": "oauth" },
      field("Authorization servers (issuers)", issuers, "one URL a line; at least one").row,
      field("Audiences", audiences, "one a line; empty: the exposition's own URL").row,
      field("Scopes every call needs", scopes, "separated by spaces").row,
      field("Scopes per tool", toolScopes, "one tool a line: tool_name: scope other_scope").row,
      field("Key set URL (JWKS)", jwks, "empty: the one the authorization server's metadata names").row,
      audienceCheck.row,
      field("Clock leeway (seconds)", leeway, "0 to 300; empty: 60").row),
    read: () => {
      const out = { ...settings, issuers: lines(issuers.value) };
      const put = (key, got) => {
        if (got === null || (Array.isArray(got) && !got.length) || (typeof got === "object" && !Object.keys(got).length)) delete out[key];
        else out[key] = got;
      };
      put("audiences", lines(audiences.value));
      put("scopes", scopes.value.split(/\s+/).filter(Boolean));
      const perTool = {};
      for (const line of lines(toolScopes.value)) {
        const at = line.indexOf(":");
        if (at < 1) throw new Error(`Scopes per tool: "${line}" must read tool_name: scope other_scope`);
        perTool[line.slice(0, at).trim()] = line.slice(at + 1).split(/\s+/).filter(Boolean);
      }
      put("tool_scopes", perTool);
      put("jwks_uri", jwks.value.trim() || null);
      put("audience_check", audienceCheck.input.checked ? null : false);
      put("leeway_seconds", wholeNumber(leeway, "Clock leeway", { max: 300 }));
      return out;
    },
  };
}

/** When tool calls become tasks: off, all, or those still running after some time. */
export function tasksEditor(value) {
  const found = /^(off|all|slow)(?::(\d+(?:\.\d+)?)(ms|s))?$/.exec((value || "off").trim()) || [null, "off"];
  const mode = h("select", { name: "tasks_mode" }, [["off", "off"], ["all", "every call is a task"],
    ["slow", "calls still running after a while"]].map(([v, label]) => h("option", { value: v, selected: v === found[1] }, label)));
  const after = number("tasks_after", found[2] ? (found[3] === "ms" ? Number(found[2]) : Number(found[2]) * 1000) : "",
    { min: "1", max: "3600000" });
  const afterRow = field("After (ms)", after, "empty: 1000").row;
  const sync = () => { afterRow.hidden = mode.value !== "slow"; };
  mode.addEventListener("change", sync);
  sync();
  return {
    node: h("div", { "data-field": "tasks", class: "inline" }, field("Tasks", mode, "answered as tasks to clients that negotiated them").row, afterRow),
    read: () => {
      if (mode.value !== "slow") return mode.value === "off" ? null : mode.value;
      const ms = wholeNumber(after, "Tasks: after", { min: 1, max: 3600000 });
      return ms === null ? "slow" : `slow:${ms}ms`;
    },
  };
}

/** The plan's policy rules, in order: name, condition (CEL), effect and what the effect needs. */
export function policiesEditor(value) {
  const list = h("ol", { class: "rules" });
  const rules = [];
  const add = (rule = {}) => {
    const name = text("rule_name", rule.name);
    const when = area("rule_when", rule.when || "", 2);
    const effect = h("select", { name: "rule_effect" },
      EFFECTS.map(([v, label]) => h("option", { value: v, selected: v === (rule.effect || "deny") }, label)));
    const message = text("rule_message", rule.message);
    const fields = text("rule_fields", (rule.fields || []).join(", "));
    const lifetime = number("rule_approval_seconds", rule.approval_seconds ?? "", { min: "1" });
    const approver = h("select", { name: "rule_approver" },
      APPROVERS.map(([v, label]) => h("option", { value: v, selected: v === (rule.approver || "caller") }, label)));
    const messageRow = field("Message", message, "told to the caller (deny) or the approver (approve)").row;
    const fieldsRow = field("Fields to redact", fields, "comma separated paths in the answer, e.g. email, owner.phone").row;
    const lifetimeRow = field("Approval valid for (s)", lifetime, "empty: 300").row;
    const approverRow = field("Who approves", approver).row;
    const remove = h("button", { type: "button", class: "secondary" }, "Remove this rule");
    const item = h("li", { class: "card" }, field("Rule name", name).row,
      field("When (CEL)", when, "over caller, claims, tool, args and now; e.g. tool.destructive && !(\"admin\" in caller.scopes)").row,
      field("Effect", effect).row, messageRow, fieldsRow, approverRow, lifetimeRow, remove);
    const sync = () => {
      messageRow.hidden = !["deny", "approve"].includes(effect.value);
      fieldsRow.hidden = effect.value !== "redact";
      lifetimeRow.hidden = approverRow.hidden = effect.value !== "approve";
    };
    effect.addEventListener("change", sync);
    sync();
    const entry = {
      read: () => {
        const out = { name: name.value.trim(), when: when.value.trim(), effect: effect.value };
        if (!out.name) throw new Error("every policy rule needs a name");
        if (["deny", "approve"].includes(out.effect) && message.value.trim()) out.message = message.value.trim();
        if (out.effect === "redact") out.fields = fields.value.split(",").map((f) => f.trim()).filter(Boolean);
        if (out.effect === "approve") {
          const seconds = wholeNumber(lifetime, `rule ${out.name}: approval valid for`, { min: 1, max: 86400 });
          if (seconds !== null) out.approval_seconds = seconds;
          if (approver.value === "admin") out.approver = "admin"; // kept as the rule said it, never dropped
        }
        return out;
      },
    };
    remove.addEventListener("click", () => {
      rules.splice(rules.indexOf(entry), 1);
      item.remove();
    });
    rules.push(entry);
    list.append(item);
    return name;
  };
  for (const rule of value || []) add(rule);
  const more = h("button", { type: "button", class: "secondary" }, "Add a rule");
  more.addEventListener("click", () => add().focus());
  const approvals = h("button", { type: "button", class: "secondary" }, "Ask approval for tools that change something");
  approvals.addEventListener("click", () => add({ name: "approve-changes", when: "!tool.read_only", effect: "approve",
    message: "This call changes data." }).focus());
  return {
    node: h("div", { "data-field": "policies" },
      h("p", { class: "hint" }, "The first allow, deny or approve rule that holds decides; redact rules add up. "
        + "The organization's rules are read first."),
      list, h("div", { class: "actions" }, more, approvals)),
    read: () => {
      const read = rules.map((rule) => rule.read());
      return read.length ? read : null;
    },
  };
}

/** Show `message` next to the editor or control of REST field `name` (the first part of a problem's field,
 * `rate_limit.caller.requests` is about `rate_limit`); false when the form has none. */
export function fieldError(form, name, message) {
  const top = String(name || "").split(/[.[]/)[0];
  const target = top && (form.querySelector(`[data-field="${top}"]`) || form.querySelector(`[name="${top}"]`));
  if (!target) return false;
  const error = h("p", { class: "error field-error", id: uid("err") }, message);
  target.after(error);
  const focusable = target.matches("input, select, textarea") ? target : target.querySelector("input, select, textarea");
  if (focusable) {
    focusable.setAttribute("aria-invalid", "true");
    const described = focusable.getAttribute("aria-describedby");
    focusable.setAttribute("aria-describedby", described ? `${described} ${error.id}` : error.id);
  }
  return true;
}

/** Remove what `fieldError` added. */
export function clearFieldErrors(form) {
  for (const error of form.querySelectorAll(".field-error")) {
    for (const control of form.querySelectorAll(`[aria-describedby~="${error.id}"]`)) {
      control.removeAttribute("aria-invalid");
      control.setAttribute("aria-describedby", control.getAttribute("aria-describedby").split(" ")
        .filter((id) => id !== error.id).join(" "));
    }
    error.remove();
  }
}
