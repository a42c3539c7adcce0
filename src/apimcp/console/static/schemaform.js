// A form generated from a tool's input schema: a labelled control per property (text, number, checkbox or
// choice, enum as a list), JSON for objects, arrays and anything else; `read()` gives the arguments or throws
// a FormError naming the field at fault.

import { field, h } from "./dom.js";

export class FormError extends Error {
  constructor(message, input) {
    super(message);
    this.input = input;
  }
}

function typeOf(schema) {
  const type = schema.type;
  if (Array.isArray(type)) return type.find((t) => t !== "null") || "string";
  if (typeof type === "string") return type;
  if (Array.isArray(schema.enum)) return "enum";
  return "json";
}

function hintOf(schema, kind) {
  const parts = [];
  if (typeof schema.description === "string") parts.push(schema.description);
  if (kind === "json") parts.push("JSON");
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(" · ");
}

function control(name, schema, required, titled = false) {
  const kind = Array.isArray(schema.enum) ? "enum" : typeOf(schema);
  const shown = titled && typeof schema.title === "string" && schema.title ? schema.title : name;
  const label = required ? `${shown} (required)` : shown;
  const hint = hintOf(schema, ["object", "array", "json"].includes(kind) ? "json" : kind);
  let input;
  let read;
  if (kind === "enum") {
    input = h("select", { name }, required ? null : h("option", { value: "" }, "(not set)"),
      schema.enum.map((value, index) => h("option", { value: String(index) }, JSON.stringify(value))));
    read = () => (input.value === "" ? undefined : schema.enum[Number(input.value)]);
  } else if (kind === "boolean" && required) {
    input = h("input", { type: "checkbox", name });
    read = () => input.checked;
  } else if (kind === "boolean") {
    input = h("select", { name }, h("option", { value: "" }, "(not set)"), h("option", { value: "true" }, "true"),
      h("option", { value: "false" }, "false"));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (kind === "integer" || kind === "number") {
    input = h("input", { type: "number", name, step: kind === "integer" ? "1" : "any", inputmode: "decimal" });
    read = () => {
      if (input.value.trim() === "") return undefined;
      const value = Number(input.value);
      if (!Number.isFinite(value) || (kind === "integer" && !Number.isInteger(value))) {
        throw new FormError(`${name} must be ${kind === "integer" ? "an integer" : "a number"}`, input);
      }
      return value;
    };
  } else if (kind === "string") {
    input = h("input", { type: "text", name, autocomplete: "off", spellcheck: "false" });
    read = () => (input.value === "" ? undefined : input.value);
  } else {
    input = h("textarea", { name, rows: "3", spellcheck: "false" });
    read = () => {
      if (input.value.trim() === "") return undefined;
      try {
        return JSON.parse(input.value);
      } catch (error) {
        throw new FormError(`${name} is not valid JSON (${error.message})`, input);
      }
    };
  }
  const { row } = field(label, input, hint);
  return {
    row,
    read() {
      const value = read();
      if (value === undefined && required) throw new FormError(`${name} is required`, input);
      return value;
    },
  };
}

/** `{node, read}` for `schema` (an object schema; a schema without properties gets one JSON field); `titled`:
 * controls are labelled with their properties' titles (a form a server asks the user to fill), else their names
 * (a tool's arguments, as a model sees them). */
export function schemaForm(schema, { titled = false } = {}) {
  const properties = schema && typeof schema.properties === "object" && schema.properties ? schema.properties : {};
  const required = new Set(Array.isArray(schema && schema.required) ? schema.required : []);
  const names = Object.keys(properties);
  if (names.length === 0) {
    const whole = control("arguments", { description: "the arguments as a JSON object" }, false);
    return {
      node: h("div", { class: "schema-form" }, whole.row),
      read() {
        const value = whole.read();
        if (value === undefined) return {};
        if (typeof value !== "object" || Array.isArray(value) || value === null) {
          throw new FormError("arguments must be a JSON object", null);
        }
        return value;
      },
    };
  }
  const controls = names.map((name) => [name, control(name, properties[name] || {}, required.has(name), titled)]);
  return {
    node: h("div", { class: "schema-form" }, controls.map(([, c]) => c.row)),
    read() {
      const args = {};
      for (const [name, c] of controls) {
        const value = c.read();
        if (value !== undefined) args[name] = value;
      }
      return args;
    },
  };
}
