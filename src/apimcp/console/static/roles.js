// What the signed-in role may do, on screen. A viewer sees every screen, but each control that would change
// something is disabled and says why (one note per screen, which the controls point to with aria-describedby); the
// API refuses anyway, and what it refuses an editor (an admin's action) is shown in its own words.
//
// Change controls are found by what they are, in one place: forms other than searches (role="search") and forms
// that only read or choose what is shown (data-reads: a history filter, a comparison, a report, the gateway the
// page talks to), and the buttons that act on an object (deleting, revoking, detaching, duplicating, renewing,
// rolling back, accepting and rejecting an MCP server's changes). Screens that only read or call gateways are left alone, and so is
// Approvals, which offers its decisions (an admin's) to admins only.

import { h } from "./dom.js";

const READING_SCREENS = new Set(["traffic", "try", "audit", "approvals"]);
const ACTIONS = /^(Delete|Detach|Revoke|Stop exposing|Duplicate|Make a new API key|Roll back|Accept|Reject|Remove|Save|Create|Register|Invite|Attach|Import|Change|Rotate)/;
const RANK = { viewer: 1, editor: 2, admin: 3 };

/** Whether `role` has at least the role `needed`. */
export function may(role, needed) {
  return (RANK[role] || 0) >= RANK[needed];
}

function changeControls(screen) {
  const found = [];
  for (const form of screen.querySelectorAll("form:not([role=search]):not([data-reads])")) {
    found.push(...form.querySelectorAll("input, select, textarea, button"));
  }
  for (const button of screen.querySelectorAll("button")) {
    if (!button.closest("form") && ACTIONS.test(button.textContent.trim())) found.push(button);
  }
  return found;
}

/** Disable what `screen` (of name `name`) offers to change when `ctx.role` is below the editor role; the
 * screen's content may come later (lists load a page at a time): call again, it is idempotent. */
export function gate(screen, name, ctx) {
  if (may(ctx.role, "editor") || READING_SCREENS.has(name)) return;
  const controls = changeControls(screen).filter((c) => !c.dataset.readOnly);
  if (!controls.length) return;
  let note = screen.querySelector(".read-only");
  if (!note) {
    note = h("p", { class: "read-only", id: `read-only-${name}`, role: "note" },
      `Read only: you have the ${ctx.role} role in organization ${ctx.organization.name}; `
      + "changes need the editor role (ask an admin of the organization).");
    const heading = screen.querySelector("h1");
    if (heading) heading.after(note);
    else screen.prepend(note);
  }
  for (const control of controls) {
    control.disabled = true;
    control.dataset.readOnly = "true";
    control.title = "Read only: changes need the editor role";
    const described = control.getAttribute("aria-describedby");
    control.setAttribute("aria-describedby", described ? `${described} ${note.id}` : note.id);
  }
}
