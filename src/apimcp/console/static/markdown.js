// The descriptions APIs and tools carry, shown with the little Markdown they use: paragraphs, line breaks, `code`,
// **bold**, *emphasis*, lists, fenced code, headings (as bold lines) and links to http(s) pages. Built as DOM
// nodes from text, never parsed as HTML: markup in a description stays the text it is, and so does any Markdown
// outside this subset (nothing is dropped).

import { externalLink, h } from "./dom.js";

export const MAX_MARKDOWN = 20000; // characters; a longer description is shown as it is, its line breaks kept

const FENCE = /^ {0,3}```/;
const HEADING = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/;
const ITEM = /^ {0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;
const CONTINUED = /^\s+\S/;
// Every span's content excludes its own delimiters, so a search never backtracks over the rest of the text.
const SPAN = /`([^`\n]+)`|\[([^[\]\n]+)\]\(([^()\s]+)\)|\*\*([^*\n]+)\*\*|\*([^*\s](?:[^*\n]*[^*\s])?)\*/g;

function isWebUrl(url) {
  return /^https?:\/\//i.test(url) && URL.canParse(url);
}

/** The inline spans of one line, as text and nodes. */
function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(SPAN)) {
    const [whole, code, label, url, strong, em] = match;
    if (match.index > last) nodes.push(text.slice(last, match.index));
    if (code !== undefined) nodes.push(h("code", {}, code));
    else if (label !== undefined) nodes.push(isWebUrl(url) ? externalLink(url, inline(label)) : whole);
    else if (strong !== undefined) nodes.push(h("strong", {}, inline(strong)));
    else nodes.push(h("em", {}, inline(em)));
    last = match.index + whole.length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

/** Lines as one run of inline content with a line break between each. */
function withBreaks(lines) {
  return lines.flatMap((line, index) => (index ? [h("br"), ...inline(line)] : inline(line)));
}

/** An ordered list shows the numbers its text gives: from the first one, and each item's own when they are not
 * simply counting (`404.`, `409.`); items all numbered alike (`1.`, `1.`, `1.`) count from the first. */
function numbered(node, numbers) {
  if (numbers[0] !== 1) node.setAttribute("start", String(numbers[0]));
  const counting = numbers.every((n, i) => n === numbers[0] + i);
  const alike = numbers.every((n) => n === numbers[0]);
  if (counting || alike) return;
  [...node.children].forEach((li, i) => li.setAttribute("value", String(numbers[i])));
}

/** `text` as block nodes (paragraphs, lists, code blocks), to put in an element of class `description`. */
export function markdown(text) {
  const source = String(text ?? "");
  if (source.length > MAX_MARKDOWN) return [h("div", { class: "plain" }, source)];
  const blocks = [];
  let paragraph = [];
  let list = null; // {node, ordered, item: the open <li>'s lines, numbers: an ordered list's, as written}
  let fence = null;
  const addItem = () => {
    list.node.append(h("li", {}, withBreaks(list.item)));
  };
  const endList = () => {
    if (!list) return;
    addItem();
    if (list.ordered) numbered(list.node, list.numbers);
    list = null;
  };
  const endParagraph = () => {
    if (paragraph.length) blocks.push(h("p", {}, withBreaks(paragraph)));
    paragraph = [];
  };
  for (const line of source.split(/\r?\n/)) {
    if (fence) {
      if (FENCE.test(line)) {
        blocks.push(h("pre", {}, h("code", {}, fence.join("\n"))));
        fence = null;
      } else {
        fence.push(line);
      }
      continue;
    }
    const item = ITEM.exec(line);
    if (list && !item && CONTINUED.test(line)) {
      list.item.push(line.trim());
      continue;
    }
    if (list && !item && !line.trim()) continue; // a loose list: it goes on if an item of its kind comes next
    if (item) {
      endParagraph();
      const ordered = /\d/.test(item[1]);
      if (list && list.ordered === ordered) {
        addItem();
      } else {
        endList();
        list = { node: h(ordered ? "ol" : "ul"), ordered, numbers: [] };
        blocks.push(list.node);
      }
      if (ordered) list.numbers.push(Number.parseInt(item[1], 10));
      list.item = [item[2]];
      continue;
    }
    endList();
    const heading = HEADING.exec(line);
    if (FENCE.test(line)) {
      endParagraph();
      fence = [];
    } else if (!line.trim()) {
      endParagraph();
    } else if (heading) {
      endParagraph();
      blocks.push(h("p", {}, h("strong", {}, inline(heading[1]))));
    } else {
      paragraph.push(line.trim());
    }
  }
  endList();
  endParagraph();
  if (fence) blocks.push(h("pre", {}, h("code", {}, fence.join("\n"))));
  return blocks;
}
