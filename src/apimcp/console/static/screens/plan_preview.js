// The tools a plan will serve, shown while its include/exclude patterns and tool prefix are edited: the control
// plane's own selection (`POST /plans/preview`, nothing saved), searchable, with a switch per tool that edits
// the patterns (off: its name is added to Exclude; on: its name leaves Exclude, or joins Include when Include
// lists tools). A pattern that selects nothing is named under its field, as saving would refuse it.

import { h, lines, replace, uid } from "../dom.js";

const SHOWN = 100; // switches drawn at once: a search narrows a 1,000-tool service
const WAIT_MS = 250; // typing pauses this long before the preview is asked again

function fieldError(input) {
  const error = h("p", { class: "error", id: uid("err"), hidden: true });
  input.after(error);
  const described = input.getAttribute("aria-describedby");
  input.setAttribute("aria-describedby", described ? `${described} ${error.id}` : error.id);
  return (message) => {
    error.textContent = message || "";
    error.hidden = !message;
    if (message) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  };
}

function withLine(textarea, line) {
  const current = lines(textarea.value);
  if (!current.includes(line)) textarea.value = [...current, line].join("\n");
}

function withoutLine(textarea, line) {
  textarea.value = lines(textarea.value).filter((each) => each !== line).join("\n");
}

/** The preview of a plan of the service `serviceId()` (a function: the create form's service may change), kept
 * in step with the `include`, `exclude` and `prefix` inputs: `{node, refresh}`. */
export function selectionPreview(ctx, serviceId, { include, exclude, prefix }) {
  const includeError = fieldError(include);
  const excludeError = fieldError(exclude);
  const summary = h("p", { "aria-live": "polite" });
  const search = h("input", { type: "search", id: uid("find"), autocomplete: "off", spellcheck: "false" });
  const list = h("ul", { class: "tool-switches" });
  const more = h("p", { class: "hint" });
  let latest = null;
  let asked = 0;
  let timer = null;

  const base = (name) => {
    const given = prefix.value.trim();
    return given && name.startsWith(given) ? name.slice(given.length) : name;
  };

  const toggle = (tool, on) => {
    const name = base(tool.name);
    if (!on) {
      withLine(exclude, name);
    } else if (tool.why_not === `excluded by ${name}` || tool.why_not === `excluded by ${tool.name}`) {
      withoutLine(exclude, tool.why_not.slice("excluded by ".length));
    } else if (tool.why_not && tool.why_not.startsWith("excluded by ")) {
      ctx.fail(new Error(`${tool.name} is ${tool.why_not}: edit Exclude to serve it`));
      draw();
      return;
    } else {
      withLine(include, name);
    }
    refresh();
  };

  const draw = () => {
    if (!latest) return;
    const wanted = search.value.trim().toLowerCase();
    const found = latest.tools.filter((tool) => !wanted || [tool.name, tool.signature, tool.operation, tool.summary]
      .some((text) => text && text.toLowerCase().includes(wanted)));
    replace(list, found.slice(0, SHOWN).map((tool) => {
      const box = h("input", { type: "checkbox", id: uid("tool"), checked: tool.served });
      box.addEventListener("change", () => toggle(tool, box.checked));
      const why = tool.why_not ? h("span", { class: "hint" }, ` (${tool.why_not})`) : null;
      return h("li", { class: "check" }, box,
        h("label", { for: box.id }, h("code", {}, tool.name), ` ${tool.signature}`, why));
    }));
    more.textContent = found.length > SHOWN
      ? `${found.length - SHOWN} more match: narrow the search to see them.`
      : found.length === 0 ? "No tool matches the search." : "";
  };

  const refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const id = serviceId();
      if (!id) return;
      asked += 1;
      const mine = asked;
      try {
        const body = { service_id: id, include: lines(include.value), exclude: lines(exclude.value),
          tool_prefix: prefix.value.trim() };
        const answer = await ctx.api.post("/plans/preview", body);
        if (mine !== asked) return; // a newer edit asked again
        latest = answer;
        includeError(answer.unmatched.include.length
          ? `These patterns select no operation (saving refuses them): ${answer.unmatched.include.join(", ")}` : "");
        excludeError(answer.unmatched.exclude.length
          ? `These patterns select no operation (saving refuses them): ${answer.unmatched.exclude.join(", ")}` : "");
        summary.textContent = `The plan serves ${answer.served} of the service's ${answer.total} tools.`;
        draw();
      } catch (error) {
        if (mine === asked) summary.textContent = `No preview: ${error.message}`;
      }
    }, WAIT_MS);
  };

  for (const input of [include, exclude, prefix]) input.addEventListener("input", refresh);
  search.addEventListener("input", draw);
  const node = h("fieldset", { class: "preview" }, h("legend", {}, "Tools the plan serves"),
    summary,
    h("div", { class: "field" }, h("label", { for: search.id }, "Find a tool"), search),
    list, more);
  refresh();
  return { node, refresh };
}
