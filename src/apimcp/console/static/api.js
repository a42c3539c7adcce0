// The control plane's REST API, called with the token the user logged in with. Errors are RFC 9457 problem
// details; `ApiError.message` is what the user reads.

const BASE = new URL("../api/v1", document.baseURI).pathname;

const PAGE_SIZE = 1000; // the API's largest page
const MAX_PAGES = 50;

export class ApiError extends Error {
  constructor(status, title, detail, problems = [], field = null) {
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.problems = problems;
    this.field = field;
  }

  /** Every problem a validation error listed ("field: message"), beside the first in `message`. */
  get details() {
    return this.problems.map((p) => (p.field ? `${p.field}: ${p.message}` : p.message));
  }
}

function problemOf(status, body, text) {
  if (body && typeof body === "object" && typeof body.title === "string") {
    return new ApiError(status, body.title, typeof body.detail === "string" ? body.detail : "",
      Array.isArray(body.errors) ? body.errors : [], typeof body.field === "string" ? body.field : null);
  }
  const reason = status === 401 ? "Not authorized" : `HTTP ${status}`;
  return new ApiError(status, reason, text.slice(0, 300));
}

export class Api {
  constructor(token) {
    this.token = token;
    /** Where a person's token acts (`X-Organization`); null: the token's own organization. */
    this.organization = null;
  }

  async request(method, path, { json, form, counted = false } = {}) {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: "application/json" };
    if (this.organization) headers["X-Organization"] = this.organization;
    let body;
    if (form !== undefined) {
      body = form;
    } else if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    }
    let response;
    try {
      response = await fetch(`${BASE}${path}`, { method, headers, body, cache: "no-store", credentials: "omit" });
    } catch (error) {
      throw new ApiError(0, "Cannot reach the control plane", error.message);
    }
    if (response.status === 204) return null;
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) throw problemOf(response.status, data, text);
    if (!counted) return data;
    const total = Number(response.headers.get("X-Total-Count"));
    return { items: data, total: Number.isInteger(total) && total >= 0 ? total : data.length };
  }

  get(path) {
    return this.request("GET", path);
  }

  /** One page of a list: `{items, total}`, the total matched as the API counts it (`X-Total-Count`). */
  page(path) {
    return this.request("GET", path, { counted: true });
  }

  /** A whole list the API answers a page at a time, page after page (`MAX_PAGES` of them at most): what a choice
   * or a table of every item needs, where one page would silently cut the list at the API's page size. */
  async all(path) {
    const separator = path.includes("?") ? "&" : "?";
    const first = await this.page(`${path}${separator}limit=${PAGE_SIZE}`);
    const items = [...first.items];
    for (let pages = 1; items.length < first.total && pages < MAX_PAGES; pages += 1) {
      const next = await this.page(`${path}${separator}limit=${PAGE_SIZE}&offset=${items.length}`);
      if (!next.items.length) break;
      items.push(...next.items);
    }
    return items;
  }

  post(path, json) {
    return this.request("POST", path, { json: json ?? {} });
  }

  upload(path, form) {
    return this.request("POST", path, { form });
  }

  patch(path, json) {
    return this.request("PATCH", path, { json });
  }

  put(path, json) {
    return this.request("PUT", path, { json });
  }

  delete(path) {
    return this.request("DELETE", path);
  }
}
