// Search and pages for a list screen, kept in the screen's address (`#/services?q=pet&offset=50&limit=50`) so a
// page can be reloaded, shared and gone back to. The REST API does the searching and counting (`q`, `limit`,
// `offset`, the total in `X-Total-Count`); this module draws the controls and asks it for one page at a time.
//
//   import { listing } from "../pager.js";
//   const list = listing(ctx, params, {
//     screen: "services",                        // the screen's name in the address
//     noun: "services",                          // what the list holds: "Search the services", "1–50 of 1,000 services"
//     load: (query) => ctx.api.page(`/services?${query}`),   // query: URLSearchParams with q, limit, offset
//     show: (items) => table(...),               // the nodes of one page
//     empty: "No service yet.",                  // said when nothing is listed and nothing searched
//   });
//   replace(screen, h("h1", {}, "Services"), list.node);
//   await list.ready;                            // the first page is drawn (a failure rejects it)
//
// Options: `prefix` names the parameters when a screen has several lists (`tokens_q`, `tokens_offset`...);
// `hint` explains what the search matches. `params` (the screen's URLSearchParams) is kept up to date, so a screen
// drawing itself again after an action keeps the search and the page. Searching and paging redraw the list alone
// (no new screen, the focus stays on the control used) and add an entry to the browser's history.

import { field, h, replace } from "./dom.js";

export const PAGE_SIZES = [25, 50, 100, 200];
export const DEFAULT_PAGE_SIZE = 50;
const MAX_OFFSET = 1000000;
const MAX_QUERY = 200;

const number = (n) => n.toLocaleString("en");

/** The list's state in `params`: `{q, offset, limit}`; values out of range are the defaults. */
export function listState(params, prefix = "") {
  const q = (params.get(`${prefix}q`) || "").trim().slice(0, MAX_QUERY);
  const offset = Number(params.get(`${prefix}offset`) || 0);
  const limit = Number(params.get(`${prefix}limit`) || DEFAULT_PAGE_SIZE);
  return {
    q,
    offset: Number.isInteger(offset) && offset >= 0 && offset <= MAX_OFFSET ? offset : 0,
    limit: PAGE_SIZES.includes(limit) ? limit : DEFAULT_PAGE_SIZE,
  };
}

/** `state` written into `params` (defaults left out, to keep addresses short). */
export function writeState(params, state, prefix = "") {
  const set = (key, value, plain) => {
    if (value === plain) params.delete(`${prefix}${key}`);
    else params.set(`${prefix}${key}`, String(value));
  };
  set("q", state.q, "");
  set("offset", state.offset, 0);
  set("limit", state.limit, DEFAULT_PAGE_SIZE);
  return params;
}

/** The REST query of a state: `q` (when any), `limit`, `offset`, and `filters` (those not empty). */
export function listQuery(state, filters = {}) {
  const query = new URLSearchParams({ limit: String(state.limit), offset: String(state.offset) });
  if (state.q) query.set("q", state.q);
  for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value);
  return query;
}

/** "1–50 of 1,000 services", "No services match “pet”." */
export function countText(state, shown, total, noun) {
  if (total === 0) return state.q ? `No ${noun} match “${state.q}”.` : `No ${noun}.`;
  if (shown === 0) return `Nothing on this page: ${number(total)} ${noun} in all.`;
  const first = state.offset + 1;
  const matching = state.q ? ` matching “${state.q}”` : "";
  return `${number(first)}–${number(state.offset + shown)} of ${number(total)} ${noun}${matching}`;
}

/** A searchable, paged list bound to the screen's address: `{node, ready, reload}` (see the top of this file). */
export function listing(ctx, params, { screen, noun, load, show, empty, prefix = "", hint = null }) {
  let state = listState(params, prefix);
  const title = noun.charAt(0).toUpperCase() + noun.slice(1);
  const search = h("input", { type: "search", name: `${prefix}q`, value: state.q, autocomplete: "off",
    maxlength: String(MAX_QUERY), spellcheck: "false" });
  const clear = h("button", { type: "button", class: "secondary", hidden: !state.q }, "Clear the search");
  const form = h("form", { class: "inline search", role: "search", "aria-label": `Find ${noun}` },
    field(`Search the ${noun}`, search, hint).row,
    h("button", { type: "submit" }, "Search"),
    clear);
  const count = h("p", { class: "count", "aria-live": "polite" });
  const results = h("div", { class: "results" });
  const previous = h("button", { type: "button", class: "secondary" }, "Previous page");
  const next = h("button", { type: "button", class: "secondary" }, "Next page");
  const size = h("select", { name: `${prefix}limit` },
    PAGE_SIZES.map((n) => h("option", { value: String(n), selected: n === state.limit }, String(n))));
  const nav = h("nav", { class: "pager", "aria-label": `Pages of the ${noun}` },
    previous, next, field(`${title} per page`, size).row);
  const node = h("div", { class: "listing" }, form, count, results, nav);
  let total = 0;
  let shown = 0;
  let drawn = 0; // the latest request wins when several are under way

  async function draw() {
    const ticket = ++drawn;
    node.setAttribute("aria-busy", "true");
    try {
      const page = await load(listQuery(state));
      if (ticket !== drawn) return;
      total = page.total;
      shown = page.items.length;
      const nothing = total === 0 && !state.q;
      count.textContent = nothing ? "" : countText(state, shown, total, noun);
      replace(results, nothing ? h("p", { class: "empty" }, empty) : (shown ? show(page.items) : null));
      form.hidden = nothing;
      nav.hidden = nothing || (state.offset === 0 && total <= state.limit && state.limit === DEFAULT_PAGE_SIZE);
      const focused = document.activeElement;
      previous.disabled = state.offset === 0;
      next.disabled = state.offset + state.limit >= total;
      if (focused === previous && previous.disabled && !next.disabled) next.focus();
      if (focused === next && next.disabled && !previous.disabled) previous.focus();
      if ((focused === previous || focused === next) && previous.disabled && next.disabled) size.focus();
    } finally {
      if (ticket === drawn) node.removeAttribute("aria-busy");
    }
  }

  /** Move to `changes` of the state: kept in the address (a new history entry), the list drawn again. */
  function go(changes) {
    state = { ...state, ...changes };
    writeState(params, state, prefix);
    const query = params.toString();
    window.history.pushState(null, "", `#/${screen}${query ? `?${query}` : ""}`);
    clear.hidden = !state.q;
    draw().catch(ctx.fail);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go({ q: search.value.trim().slice(0, MAX_QUERY), offset: 0 });
  });
  clear.addEventListener("click", () => {
    search.value = "";
    search.focus();
    go({ q: "", offset: 0 });
  });
  previous.addEventListener("click", () => go({ offset: Math.max(0, state.offset - state.limit) }));
  next.addEventListener("click", () => go({ offset: state.offset + state.limit }));
  size.addEventListener("change", () => go({ limit: Number(size.value), offset: 0 }));
  return { node, ready: draw(), reload: draw };
}
