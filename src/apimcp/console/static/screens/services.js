// Services: the imported APIs, each with its operations (the tools it offers) and its artifacts.

import { confirmAction } from "../confirm.js";
import { field, h, replace, table, when } from "../dom.js";
import { markdown } from "../markdown.js";
import { listing } from "../pager.js";

export async function render(screen, ctx, params) {
  const selected = params.get("service");
  if (selected) return renderOne(screen, ctx, selected, params);
  const list = listing(ctx, params, {
    screen: "services",
    noun: "services",
    hint: "name, version, kind or description; every word must match",
    load: (query) => ctx.api.page(`/services?${query}`),
    empty: "No service yet.",
    show: (listed) => table("Services", ["Name", "Version", "Kind", "Operations", "Held changes", "Updated", ""],
      listed.map((s) => [
        s.name, s.version, s.kind, String(s.operation_count), s.held_changes ? String(s.held_changes) : "",
        when(s.updated_at),
        h("a", { href: `#/services?service=${encodeURIComponent(s.id)}` }, `Show ${s.name} ${s.version}`),
      ])),
  });
  replace(screen,
    h("h1", {}, "Services"),
    h("p", {}, "The API descriptions imported into this organization. ",
      h("a", { href: "#/import" }, "Import a description"), " to add one."),
    list.node);
  await list.ready;
  return undefined;
}

/** The service's operations, searched and paged by the API (a service may have thousands). */
function operations(ctx, id, params) {
  return listing(ctx, params, {
    screen: "services",
    noun: "operations",
    hint: "tool name, method and path (GET /pets), operationId, title, tag or description",
    load: (query) => ctx.api.page(`/services/${encodeURIComponent(id)}/operations?${query}`),
    empty: "This service has no operation.",
    show: (found) => table("Operations", ["Tool", "Signature", "Operation id", "Title", "Tags"], found.map((op) => [
      h("code", {}, op.tool_name), h("code", {}, op.signature), op.operation_id || "", op.title || "", op.tags.join(", "),
    ])),
  });
}

async function renderOne(screen, ctx, id, params = new URLSearchParams({ service: id })) {
  const ops = operations(ctx, id, params); // its first page is asked for with the service, not after it
  ops.ready.catch(() => {}); // a service that is not there is said once, below
  const [service, artifacts] = await Promise.all([
    ctx.api.get(`/services/${encodeURIComponent(id)}?operations=false`), // paged by `ops`
    ctx.api.get(`/services/${encodeURIComponent(id)}/artifacts`),
  ]);
  const file = h("input", { type: "file", name: "file", accept: ".yaml,.yml,.json", required: true });
  const name = h("input", { type: "text", name: "name", autocomplete: "off" });
  const attach = h("form", { "aria-labelledby": "attach-title" },
    h("h2", { id: "attach-title" }, "Attach an artifact"),
    field("Artifact file (Prompts, Resources, CustomTools or ToolsOutputFilters YAML)", file).row,
    field("Name", name, "default: the file's name; an artifact of the same name is replaced").row,
    h("button", { type: "submit" }, "Attach"));
  attach.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!file.files.length) return ctx.fail(new Error("choose a file to attach"));
    const form = new FormData();
    form.append("file", file.files[0]);
    if (name.value.trim()) form.append("name", name.value.trim());
    try {
      const artifact = await ctx.api.upload(`/services/${encodeURIComponent(id)}/artifacts`, form);
      await render(screen, ctx, params);
      ctx.say(`Attached ${artifact.name} (${artifact.kind}).`);
    } catch (error) {
      ctx.fail(error);
    }
    return undefined;
  });
  const remove = h("button", { type: "button", class: "danger" }, `Delete service ${service.name}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete ${service.name} ${service.version}, its plans and its expositions?`)) return;
    try {
      await ctx.api.delete(`/services/${encodeURIComponent(id)}`);
      ctx.go("services", {}, `Deleted ${service.name} ${service.version}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  const detach = (artifact) => {
    const button = h("button", { type: "button" }, `Detach ${artifact.name}`);
    button.addEventListener("click", async () => {
      try {
        const serving = await expositionsServing(ctx, id, artifact.name);
        const sure = await confirmAction({
          title: `Detach ${artifact.name}?`,
          message: serving.length
            ? `These expositions serve ${artifact.name} now and stop serving it at once:`
            : `No exposition serves ${artifact.name} now.`,
          affected: serving,
          action: `Detach ${artifact.name}`,
        });
        if (!sure) return;
        const result = await ctx.api.delete(`/artifacts/${encodeURIComponent(artifact.id)}`);
        await render(screen, ctx, params);
        const plans = result.impacted_plans.map((p) => p.name);
        ctx.say(`Detached ${artifact.name}${plans.length ? `; plans that selected it: ${plans.join(", ")}` : ""}.`);
      } catch (error) {
        ctx.fail(error);
      }
    });
    return button;
  };
  const held = service.held_changes ? await heldChanges(screen, ctx, service) : null;
  replace(screen,
    h("h1", {}, `Service ${service.name} ${service.version}`),
    h("p", {}, h("a", { href: "#/services" }, "All services"), " · ",
      h("a", { href: `#/plans?new=${encodeURIComponent(id)}` }, "Create a plan for this service")),
    service.description ? h("div", { class: "description" }, markdown(service.description)) : null,
    h("p", {}, `${service.kind}, ${service.operation_count} operations, updated ${when(service.updated_at)}.`),
    service.kind === "mcp" ? serverHealth(service) : null,
    held,
    h("h2", {}, "Operations"),
    ops.node,
    table("Artifacts", ["Name", "Role", "Kind", "Declares", ""], artifacts.map((a) => [
      a.name, a.role, a.kind || "", a.capabilities.join(", "), a.role === "main" ? "" : detach(a),
    ])),
    attach,
    h("h2", {}, "Danger zone"),
    remove);
  await ops.ready;
  return undefined;
}

/** What the gateways seen in the last minutes say of an MCP service's server: up, failing, or not called yet. */
function serverHealth(service) {
  const said = { up: "up (answers)", failing: "failing (no answer, or a server error)", unknown: "not called yet" };
  if (!service.upstream_health.length) {
    return h("p", {}, "Server health: no gateway has reported on this MCP server in the last 5 minutes.");
  }
  return table("Server health", ["Gateway", "State", "Reported"], service.upstream_health.map((r) => [
    r.gateway, h("span", { class: `state-${r.state}` }, said[r.state] || r.state), when(r.last_seen),
  ]));
}

/** What the MCP server changed since an admin last accepted its definitions: each change with its diff and what
 * is flagged in it, held (not served) until accepted; an admin accepts or rejects them all. */
async function heldChanges(screen, ctx, service) {
  const id = encodeURIComponent(service.id);
  const { changes } = await ctx.api.get(`/services/${id}/changes`);
  const decide = (label, method, path, said) => {
    const button = h("button", { type: "button", class: method === "DELETE" ? "danger" : "" }, label);
    button.addEventListener("click", async () => {
      try {
        await (method === "DELETE" ? ctx.api.delete(path) : ctx.api.post(path, {}));
        await render(screen, ctx, new URLSearchParams({ service: service.id }));
        ctx.say(said);
      } catch (error) {
        ctx.fail(error);
      }
    });
    return button;
  };
  return h("section", { "aria-labelledby": "held-title", class: "held" },
    h("h2", { id: "held-title" }, `Held changes (${changes.length})`),
    h("p", {}, "The MCP server changed these definitions after they were accepted. Clients are served the accepted ",
      "ones until an admin accepts the changes (plans that trust the server serve them already)."),
    ...changes.map((change) => h("article", { class: "change" },
      h("h3", {}, `${change.change.toUpperCase()} ${change.kind} `, h("code", {}, change.name)),
      change.flags.length
        ? h("ul", { class: "flags", "aria-label": `What is flagged in ${change.name}` },
          ...change.flags.map((flag) => h("li", {}, `flagged: ${flag}`)))
        : null,
      change.diff ? h("pre", { class: "diff", tabindex: "0", "aria-label": `Diff of ${change.name}` }, change.diff)
        : null)),
    h("p", {},
      decide("Accept the changes", "POST", `/services/${id}/changes/accept`, `Accepted the changes of ${service.name}.`),
      " ",
      decide("Reject the changes", "DELETE", `/services/${id}/changes`, `Rejected the changes of ${service.name}.`)));
}

/** The names of the expositions serving artifact `name` of service `serviceId`: their plan selects it, or selects
 * none (and so serves them all). */
async function expositionsServing(ctx, serviceId, name) {
  const [plans, expositions] = await Promise.all([ctx.api.all("/plans"), ctx.api.all("/expositions")]);
  const serving = new Set(plans
    .filter((p) => p.service_id === serviceId && (p.artifacts.length === 0 || p.artifacts.includes(name)))
    .map((p) => p.id));
  return expositions.filter((e) => serving.has(e.plan_id)).map((e) => e.name || e.id);
}
