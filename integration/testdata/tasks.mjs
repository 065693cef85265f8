// The 2025-11-25 MCP tasks, driven by the official TypeScript SDK 1.x's task
// client (client.experimental.tasks): a 20 s loop as a task polled to its
// end, input() answered through the elicitation tasks/result asks, a
// tasks/cancel that interrupts, and a short call without a task. Prints one
// JSON line for tasks_test.go to check.
//
//   node tasks.mjs SERVER [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "ts-tasks", version: "1" }, { capabilities: { elicitation: { form: {} } } });
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicited.push(req.params);
  return { action: "accept", content: { answer: "Grace" } };
});
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const out = { capabilities: client.getServerCapabilities() };

const tools = await client.listTools(); // the client learns which tools take tasks
out.taskTools = tools.tools.filter((t) => t.execution?.taskSupport).map((t) => `${t.name}:${t.execution.taskSupport}`);

const run = (code) => ({ name: "run_code", arguments: { session_id: "ts", code } });

// Without a task: as before.
await client.callTool(run("None"));
out.short = await client.callTool(run("6*7"));

// Drains a task's stream; stop(message) may end it early.
async function stream(params, stop) {
  const seen = [];
  let result, error, taskId;
  for await (const m of client.experimental.tasks.callToolStream(params)) {
    seen.push(m.type === "taskStatus" ? `taskStatus:${m.task.status}` : m.type);
    if (m.type === "taskCreated") taskId = m.task.taskId;
    if (m.type === "result") result = m.result;
    if (m.type === "error") error = String(m.error);
    if (stop && (await stop(m, taskId))) break;
  }
  return { taskId, seen, result, error };
}

const code = "import time\nfor i in range(20):\n    print('epoch', i, flush=True)\n    time.sleep(1)\n'trained'";
out.long = await stream(run(code));
out.waitRun = await client.callTool({ name: "wait_run", arguments: { session_id: "ts" } });
out.list = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);

out.input = await stream(run("name = input('Who? ')\nprint('hi', name)"));
out.elicited = elicited;

await client.callTool(run("kept = 41"));
out.cancel = await stream(run("import time\nwhile True: time.sleep(0.1)"), async (m, taskId) => {
  if (m.type !== "taskCreated") return false;
  out.cancelled = await client.experimental.tasks.cancelTask(taskId);
  return true;
});
out.after = await client.callTool(run("kept + 1"));

console.log(JSON.stringify(out));
await client.close();
