// Secrets: backend credentials, listed by name, kind and public fields. Values can be set (on creation, or by
// rotating them) and are never read back: the REST API does not return them, and this page never keeps them.

import { field, h, replace, table, when } from "../dom.js";
import { listing } from "../pager.js";

let kinds = null;

async function secretKinds() {
  if (!kinds) {
    const response = await fetch(new URL("secret-kinds.json", document.baseURI), { cache: "no-store" });
    kinds = await response.json();
  }
  return kinds;
}

function inputs(names, required, secret) {
  return Object.entries(names).map(([name, isRequired]) => {
    const input = secret
      ? (name === "certificate" || name === "private_key"
        ? h("textarea", { name, rows: "4", spellcheck: "false", autocomplete: "off", class: "masked" })
        : h("input", { type: "password", name, autocomplete: "new-password", spellcheck: "false" }))
      : (name === "ca"
        ? h("textarea", { name, rows: "4", spellcheck: "false" })
        : name === "discover" // user_oauth of an MCP server: its own authorization server, found by the gateway
          ? h("input", { type: "checkbox", name })
          : h("input", { type: "text", name, autocomplete: "off", spellcheck: "false" }));
    const label = `${secret ? "Secret value" : "Public field"}: ${name}${isRequired && required ? " (required)" : ""}`;
    return { name, input, row: field(label, input).row };
  });
}

function collect(rows) {
  const out = {};
  for (const { name, input } of rows) {
    if (input.type === "checkbox") {
      if (input.checked) out[name] = true;
    } else if (input.value !== "") {
      out[name] = input.value;
    }
  }
  return out;
}

function forget(rows) {
  for (const { input } of rows) {
    input.value = "";
    input.checked = false;
  }
}

export async function render(screen, ctx, params = new URLSearchParams()) {
  const known = await secretKinds();
  const again = () => render(screen, ctx, params);
  const name = h("input", { type: "text", name: "secret_name", autocomplete: "off", required: true });
  const kind = h("select", { name: "kind" }, Object.keys(known).map((k) => h("option", { value: k }, k)));
  const description = h("input", { type: "text", name: "secret_description", autocomplete: "off" });
  const kindFields = h("div", {});
  let publicRows = [];
  let valueRows = [];
  const sync = () => {
    publicRows = inputs(known[kind.value].fields, true, false);
    valueRows = inputs(known[kind.value].values, true, true);
    replace(kindFields,
      publicRows.length ? h("fieldset", {}, h("legend", {}, "Public fields (shown in lists)"), publicRows.map((r) => r.row)) : null,
      valueRows.length ? h("fieldset", {}, h("legend", {}, "Values (stored sealed, never shown again)"), valueRows.map((r) => r.row)) : null);
  };
  kind.addEventListener("change", sync);
  sync();
  const create = h("form", { "aria-labelledby": "secret-title", autocomplete: "off" },
    h("h2", { id: "secret-title" }, "New secret"),
    field("Secret name", name).row,
    field("Kind", kind).row,
    kindFields,
    field("Description", description).row,
    h("button", { type: "submit" }, "Create the secret"));
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), kind: kind.value, fields: collect(publicRows), values: collect(valueRows) };
    if (description.value.trim()) body.description = description.value.trim();
    try {
      const secret = await ctx.api.post("/secrets", body);
      forget(valueRows);
      await again();
      ctx.say(`Created secret ${secret.name} (${secret.kind}).`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  const list = listing(ctx, params, {
    screen: "secrets",
    noun: "secrets",
    hint: "name, kind, description or a public field",
    load: (query) => ctx.api.page(`/secrets?${query}`),
    empty: "No secret yet.",
    show: (secrets) => table("Secrets", ["Name", "Kind", "Public fields", "Description", "Updated", ""],
      secrets.map((s) => [
        s.name, s.kind, Object.entries(s.fields).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(" ") : v}`).join("; "),
        s.description || "", when(s.updated_at), actions(ctx, again, s, known),
      ])),
  });
  replace(screen,
    h("h1", {}, "Secrets"),
    h("p", {}, "Backend credentials. Their values are sealed at rest and only leave the control plane sealed to a "
      + "gateway's key: no page or API response shows them."),
    list.node,
    create);
  await list.ready;
}

function actions(ctx, again, secret, known) {
  const rows = inputs((known[secret.kind] || { values: {} }).values, false, true);
  const rotate = h("details", {},
    h("summary", {}, `Set new values of ${secret.name}`),
    h("form", { "aria-label": `New values of ${secret.name}`, autocomplete: "off", class: "rotate" },
      rows.map((r) => r.row),
      h("button", { type: "submit" }, `Save the values of ${secret.name}`)));
  rotate.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await ctx.api.put(`/secrets/${encodeURIComponent(secret.id)}/values`, { values: collect(rows) });
      forget(rows);
      await again();
      ctx.say(`New values of ${secret.name} saved; gateways use them at once.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  const remove = h("button", { type: "button", class: "danger" }, `Delete ${secret.name}`);
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete secret ${secret.name}?`)) return;
    try {
      await ctx.api.delete(`/secrets/${encodeURIComponent(secret.id)}`);
      await again();
      ctx.say(`Deleted secret ${secret.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return h("div", { class: "actions" }, rotate, remove);
}
