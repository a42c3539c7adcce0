// Members: the organization's people and their roles, and the invitations not accepted yet. An admin changes a
// role, removes a member (their tokens of the organization stop working at once) and invites an e-mail address
// with a role: the invitation's code is shown this once, to hand to the person. Others read.

import { copyButton, field, h, replace, table, when } from "../dom.js";
import { may } from "../roles.js";

const ROLES = ["viewer", "editor", "admin"];

function shownOnce(ctx, invited) {
  return h("div", { class: "once", role: "note", "aria-labelledby": "invite-once-title" },
    h("h2", { id: "invite-once-title" }, `The invitation of ${invited.email}`),
    h("p", {}, "Shown this once: hand the code to the person, who accepts it with apimcp join CODE (or the "
      + "REST API's POST /api/v1/invitations/accept). The control plane keeps only its hash."),
    h("p", {}, "Its code: ", h("code", { class: "secret-once", id: "invite-once" }, invited.code)),
    h("div", { class: "actions" }, copyButton(ctx, "Copy the invitation code", () => invited.code)));
}

export async function render(screen, ctx, params, invited = null) {
  const again = (message, once = null) => render(screen, ctx, params, once).then(() => ctx.say(message));
  const admin = may(ctx.role, "admin");
  const [members, invitations] = await Promise.all([ctx.api.all("/members"), ctx.api.all("/invitations")]);
  const self = ctx.me && ctx.me.user ? ctx.me.user.id : null;
  const memberRows = members.map((m) => [
    m.user.id === self ? `${m.user.email} (you)` : m.user.email, m.user.display_name || "",
    admin ? roleChoice(ctx, m, again) : m.role, when(m.since), when(m.user.last_sign_in_at) || "never",
    admin ? removeButton(ctx, m, again) : "",
  ]);
  const invitationRows = invitations.map((i) => [
    i.email, i.role, when(i.expires_at), i.invited_by || "", admin ? withdrawButton(ctx, i, again) : "",
  ]);
  replace(screen,
    h("h1", {}, "Members"),
    h("p", {}, admin
      ? "People of this organization and their roles: viewers read, editors also change services, plans, "
        + "expositions and secrets, admins also manage tokens, gateway keys and members."
      : `People of this organization and their roles. You have the ${ctx.role} role: managing members needs `
        + "the admin role."),
    invited ? shownOnce(ctx, invited) : null,
    members.length
      ? table("Members", ["E-mail", "Name", "Role", "Member since", "Last sign-in", ""], memberRows)
      : h("p", {}, "No member yet: people join by invitation."),
    h("h2", {}, "Invitations"),
    invitations.length
      ? table("Pending invitations", ["E-mail", "Role", "Expires", "Invited by", ""], invitationRows)
      : h("p", {}, "No pending invitation."),
    admin ? inviteForm(ctx, again) : null);
}

function roleChoice(ctx, member, again) {
  const select = h("select", { name: `role_${member.user.id}`, "aria-label": `Role of ${member.user.email}` },
    ROLES.map((r) => h("option", { value: r, selected: r === member.role }, r)));
  select.addEventListener("change", async () => {
    try {
      await ctx.api.patch(`/members/${encodeURIComponent(member.user.id)}`, { role: select.value });
      const said = `${member.user.email} is now ${select.value}.`;
      // one's own role: what the console lets one do changes with it
      if (ctx.me && ctx.me.user && ctx.me.user.id === member.user.id) await ctx.refreshSession(said);
      else await again(said);
    } catch (error) {
      select.value = member.role;
      ctx.fail(error);
    }
  });
  return select;
}

function removeButton(ctx, member, again) {
  const button = h("button", { type: "button", class: "danger" }, `Remove ${member.user.email}`);
  button.addEventListener("click", async () => {
    if (!window.confirm(`Remove ${member.user.email}? Their tokens of this organization stop working at once.`)) return;
    try {
      await ctx.api.delete(`/members/${encodeURIComponent(member.user.id)}`);
      await again(`Removed ${member.user.email}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return button;
}

function withdrawButton(ctx, invitation, again) {
  const button = h("button", { type: "button", class: "danger" }, `Withdraw the invitation of ${invitation.email}`);
  button.addEventListener("click", async () => {
    try {
      await ctx.api.delete(`/invitations/${encodeURIComponent(invitation.id)}`);
      await again(`Withdrew the invitation of ${invitation.email}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  return button;
}

function inviteForm(ctx, again) {
  const email = h("input", { type: "email", name: "invite_email", autocomplete: "off", required: true });
  const role = h("select", { name: "invite_role" }, ROLES.map((r) => h("option", { value: r }, r)));
  const form = h("form", { "aria-labelledby": "invite-title", autocomplete: "off" },
    h("h3", { id: "invite-title" }, "Invite someone"),
    field("E-mail address", email, "the person's address: they accept with it").row,
    field("Role", role).row,
    h("button", { type: "submit" }, "Invite"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const invited = await ctx.api.post("/invitations", { email: email.value.trim(), role: role.value });
      await again(`Invited ${invited.email} as ${invited.role}: copy the code now, it is shown this once.`, invited);
      const shown = document.getElementById("invite-once-title");
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
