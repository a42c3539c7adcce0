// Access: the organization's API tokens (a new one's value shown this once, then never again: the API keeps only
// its hash) and the gateway keys snapshots' secrets are sealed to. What a user token may not do, the API refuses
// in its own words.

import { copyButton, field, h, replace, table, when } from "../dom.js";
import { listing } from "../pager.js";

const KINDS = [["user", "user (acts as an editor)"], ["viewer", "viewer (reads only)"], ["admin", "admin"],
  ["gateway", "gateway (syncs a gateway)"]];

function state(record) {
  if (record.revoked_at) return `revoked ${when(record.revoked_at)}`;
  if (record.expires_at && new Date(record.expires_at).getTime() <= Date.now()) return "expired";
  return "active";
}

/** The token value just issued: in this box only, until the screen is left (nothing keeps it). */
function shownOnce(ctx, issued) {
  return h("div", { class: "once", role: "note", "aria-labelledby": "token-once-title" },
    h("h2", { id: "token-once-title" }, `The token ${issued.name}`),
    h("p", {}, "Shown this once: copy it now. The control plane keeps only its hash; leaving this screen forgets it."),
    h("p", {}, "Its value: ", h("code", { class: "secret-once", id: "token-once" }, issued.token)),
    h("div", { class: "actions" }, copyButton(ctx, "Copy the token", () => issued.token)));
}

export async function render(screen, ctx, params, issued = null) {
  const again = (message, once = null) => render(screen, ctx, params, once).then(() => ctx.say(message));
  const mine = (t) => ctx.api.token.startsWith(t.prefix) && !t.revoked_at;
  const tokens = listing(ctx, params, {
    screen: "access",
    prefix: "tokens_",
    noun: "API tokens",
    hint: "name, kind (admin, user, gateway) or first characters",
    load: (query) => ctx.api.page(`/tokens?${query}`),
    empty: "No token.",
    show: (found) => table("API tokens", ["Name", "Kind", "Begins with", "Created", "Expires", "State", "Last used", ""],
      found.map((t) => [
        mine(t) ? `${t.name} (this session)` : t.name, t.kind, h("code", {}, `${t.prefix}…`), when(t.created_at),
        t.expires_at ? when(t.expires_at) : "never", state(t), when(t.last_used_at) || "never",
        t.revoked_at ? "" : revokeToken(ctx, t, mine(t), again),
      ])),
  });
  const keys = listing(ctx, params, {
    screen: "access",
    prefix: "keys_",
    noun: "gateway keys",
    hint: "name, fingerprint or public key",
    load: (query) => ctx.api.page(`/gateway-keys?${query}`),
    empty: "No gateway key registered.",
    show: (found) => table("Gateway keys", ["Name", "Fingerprint", "Public key", "Registered", "State", ""],
      found.map((k) => [
        k.name, h("code", {}, k.fingerprint), h("code", { class: "url" }, k.public_key), when(k.created_at),
        k.revoked_at ? `revoked ${when(k.revoked_at)}` : "active", k.revoked_at ? "" : revokeKey(ctx, k, again),
      ])),
  });
  replace(screen,
    h("h1", {}, "Access"),
    h("p", {}, "API tokens open the REST API and this console (admin or user) or let a gateway follow the control "
      + "plane (gateway); gateway keys are the public halves snapshots' secrets are sealed to. Creating admin and "
      + "gateway tokens, revoking admin tokens and managing gateway keys need an admin token."),
    issued ? shownOnce(ctx, issued) : null,
    h("h2", {}, "API tokens"),
    tokens.node,
    tokenForm(ctx, again),
    h("h2", {}, "Gateway keys"),
    keys.node,
    keyForm(ctx, again));
  await Promise.all([tokens.ready, keys.ready]);
}

function revokeToken(ctx, token, mine, again) {
  const button = h("button", { type: "button", class: "danger" }, `Revoke the token ${token.name}`);
  button.addEventListener("click", async () => {
    const warning = mine ? " It is the token of this session: you will be logged out." : "";
    if (!window.confirm(`Revoke the token ${token.name}? It stops working at once.${warning}`)) return;
    try {
      await ctx.api.delete(`/tokens/${encodeURIComponent(token.id)}`);
      await again(`Revoked the token ${token.name}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return button;
}

function tokenForm(ctx, again) {
  const name = h("input", { type: "text", name: "token_name", autocomplete: "off", required: true });
  const kind = h("select", { name: "token_kind" }, KINDS.map(([value, label]) => h("option", { value }, label)));
  const days = h("input", { type: "number", name: "valid_days", min: "1", max: "3650", step: "1" });
  const form = h("form", { "aria-labelledby": "token-title", autocomplete: "off" },
    h("h3", { id: "token-title" }, "New API token"),
    field("Token name", name, "what or who it is for").row,
    field("Token kind", kind).row,
    field("Valid for (days)", days, "1 to 3650; empty: until revoked").row,
    h("button", { type: "submit" }, "Create the token"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), kind: kind.value };
    if (days.value.trim() !== "") body.valid_days = Number(days.value);
    try {
      const issued = await ctx.api.post("/tokens", body);
      await again(`Created the ${issued.kind} token ${issued.name}: copy its value now, it is shown this once.`,
        { name: issued.name, token: issued.token });
      const shown = document.getElementById("token-once-title");
      if (shown) {
        shown.setAttribute("tabindex", "-1");
        shown.focus();
      }
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}

function revokeKey(ctx, key, again) {
  const button = h("button", { type: "button", class: "danger" }, `Revoke the gateway key ${key.name}`);
  button.addEventListener("click", async () => {
    if (!window.confirm(`Revoke the gateway key ${key.name}? Gateways holding it get no snapshot any more.`)) return;
    try {
      await ctx.api.delete(`/gateway-keys/${encodeURIComponent(key.id)}`);
      await again(`Revoked the gateway key ${key.name} (${key.fingerprint}).`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return button;
}

function keyForm(ctx, again) {
  const name = h("input", { type: "text", name: "key_name", autocomplete: "off", required: true });
  const publicKey = h("input", { type: "text", name: "public_key", autocomplete: "off", spellcheck: "false",
    required: true, size: "48" });
  const form = h("form", { "aria-labelledby": "key-title", autocomplete: "off" },
    h("h3", { id: "key-title" }, "Register a gateway key"),
    field("Key name", name, "what the key is for, e.g. the gateways of one site").row,
    field("Public key", publicKey, "the public half only: 43 characters of base64url (apimcp gateway-key list "
      + "shows it); the private key never leaves the gateway").row,
    h("button", { type: "submit" }, "Register the key"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const key = await ctx.api.post("/gateway-keys", { name: name.value.trim(), public_key: publicKey.value.trim() });
      await again(`Registered the gateway key ${key.name} (${key.fingerprint}).`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return form;
}
