// Single sign-on from the console: whether the control plane offers it, the button that starts it (the control
// plane sends the browser to the company's provider and back), and the one-time code it hands back in the
// address's fragment, redeemed once for the person's token (which, as any token, lives in sessionStorage only).

import { ApiError } from "./api.js";
import { h } from "./dom.js";

const BASE = new URL("../api/v1/sso", document.baseURI).pathname;
const TAB_KEY = "apimcp.signInTab";
// What this tab says of itself when it starts a sign-in, handed back with the code: a tab redeems only a
// sign-in it started (a link to someone else's would sign this person in as them).

async function call(path, init = {}) {
  const response = await fetch(`${BASE}${path}`, { cache: "no-store", credentials: "omit", ...init });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, (body && body.title) || `HTTP ${response.status}`, (body && body.detail) || "");
  }
  return body;
}

/** The button, when the control plane offers single sign-on (null otherwise, or when it cannot be asked). */
export async function signInButton() {
  let offered;
  try {
    offered = await call("");
  } catch {
    return null;
  }
  if (!offered || !offered.enabled) return null;
  const button = h("button", { type: "button", class: "secondary" }, "Sign in with single sign-on");
  button.addEventListener("click", () => {
    const tab = Array.from(crypto.getRandomValues(new Uint8Array(18)), (b) => b.toString(16).padStart(2, "0")).join("");
    sessionStorage.setItem(TAB_KEY, tab);
    window.location.assign(`${BASE}/start?client=console&tab=${tab}`);
  });
  return h("div", { class: "sso" }, button,
    h("p", { class: "hint" }, `Through your company's sign-in (${offered.issuer}); or log in with a token below.`));
}

/** What the address says of a sign-in that just ended: `{code, error, ours}` (`ours`: this tab started it), or
 * null when it says nothing. What this tab started is forgotten once read: a code is redeemed once. */
export function returned() {
  const hash = window.location.hash;
  if (!hash.startsWith("#/signed-in?")) return null;
  const params = new URLSearchParams(hash.slice("#/signed-in?".length));
  const started = sessionStorage.getItem(TAB_KEY);
  sessionStorage.removeItem(TAB_KEY);
  const ours = started !== null && params.get("tab") === started;
  return { code: params.get("code"), error: params.get("error"), ours };
}

/** The token a sign-in's one-time code is worth, with who and where: `{token, email, organization, role}`. */
export function redeem(code) {
  return call("/session", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }),
  });
}
