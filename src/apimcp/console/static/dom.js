// Building DOM nodes without ever parsing HTML: every text goes in as a text node (textContent), so nothing an
// API or a tool returns can become markup.

let counter = 0;

/** A fresh id for tying a label to its input. */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

const PROPERTIES = new Set(["value", "checked", "selected", "disabled", "multiple", "hidden", "required", "readOnly"]);
// The only URLs `h` builds: links to the console's own screens (`#/...`), and images a tool returned, as data:
// URLs of a raster type. Anything else (a javascript: URL above all) is refused, whatever it was built from; the
// http(s) links a description makes go through `externalLink` alone.
const URL_ATTRIBUTES = {
  href: /^#/,
  src: /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}$/,
};

/** `h("button", {type: "button", onclick: f}, "Save")`: an element with attributes, listeners and children. */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      node.className = value;
    } else if (PROPERTIES.has(key)) {
      node[key] = value;
    } else if (key in URL_ATTRIBUTES && !URL_ATTRIBUTES[key].test(String(value))) {
      throw new Error(`refused ${key} ${JSON.stringify(String(value).slice(0, 40))}: not a URL the console makes`);
    } else if (key.startsWith("on")) {
      throw new Error(`refused ${key}: listeners are functions, never text`);
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace everything inside `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A labelled form control: `{row, input}`; `hint` is read to screen readers with the input. */
export function field(label, input, hint) {
  const id = input.id || uid("f");
  input.id = id;
  const parts = [h("label", { for: id }, label), input];
  if (hint) {
    const hintId = `${id}-hint`;
    input.setAttribute("aria-describedby", hintId);
    parts.push(h("p", { class: "hint", id: hintId }, hint));
  }
  return { row: h("div", { class: "field" }, parts), input };
}

/** Text read to screen readers only. */
export function visuallyHidden(text) {
  return h("span", { class: "visually-hidden" }, text);
}

/** A link to a page on the web: http(s) only (anything else is refused), opened in a new tab without a referrer. */
export function externalLink(url, ...children) {
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`refused link ${JSON.stringify(url.slice(0, 40))}: only http(s) pages are linked`);
  }
  const node = h("a", { rel: "noopener noreferrer", target: "_blank" }, children);
  node.setAttribute("href", parsed.href);
  return node;
}

/** A table with a caption, header cells (an empty one heads the column of actions) and rows of cells (strings or
 * nodes), in a box of its own that scrolls sideways when the table is wider than the page. */
export function table(caption, headers, rows) {
  const captionId = uid("caption");
  const header = (name) => h("th", { scope: "col" }, name === "" ? visuallyHidden("Actions") : name);
  return h(
    "div",
    { class: "table-scroll", role: "region", "aria-labelledby": captionId, tabindex: "0" },
    h(
      "table",
      {},
      h("caption", { id: captionId }, caption),
      h("thead", {}, h("tr", {}, headers.map(header))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
    ),
  );
}

export function lines(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

export function when(timestamp) {
  if (!timestamp) return "";
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? String(timestamp) : date.toLocaleString();
}

/** A button copying `text()` to the clipboard, saying so (or what to do when the browser refuses). */
export function copyButton(ctx, label, text) {
  const button = h("button", { type: "button" }, label);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text());
      ctx.say("Copied to the clipboard.");
    } catch {
      ctx.fail(new Error("the browser did not allow copying: select the text and copy it"));
    }
  });
  return button;
}

/** "key=value, key=value" as an object; Error naming a pair that is not key=value. */
export function parseLabels(text) {
  const parsed = {};
  for (const pair of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const [key, ...rest] = pair.split("=");
    if (!rest.length) throw new Error(`label "${pair}" must read key=value`);
    parsed[key.trim()] = rest.join("=").trim();
  }
  return parsed;
}
