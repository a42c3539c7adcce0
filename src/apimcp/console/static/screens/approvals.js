// Approvals: the calls a policy rule sends to an administrator (`approver: admin`), each waiting for a decision;
// the pending ones by default, or those approved, refused, used or all, searched and paged by the API. An admin
// approves or refuses a pending request that has not expired (the caller's same call, made again, then goes on
// once, or stays refused); others read.

import { field, h, replace, table, visuallyHidden, when } from "../dom.js";
import { listing } from "../pager.js";
import { may } from "../roles.js";

const STATUSES = {
  pending: "pending: waiting for a decision",
  approved: "approved",
  refused: "refused",
  used: "used: approved, and the call went on",
  all: "(every status)",
};
const EMPTY = {
  pending: "No call is waiting for an approval.",
  approved: "No approved request.",
  refused: "No refused request.",
  used: "No used approval.",
  all: "No approval request yet.",
};

function statusOf(params) {
  const asked = params.get("status") || "pending";
  return Object.hasOwn(STATUSES, asked) ? asked : "pending";
}

function state(approval) {
  return approval.expired && approval.status !== "used" ? `${approval.status}, expired` : approval.status;
}

function exposition(approval) {
  const href = `#/expositions?exposition=${encodeURIComponent(approval.exposition)}`;
  return h("a", { href }, approval.exposition_name || approval.exposition);
}

export async function render(screen, ctx, params) {
  const status = statusOf(params);
  const admin = may(ctx.role, "admin");
  const decided = status !== "pending";
  const list = listing(ctx, params, {
    screen: "approvals",
    noun: "approval requests",
    hint: "tool, caller, question, exposition or who decided; every word must match",
    load: (query) => {
      query.set("status", status);
      return ctx.api.page(`/approvals?${query}`);
    },
    empty: EMPTY[status],
    show: (found) => table(
      `${status.charAt(0).toUpperCase()}${status.slice(1)} approval requests, newest first`,
      ["Question", "Tool", "Exposition", "Caller", "Status", "Requested", "Expires",
        ...(decided ? ["Decided by", "Decided"] : []), ...(admin ? [""] : [])],
      found.map((a) => [
        a.question, h("code", {}, a.tool), exposition(a), a.caller, state(a), when(a.created_at), when(a.expires_at),
        ...(decided ? [a.decided_by || "", when(a.decided_at)] : []),
        ...(admin ? [a.status === "pending" && !a.expired ? decisions(ctx, a, params) : ""] : []),
      ])),
  });
  const chosen = h("select", { name: "status" },
    Object.entries(STATUSES).map(([value, label]) => h("option", { value, selected: value === status }, label)));
  const filters = h("form", { class: "inline", "aria-label": "Approval filters" },
    field("Status", chosen).row,
    h("button", { type: "submit" }, "Show the requests"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.go("approvals", chosen.value === "pending" ? {} : { status: chosen.value });
  });
  const refresh = h("button", { type: "button" }, "Refresh");
  refresh.addEventListener("click", () => {
    list.reload().then(() => ctx.say("Refreshed the approval requests."), ctx.fail);
  });
  replace(screen,
    h("h1", {}, "Approvals"),
    h("p", {}, "Calls a policy rule sends to an administrator (effect approve, approver admin) wait here. An approved "
      + "call goes on once, when its caller makes it again before the request expires; a refused one stays refused "
      + "until then. ", admin ? "Approve or refuse the pending ones."
      : `You have the ${ctx.role} role: approving and refusing need the admin role.`),
    filters,
    h("div", { class: "actions" }, refresh),
    list.node);
  await list.ready;
}

/** Approve and Refuse for a pending request; the screen is drawn again after a decision, and says it. */
function decisions(ctx, approval, params) {
  const button = (verb, label, done, className) => {
    const node = h("button", { type: "button", class: className }, label,
      visuallyHidden(` ${approval.tool} (${approval.id})`));
    node.addEventListener("click", async () => {
      try {
        const answer = await ctx.api.post(`/approvals/${encodeURIComponent(approval.id)}/${verb}`);
        ctx.go("approvals", params, `${done} ${answer.tool} (${answer.id}).`);
      } catch (error) {
        ctx.fail(error);
      }
    });
    return node;
  };
  return h("div", { class: "actions" },
    button("approve", "Approve", "Approved", null), button("refuse", "Refuse", "Refused", "danger"));
}
