// What the try-it panel does when a 2026-07-28 call answers `input_required`: each request the server made
// (an approval, a credential, a form) shown in the page, answered by the user: Accept (with the form's values),
// Decline or Cancel. A URL request opens its page in a new tab (http(s) only) and is accepted once the user says
// they are done. Requests the console cannot answer (sampling, roots) are declined.

import { externalLink, h, replace } from "./dom.js";
import { FormError, schemaForm } from "./schemaform.js";

function question(key, request) {
  const params = request.params || {};
  if (request.method !== "elicitation/create") {
    return { node: h("p", {}, `The server asks for ${request.method}, which the console cannot answer: declined.`),
      read: () => ({ action: "decline" }), answerable: false };
  }
  if (params.mode === "url") {
    let link;
    try {
      link = externalLink(params.url, "Open the page it names");
    } catch {
      link = h("p", { class: "error" }, "(its URL is not an http(s) page: not opened)");
    }
    return { node: h("div", {}, h("p", {}, params.message || ""), link,
      h("p", { class: "hint" }, "Finish there, then press Accept.")), read: () => ({ action: "accept" }), answerable: true };
  }
  const form = schemaForm(params.requestedSchema || { type: "object", properties: {} }, { titled: true });
  return { node: h("div", {}, h("p", { class: "ask" }, params.message || ""), form.node),
    read: () => ({ action: "accept", content: form.read() }), answerable: true, key };
}

/** Ask the user the `requests` of an input_required result in `holder`: resolves to the inputResponses, or null
 * when they cancel. */
export function askInput(holder, requests) {
  const asked = Object.entries(requests).map(([key, request]) => ({ key, ...question(key, request) }));
  return new Promise((resolve) => {
    const accept = h("button", { type: "submit" }, "Accept");
    const decline = h("button", { type: "button", class: "secondary" }, "Decline");
    const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
    const form = h("form", { class: "card asked", "aria-labelledby": "asked-title" },
      h("h2", { id: "asked-title" }, "The server asks"),
      asked.map((a) => a.node),
      h("div", { class: "actions" }, accept, decline, cancel));
    const done = (value) => {
      replace(holder);
      resolve(value);
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      try {
        done(Object.fromEntries(asked.map((a) => [a.key, a.read()])));
      } catch (error) {
        if (error instanceof FormError && error.input) error.input.focus();
        form.querySelector(".ask-error")?.remove();
        accept.before(h("p", { class: "error ask-error" }, error.message));
      }
    });
    decline.addEventListener("click", () => done(Object.fromEntries(asked.map((a) => [a.key, { action: "decline" }]))));
    cancel.addEventListener("click", () => done(null));
    replace(holder, form);
    const first = form.querySelector("input, select, textarea, button");
    if (first) first.focus();
  });
}
