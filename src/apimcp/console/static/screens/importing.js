// Importing a description: a file, pasted text or a URL (OpenAPI, GraphQL or protobuf; the kind is detected).

import { field, h, replace } from "../dom.js";

const KINDS = [["", "detect from the content"], ["openapi", "OpenAPI"], ["graphql", "GraphQL"], ["grpc", "gRPC"]];

export async function render(screen, ctx) {
  const source = h("select", { name: "source" },
    h("option", { value: "file" }, "Upload a file"), h("option", { value: "paste" }, "Paste the text"),
    h("option", { value: "url" }, "Read it from a URL"));
  const file = h("input", { type: "file", name: "file", accept: ".yaml,.yml,.json,.graphql,.gql,.proto,.pb,.binpb" });
  const text = h("textarea", { name: "text", rows: "14", spellcheck: "false" });
  const filename = h("input", { type: "text", name: "filename", value: "description.yaml", autocomplete: "off" });
  const url = h("input", { type: "url", name: "url", autocomplete: "off", placeholder: "https://…" });
  const name = h("input", { type: "text", name: "name", autocomplete: "off" });
  const version = h("input", { type: "text", name: "version", autocomplete: "off" });
  const kind = h("select", { name: "kind" }, KINDS.map(([value, label]) => h("option", { value }, label)));
  const fileRow = field("Description file", file).row;
  const pasteRows = h("div", {}, field("Description text", text).row,
    field("File name", filename, "its extension helps tell YAML, JSON, SDL and .proto apart").row);
  const urlRow = field("Description URL", url, "http(s), read with the control plane's fetch rules").row;
  const result = h("div", { class: "result", "aria-live": "polite" });
  const sync = () => {
    fileRow.hidden = source.value !== "file";
    pasteRows.hidden = source.value !== "paste";
    urlRow.hidden = source.value !== "url";
  };
  source.addEventListener("change", sync);
  sync();
  const form = h("form", { "aria-labelledby": "import-title" },
    h("h1", { id: "import-title" }, "Import a description"),
    h("p", {}, "Importing a service with the name and version of one that exists updates it in place."),
    field("Source", source).row, fileRow, pasteRows, urlRow,
    h("fieldset", {}, h("legend", {}, "Options"),
      field("Service name", name, "default: the description's title").row,
      field("Version", version, "default: the description's version").row,
      field("Kind", kind).row),
    h("button", { type: "submit" }, "Import"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const options = { name: name.value.trim(), version: version.value.trim(), kind: kind.value };
    try {
      let imported;
      if (source.value === "url") {
        if (!url.value.trim()) throw new Error("give the description's URL");
        const body = { url: url.value.trim() };
        for (const [key, value] of Object.entries(options)) if (value) body[key] = value;
        imported = await ctx.api.post("/services", body);
      } else {
        const upload = new FormData();
        if (source.value === "file") {
          if (!file.files.length) throw new Error("choose a description file");
          upload.append("file", file.files[0]);
        } else {
          if (!text.value.trim()) throw new Error("paste the description's text");
          upload.append("file", new Blob([text.value], { type: "application/octet-stream" }),
            filename.value.trim() || "description.yaml");
        }
        for (const [key, value] of Object.entries(options)) if (value) upload.append(key, value);
        imported = await ctx.api.upload("/services", upload);
      }
      showResult(result, imported);
      ctx.say(`${imported.created ? "Imported" : "Updated"} ${imported.name} ${imported.version}: `
        + `${operations(imported.operation_count)}.`);
    } catch (error) {
      ctx.fail(error);
    }
  });
  replace(screen, form, result);
}

function operations(count) {
  return `${count} operation${count === 1 ? "" : "s"}`;
}

function showResult(node, imported) {
  replace(node,
    h("h2", {}, `${imported.created ? "Imported" : "Updated"} ${imported.name} ${imported.version}`),
    h("p", {}, `${imported.kind}, ${operations(imported.operation_count)}.`),
    imported.warnings.length
      ? h("div", {}, h("h3", {}, "What the importer repaired or left out"),
        h("ul", {}, imported.warnings.map((w) => h("li", {}, w))))
      : null,
    h("p", {}, h("a", { href: `#/services?service=${encodeURIComponent(imported.id)}` }, "See its operations"), " · ",
      h("a", { href: `#/plans?new=${encodeURIComponent(imported.id)}` }, "Create a plan for it")));
}
