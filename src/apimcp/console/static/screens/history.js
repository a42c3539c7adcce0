// History: who changed what and when. The organization's latest changes (services, artifacts, plans,
// expositions, secrets' metadata, plan templates, organization policies), each linking to its object's versions; an object's
// versions, what differs between any two of them, and for a plan or an exposition a rollback to one (applied as
// an update would be, with the same checks; gateways receive it as any change). Never a secret's values.

import { confirmAction } from "../confirm.js";
import { field, h, replace, table, when } from "../dom.js";

const KINDS = { "": "(every kind)", service: "services", artifact: "artifacts", plan: "plans",
  exposition: "expositions", secret: "secrets", template: "plan templates", organization: "organization policies" };
const COLLECTIONS = { service: "services", artifact: "artifacts", plan: "plans", exposition: "expositions",
  secret: "secrets", template: "templates" };
const RESTORABLE = new Set(["plan", "exposition"]);
const PAGE = 50;

function who(version) {
  if (!version.actor) return "the control plane";
  return version.actor.name ? `${version.actor.name} (${version.actor.role || "token"})` : version.actor.token_id;
}

function action(version) {
  return version.restored_from ? `${version.action} to version ${version.restored_from}` : version.action;
}

function shown(value) {
  return value === undefined ? "(absent)" : JSON.stringify(value, null, 1);
}

function objectLink(version) {
  const label = version.object_name || version.object_id;
  if (!COLLECTIONS[version.kind]) return label;
  return h("a", { href: `#/history?${new URLSearchParams({ kind: version.kind, object: version.object_id })}` }, label);
}

export async function render(screen, ctx, params) {
  const kind = params.get("kind") || "";
  const object = params.get("object");
  if (object && COLLECTIONS[kind]) return renderObject(screen, ctx, kind, object, params);
  const offset = Math.max(0, Number.parseInt(params.get("offset") || "0", 10) || 0);
  const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if (KINDS[kind] && kind) query.set("kind", kind);
  const page = await ctx.api.get(`/history?${query}`);
  const chosen = h("select", { name: "kind" },
    Object.entries(KINDS).map(([value, label]) => h("option", { value, selected: value === kind }, label)));
  const filters = h("form", { class: "inline", "aria-label": "History filters", "data-reads": "true" },
    field("Kind", chosen).row, h("button", { type: "submit" }, "Show the changes"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.go("history", chosen.value ? { kind: chosen.value } : {});
  });
  const pager = h("div", { class: "actions" },
    offset > 0 ? h("a", { href: `#/history?${new URLSearchParams({ ...(kind ? { kind } : {}), offset: String(Math.max(0, offset - PAGE)) })}` }, "Newer changes") : null,
    offset + PAGE < page.total ? h("a", { href: `#/history?${new URLSearchParams({ ...(kind ? { kind } : {}), offset: String(offset + PAGE) })}` }, "Older changes") : null);
  replace(screen,
    h("h1", {}, "History"),
    h("p", {}, "Every change to the organization's services, artifacts, plans, expositions, secrets (their names "
      + "and fields, never their values) and policies: who made it, when, and the object as it was after it. "
      + "Follow an object to compare its versions or, for a plan or an exposition, roll it back."),
    filters,
    page.items.length === 0 ? h("p", { class: "empty" }, "No change yet.")
      : table(`Changes, newest first (${offset + 1}–${offset + page.items.length} of ${page.total})`,
        ["When", "Kind", "Object", "Version", "Action", "By"],
        page.items.map((v) => [when(v.at), v.kind, objectLink(v), String(v.number), action(v), who(v)])),
    pager);
  return undefined;
}

async function renderObject(screen, ctx, kind, objectId, params) {
  const base = `/${COLLECTIONS[kind]}/${encodeURIComponent(objectId)}`;
  const page = await ctx.api.get(`${base}/versions?limit=200`);
  const versions = page.items;
  const name = versions[0].object_name || objectId;
  const newest = versions[0].number;
  const from = Number(params.get("from")) || (versions[1] ? versions[1].number : newest);
  const to = Number(params.get("to")) || newest;
  const numbers = versions.map((v) => String(v.number));
  const pick = (label, value) => h("select", { name: label },
    numbers.map((n) => h("option", { value: n, selected: Number(n) === value }, `version ${n}`)));
  const fromSelect = pick("from", from);
  const toSelect = pick("to", to);
  const compare = h("form", { class: "inline", "aria-label": "Compare two versions", "data-reads": "true" },
    field("From", fromSelect).row, field("To", toSelect).row, h("button", { type: "submit" }, "Compare"));
  compare.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.go("history", { kind, object: objectId, from: fromSelect.value, to: toSelect.value });
  });
  const diff = await ctx.api.get(`${base}/diff?${new URLSearchParams({ from: String(from), to: String(to) })}`);
  const restoreButton = (version) => {
    if (!RESTORABLE.has(kind) || version.number === newest || version.action === "deleted") return "";
    const button = h("button", { type: "button", class: "secondary" }, `Roll back to version ${version.number}`);
    button.addEventListener("click", async () => {
      const sure = await confirmAction({
        title: `Roll ${kind} ${name} back to version ${version.number}?`,
        message: `Its settings become those of version ${version.number} (${when(version.at)}); gateways serve it as `
          + "soon as they hear of the change. The rollback is a new version: it can be rolled back too.",
        action: `Roll back to version ${version.number}`,
      });
      if (!sure) return;
      try {
        const done = await ctx.api.post(`${base}/versions/${version.number}/restore`);
        const changed = done.changes.map((c) => c.path).join(", ") || "nothing differed";
        ctx.go("history", { kind, object: objectId }, `Rolled ${kind} ${name} back to version ${version.number} `
          + `(version ${done.version.number}): ${changed}.`);
      } catch (error) {
        ctx.fail(error);
      }
    });
    return button;
  };
  const back = kind === "plan" ? h("a", { href: `#/plans?plan=${encodeURIComponent(objectId)}` }, `Plan ${name}`)
    : kind === "exposition" ? h("a", { href: `#/expositions?exposition=${encodeURIComponent(objectId)}` }, `Exposition ${name}`)
      : kind === "template" ? h("a", { href: `#/templates?template=${encodeURIComponent(objectId)}` }, `Template ${name}`)
        : null;
  replace(screen,
    h("h1", {}, `History of ${kind} ${name}`),
    h("p", {}, h("a", { href: "#/history" }, "Every change"), back ? " · " : "", back),
    table(`Versions of ${name}, newest first (${page.total})`, ["Version", "When", "Action", "By", ""],
      versions.map((v) => [String(v.number), when(v.at), action(v), who(v), restoreButton(v)])),
    h("h2", {}, `What differs from version ${from} to version ${to}`),
    compare,
    diff.changes.length === 0 ? h("p", { class: "empty" }, "Nothing differs.")
      : table(`Differences from version ${from} to version ${to}`, ["Field", `Version ${from}`, `Version ${to}`],
        diff.changes.map((c) => [h("code", {}, c.path), h("pre", {}, shown(c.before)), h("pre", {}, shown(c.after))])));
  return undefined;
}
