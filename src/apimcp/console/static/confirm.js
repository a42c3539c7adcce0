// Asking before an action whose effect reaches clients: a modal <dialog> built from text nodes, naming what the
// action affects. Cancel has the focus first, and Cancel or Escape leaves everything as it was.

import { h, uid } from "./dom.js";

/** Resolves to true when the user presses `action`, false on Cancel or Escape. */
export function confirmAction({ title, message, affected = [], action }) {
  const titleId = uid("dialog");
  const messageId = `${titleId}-message`;
  const cancel = h("button", { type: "button", autofocus: true }, "Cancel");
  const confirm = h("button", { type: "button", class: "danger" }, action);
  const dialog = h("dialog", { class: "confirm", "aria-labelledby": titleId, "aria-describedby": messageId },
    h("h2", { id: titleId }, title),
    h("p", { id: messageId }, message),
    affected.length ? h("ul", {}, affected.map((name) => h("li", {}, name))) : null,
    h("div", { class: "actions" }, cancel, confirm));
  return new Promise((resolve) => {
    cancel.addEventListener("click", () => dialog.close("cancel"));
    confirm.addEventListener("click", () => dialog.close("confirm"));
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "confirm");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
