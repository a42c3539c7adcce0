// The console's shell: logging in (the token lives in sessionStorage, never in a URL), the screens behind
// `#/name?params` links, and the two live regions every screen reports to (in the page's flow above the screen,
// so a message never covers a field; it lasts until the next action or screen, or is dismissed).

import { Api, ApiError } from "./api.js";
import { redeem, returned, signInButton } from "./sso.js";
import { forgetTranscript } from "./transcript.js";
import * as access from "./screens/access.js";
import * as approvals from "./screens/approvals.js";
import * as audit from "./screens/audit.js";
import * as discovery from "./screens/discovery.js";
import { field, h, replace } from "./dom.js";
import * as expositions from "./screens/expositions.js";
import * as gateways from "./screens/gateways.js";
import * as history from "./screens/history.js";
import * as importing from "./screens/importing.js";
import * as members from "./screens/members.js";
import * as plans from "./screens/plans.js";
import { gate } from "./roles.js";
import * as secrets from "./screens/secrets.js";
import * as services from "./screens/services.js";
import * as templates from "./screens/templates.js";
import * as traffic from "./screens/traffic.js";
import * as tryit from "./screens/tryit.js";

const TOKEN_KEY = "apimcp.console.token";
const GATEWAY_KEY = "apimcp.console.gateway";
const ORGANIZATION_KEY = "apimcp.console.organization";
const SCREENS = {
  traffic, services, import: importing, plans, templates, expositions, try: tryit, discovery, gateways, secrets, access,
  members, approvals, audit, history
};
const DEFAULT_SCREEN = "traffic";
const STATUS_MS = 10000; // how long a message of success stays; an error stays until the next action or dismissed

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const switcher = document.getElementById("switch-org");
const logout = document.getElementById("logout");
const statusRegion = document.getElementById("status");
const alertRegion = document.getElementById("alert");
const messages = statusRegion.parentElement;
const dismiss = document.getElementById("dismiss");
let statusTimer = null;

/** The message just written is brought into view when it is an error, or when the control used is gone (the
 * screen was drawn again); a success said while the user stays on a control (Copy...) leaves the page where it is. */
function shown(isError) {
  dismiss.hidden = false;
  const lost = !main.contains(document.activeElement) || document.activeElement === main;
  if ((isError || lost) && messages.getBoundingClientRect().top < 0) messages.scrollIntoView({ block: "nearest" });
}

function say(message) {
  clearMessages();
  statusRegion.textContent = message;
  statusTimer = setTimeout(clearMessages, STATUS_MS);
  shown(false);
}

function fail(error) {
  clearMessages();
  const message = error instanceof Error ? error.message : String(error);
  const details = error instanceof ApiError ? error.details.filter((d) => d !== message) : [];
  replace(alertRegion, h("p", {}, message), details.length ? h("ul", {}, details.map((d) => h("li", {}, d))) : null);
  shown(true);
  if (error instanceof ApiError && error.status === 401) endSession("The control plane no longer accepts the token; log in again.");
}

function clearMessages() {
  clearTimeout(statusTimer);
  statusRegion.textContent = "";
  alertRegion.replaceChildren();
  if (document.activeElement === dismiss) main.focus({ preventScroll: true });
  dismiss.hidden = true;
}

// The gateways the control plane names (`--console-gateway`); the first is the default base of MCP URLs.
let namedGateways = [];

function gatewayBase() {
  return (localStorage.getItem(GATEWAY_KEY) || namedGateways[0] || window.location.origin).replace(/\/+$/, "");
}

function setGatewayBase(url) {
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("the gateway URL must be http(s)");
  localStorage.setItem(GATEWAY_KEY, parsed.origin + parsed.pathname.replace(/\/+$/, ""));
}

function route() {
  const hash = window.location.hash;
  if (!hash.startsWith("#/")) return null;
  const [name, query] = hash.slice(2).split("?", 2);
  // own names only: `constructor` or `__proto__` are every object's, not screens
  return { name: Object.hasOwn(SCREENS, name) ? name : DEFAULT_SCREEN, params: new URLSearchParams(query || "") };
}

let pending = null;

/** Show screen `name`, then `message` in the status region (a hash change clears the messages first). */
function go(name, params = {}, message = null) {
  pending = message;
  const query = new URLSearchParams(params).toString();
  const target = `#/${name}${query ? `?${query}` : ""}`;
  if (window.location.hash === target) show();
  else window.location.hash = target;
}

let context = null;
let watching = null;

async function show() {
  if (!context) return;
  const current = route() || { name: DEFAULT_SCREEN, params: new URLSearchParams() };
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === `#/${current.name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const screen = h("section", { class: "screen", "aria-busy": "true" });
  replace(main, screen);
  // what the role may not change is disabled, as the screen draws it and as its lists load
  if (watching) watching.disconnect();
  const shownContext = context;
  watching = new MutationObserver(() => gate(screen, current.name, shownContext));
  watching.observe(screen, { childList: true, subtree: true });
  try {
    await SCREENS[current.name].render(screen, context, current.params);
  } catch (error) {
    fail(error);
  } finally {
    screen.removeAttribute("aria-busy");
  }
  const heading = screen.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus();
  }
  document.title = `${heading ? heading.textContent : "apimcp"} · apimcp console`;
  if (pending) {
    say(pending);
    pending = null;
  }
}

/** The organization the token acts in (`X-Organization`, for a person of several), who it is and its role. */
async function enter(api) {
  const [organization, me] = await Promise.all([api.get("/organization"), api.get("/me")]);
  return { organization, me };
}

function startSession(api, { organization, me }) {
  context = { api, organization, me, role: me.role, say, fail, clearMessages, go, gatewayBase, setGatewayBase,
    refreshSession };
  const person = me.user ? me.user.email : `service account ${me.service_account}`;
  who.textContent = `Organization ${organization.name} · ${me.role} · ${person}`;
  showSwitcher(me, organization.name);
  nav.hidden = false;
  logout.hidden = false;
  show();
}

/** The organization switcher: shown to a person of several organizations. */
function showSwitcher(me, current) {
  const choices = me.memberships || [];
  switcher.hidden = choices.length < 2;
  const select = switcher.querySelector("select");
  select.replaceChildren(...choices.map((m) =>
    h("option", { value: m.organization, selected: m.organization === current }, `${m.organization} (${m.role})`)));
}

/** Read who the token is again (its role changed: the header and every screen follow), then show `message`. */
async function refreshSession(message) {
  const api = context.api;
  const entered = await enter(api);
  pending = message;
  startSession(api, entered);
}

async function switchOrganization(name) {
  const api = context.api;
  const previous = api.organization;
  api.organization = name;
  try {
    const entered = await enter(api);
    sessionStorage.setItem(ORGANIZATION_KEY, name);
    forgetTranscript(); // another organization's requests are not this one's to see
    clearMessages();
    pending = `Now in organization ${name}, as ${entered.me.role}.`;
    startSession(api, entered);
  } catch (error) {
    api.organization = previous;
    showSwitcher(context.me, context.organization.name);
    fail(error);
  }
}

function endSession(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(ORGANIZATION_KEY);
  forgetTranscript(); // the try-it record holds whole requests and answers: not for whoever signs in next
  context = null;
  nav.hidden = true;
  logout.hidden = true;
  switcher.hidden = true;
  who.textContent = "";
  showLogin(message);
}

function showLogin(message) {
  const token = h("input", { type: "password", name: "token", autocomplete: "off", required: true, spellcheck: "false" });
  const tokenField = field("API token", token, "A token of your organization (apimcp_admin_…, apimcp_user_… or "
    + "apimcp_viewer_…). apimcp serve writes its first one to <data dir>/bootstrap-token.");
  const form = h("form", { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Log in"),
    tokenField.row,
    h("button", { type: "submit" }, "Log in"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const api = new Api(token.value.trim());
    try {
      const entered = await enter(api);
      sessionStorage.setItem(TOKEN_KEY, api.token);
      clearMessages();
      if (!route()) window.history.replaceState(null, "", `#/${DEFAULT_SCREEN}`);
      startSession(api, entered);
    } catch (error) {
      const reason = error instanceof ApiError && error.status === 401
        ? `The control plane refused this token: ${error.detail || error.title}`
        : error.message;
      fail(new Error(reason));
      token.focus();
    }
  });
  replace(main, form);
  if (message) fail(new Error(message));
  token.focus();
  signInButton().then((button) => {
    if (button && form.isConnected) form.querySelector("h1").after(button);
  });
}

// The skip link moves the focus only: following its `#main` would replace the screen's `#/name?params` in the URL.
document.querySelector("a.skip").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});
dismiss.addEventListener("click", clearMessages);
// The next action replaces the last message: a form sent or a button pressed in the screen clears it first.
main.addEventListener("submit", clearMessages, true);
main.addEventListener("click", (event) => {
  if (event.target instanceof Element && event.target.closest("button")) clearMessages();
}, true);
switcher.querySelector("select").addEventListener("change", (event) => switchOrganization(event.target.value));
logout.addEventListener("click", () => {
  endSession();
  say("Logged out.");
});
window.addEventListener("hashchange", () => {
  if (route()) {
    clearMessages();
    show();
  }
});

async function loadNamedGateways() {
  try {
    const response = await fetch("gateways.json", { cache: "no-store", credentials: "omit" });
    const named = response.ok ? (await response.json()).gateways : [];
    namedGateways = Array.isArray(named) ? named.filter((url) => typeof url === "string") : [];
  } catch {
    namedGateways = [];  // the page's own origin stays the default
  }
}

/** Back from single sign-on: the one-time code redeemed for the person's token, or the reason it failed. */
async function signedIn(back) {
  window.history.replaceState(null, "", `#/${DEFAULT_SCREEN}`);  // the code is never kept in the address
  if (!back.ours) {  // a link this tab did not ask for: neither its code nor its words are taken
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) {
      await resume(saved);
      return;
    }
    showLogin("A sign-in this tab did not start was ignored: sign in here.");
    return;
  }
  if (!back.code) {
    showLogin(`Single sign-on did not sign you in: ${back.error || "no code came back"}`);
    return;
  }
  try {
    const signed = await redeem(back.code);
    const api = new Api(signed.token);
    sessionStorage.setItem(TOKEN_KEY, api.token);
    startSession(api, await enter(api));
  } catch (error) {
    showLogin(`Single sign-on did not sign you in: ${error.message}`);
  }
}

async function boot() {
  await loadNamedGateways();
  const back = returned();
  if (back) {
    await signedIn(back);
    return;
  }
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (!saved) {
    showLogin();
    return;
  }
  await resume(saved);
}

/** The session this tab kept (its token), going on. */
async function resume(saved) {
  const api = new Api(saved);
  api.organization = sessionStorage.getItem(ORGANIZATION_KEY);
  try {
    startSession(api, await enter(api));
  } catch (error) {
    endSession(error instanceof ApiError && error.status === 401 ? "Your session ended; log in again." : error.message);
  }
}

boot();
