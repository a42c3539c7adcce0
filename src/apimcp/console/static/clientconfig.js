// What an MCP client needs to reach an exposition: the `{"mcpServers": ...}` configuration most clients read.
// An API key is never put in it (the console never has one to put): a placeholder says where it goes.

export const KEY_PLACEHOLDER = "<the plan's API key>";

export function serverName(exposition, plan) {
  const raw = exposition.name || (plan && plan.name) || exposition.id;
  return raw.replace(/[^A-Za-z0-9_-]+/g, "-");
}

export function clientConfig(name, url, inboundMode) {
  const server = { type: "http", url };
  if (inboundMode === "api_key") server.headers = { Authorization: `Bearer ${KEY_PLACEHOLDER}` };
  return { mcpServers: { [name]: server } };
}
