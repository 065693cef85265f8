// One connection of the official TypeScript MCP client, at its default
// options (60 s request timeout), for soak_test.go: it connects over
// streamable HTTP with a bearer token and answers tool calls that arrive
// as JSON lines on stdin, several at once, with JSON lines on stdout.
//
//   node soakclient.mjs URL TOKEN
//   stdin:  {"id": 1, "tool": "run_code", "args": {...}}
//   stdout: {"id": 1, "result": CallToolResult} or {"id": 1, "error": "..."}
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const client = new Client({ name: "ts-soak", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
console.log(JSON.stringify({ ready: true }));

const pending = new Set();
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const { id, tool, args } = JSON.parse(line);
  const p = client.callTool({ name: tool, arguments: args })
    .then((result) => console.log(JSON.stringify({ id, result })))
    .catch((err) => console.log(JSON.stringify({ id, error: String(err?.message ?? err) })))
    .finally(() => pending.delete(p));
  pending.add(p);
});
lines.on("close", async () => {
  await Promise.allSettled([...pending]);
  await client.close();
  process.exit(0);
});
