// A long run driven by the official TypeScript MCP client at its default
// request timeout (60 s): run_code hands the run off, wait_run collects the
// rest. Prints one JSON line for longruns_test.go to check.
//
//   node longrun.mjs CODE SERVER [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [code, command, ...args] = process.argv.slice(2);
const client = new Client({ name: "ts-longrun", version: "1" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

const texts = [];
const calls = [];
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
async function call(name, args) {
  const start = Date.now();
  const res = await client.callTool({ name, arguments: args }); // default options: 60 s timeout
  calls.push({ tool: name, ms: Date.now() - start, status: res.structuredContent?.status });
  texts.push(text(res));
  return res;
}

let res = await call("run_code", { session_id: "ts", code });
const runId = res.structuredContent?.run_id;
while (["running", "queued"].includes(res.structuredContent?.status)) {
  res = await call("wait_run", { session_id: "ts", run_id: runId });
}
console.log(JSON.stringify({ run_id: runId, texts, calls, final: res.structuredContent, isError: res.isError ?? false }));
await client.close();
