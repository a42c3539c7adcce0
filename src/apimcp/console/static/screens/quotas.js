// The organization's quotas (how many expositions, gateway groups and gateways it may have) with what it uses, on
// the Gateways screen; an admin changes them here. What a quota refuses is the API's 429, shown as any refusal.

import { field, h, replace, table } from "../dom.js";
import { may } from "../roles.js";

const KINDS = [["expositions", "Expositions"], ["gateway_groups", "Gateway groups"], ["gateways", "Gateways"]];

function room(quota) {
  if (quota.limit === null) return "no limit";
  const left = quota.limit - quota.used;
  return left > 0 ? `${left} more` : "reached: new ones are refused";
}

/** `{node, ready}`: the quotas section, filled once `ready` resolves. The form shows to admins; others read that an
 * admin can change them. */
export function quotaSection(ctx) {
  const node = h("section", { "aria-labelledby": "quotas-title" },
    h("h2", { id: "quotas-title" }, "Quotas"), h("p", {}, "Loading…"));
  const admin = may(ctx.role, "admin");
  const draw = async () => {
    const quotas = await ctx.api.get("/organization/quotas");
    const inputs = Object.fromEntries(KINDS.map(([kind]) => [kind, h("input", {
      type: "number", name: `quota_${kind}`, min: "0", step: "1", value: quotas[kind].limit ?? "" })]));
    const form = h("form", { "aria-labelledby": "quotas-form-title" },
      h("h3", { id: "quotas-form-title" }, "Change the quotas"),
      h("div", { class: "inline" }, KINDS.map(([kind, label]) =>
        field(`Quota of ${label.toLowerCase()}`, inputs[kind], "empty: no limit").row)),
      h("button", { type: "submit" }, "Save the quotas"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const body = {};
        for (const [kind, label] of KINDS) {
          const text = inputs[kind].value.trim();
          const value = text === "" ? null : Number(text);
          if (value !== null && (!Number.isInteger(value) || value < 0)) {
            throw new Error(`the quota of ${label.toLowerCase()} is a whole number from 0, or empty for no limit`);
          }
          body[kind] = value;
        }
        await ctx.api.put("/organization/quotas", body);
        await draw();
        ctx.say("Saved the quotas.");
      } catch (error) {
        ctx.fail(error);
      }
    });
    replace(node,
      h("h2", { id: "quotas-title" }, "Quotas"),
      table(`Quotas of organization ${ctx.organization.name}`, ["Of", "Limit", "In use", "Room"],
        KINDS.map(([kind, label]) => [label, quotas[kind].limit === null ? "no limit" : String(quotas[kind].limit),
          String(quotas[kind].used), room(quotas[kind])])),
      admin ? form : h("p", { class: "hint" }, "An admin of the organization can change them."));
  };
  return { node, ready: draw().catch(ctx.fail) };
}
