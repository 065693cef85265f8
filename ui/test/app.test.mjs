// The built MCP App (mcpserver/ui/cell.html) in jsdom, with ext-apps' own
// host side, AppBridge, as the host and a scripted server behind its
// tools/call: the handshake, the first cell from the tool result, the
// view_run polling with its cursor, the input box and the final cells.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { JSDOM } from "jsdom";
import { deep } from "./dom.mjs";
import { AppBridge } from "@modelcontextprotocol/ext-apps/app-bridge";

const html = await readFile(new URL("../../mcpserver/ui/cell.html", import.meta.url), "utf8");

async function until(what, cond, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// host starts AppBridge and the view, joined as a parent window and its
// iframe would be: the view posts to window.parent, the host's messages
// arrive as message events whose source is that parent.
async function host(server, hostContext = { theme: "dark" }) {
  let view;
  const toHost = [];
  const transport = {
    async start() {},
    async send(m) {
      const ev = new view.window.Event("message");
      Object.defineProperty(ev, "data", { value: JSON.parse(JSON.stringify(m)) });
      Object.defineProperty(ev, "source", { value: parent });
      view.window.dispatchEvent(ev);
    },
    async close() {},
  };
  const parent = {
    postMessage(m) {
      const copy = JSON.parse(JSON.stringify(m));
      if (transport.onmessage) transport.onmessage(copy);
      else toHost.push(copy);
    },
  };
  const bridge = new AppBridge(null, { name: "test-host", version: "1" }, { serverTools: {} }, { hostContext });
  bridge.oncalltool = async (params) => server(params);
  const initialized = new Promise((r) => (bridge.oninitialized = r));
  await bridge.connect(transport);
  view = new JSDOM(html, {
    runScripts: "dangerously",
    pretendToBeVisual: true,
    beforeParse(w) {
      Object.defineProperty(w, "parent", { value: parent, configurable: true });
    },
  });
  for (const m of toHost.splice(0)) transport.onmessage(m);
  await initialized;
  return { bridge, doc: view.window.document, close: () => view.window.close() };
}

test("the view follows a handed-off run to its end and answers its input()", async () => {
  const calls = [];
  const live = (status, outputs, cursor, extra = {}) => ({
    content: [{ type: "text", text: "run r1 in session s: " + status }],
    structuredContent: { cells: [{ session_id: "s", run_id: "r1", index: -1, code: "loop()", language: "python", status, outputs, ...extra }], cursor, done: false },
  });
  let step = 0;
  const server = (p) => {
    calls.push(p);
    if (p.name === "send_input") return { content: [{ type: "text", text: "sent" }] };
    assert.equal(p.name, "view_run");
    switch (step++) {
      case 0:
        return live("running", [{ output_type: "stream", name: "stdout", text: "tick 1\n" }], 1);
      case 1:
        return live("running", [{ output_type: "stream", name: "stdout", text: "tick 2\n" }], 2);
      case 2:
        return live("input_requested", [], 2, { prompt: "name? " });
      default:
        if (!calls.some((c) => c.name === "send_input")) return live("input_requested", [], 2, { prompt: "name? " });
        return {
          content: [{ type: "text", text: "run r1 in session s: ok" }],
          structuredContent: {
            cells: [
              {
                session_id: "s",
                run_id: "r1",
                index: 0,
                code: "loop()",
                language: "python",
                execution_count: 1,
                status: "ok",
                elapsed_ms: 2100,
                outputs: [
                  { output_type: "stream", name: "stdout", text: "tick 1\ntick 2\nhello Ada\n" },
                  { output_type: "execute_result", data: { "text/html": "<table><tr><td>42</td></tr></table>", "text/plain": "42" } },
                ],
              },
            ],
            cursor: 3,
            done: true,
          },
        };
    }
  };
  const h = await host(server);
  try {
    assert.equal(h.doc.documentElement.dataset.theme, "dark", "the host's theme is followed");
    await h.bridge.sendToolInput({ arguments: { code: "loop()", session_id: "s" } });
    await h.bridge.sendToolResult({
      content: [{ type: "text", text: "[1] running" }],
      structuredContent: { session_id: "s", run_id: "r1", status: "running", output: "tick 1\n", stdout: "", stderr: "", result: "", displays: [] },
    });
    const cell = await until("the first cell", () => h.doc.querySelector(".cell"));
    assert.match(cell.querySelector(".cell-code").textContent, /loop\(\)/);
    await until("tick 2 from a delta", () => /tick 1\ntick 2/.test(h.doc.querySelector(".cell-outputs")?.textContent));
    const input = await until("the input box", () => h.doc.querySelector("input.cell-input"));
    assert.ok(h.doc.querySelector(".cell-interrupt"));
    input.value = "Ada";
    h.doc.querySelector(".cell-input-send").click();
    await until("the final cell", () => (() => { const c = h.doc.querySelector('.cell[data-status="ok"]'); return c && deep(c, "td"); })());
    assert.equal(deep(h.doc, "td").textContent, "42");
    assert.equal(h.doc.querySelector(".cell").dataset.index, "0");
    assert.equal(h.doc.querySelectorAll(".cell").length, 1);
    assert.equal(h.doc.querySelector(".cell-interrupt"), null);
    const views = calls.filter((c) => c.name === "view_run");
    assert.deepEqual(
      views.slice(0, 3).map((c) => c.arguments.cursor),
      [0, 1, 2],
      "each poll sends the cursor the last answer returned",
    );
    // The first asks at once; the next ones let the server wait for news,
    // telling it the status they have seen.
    assert.deepEqual(views[0].arguments, { session_id: "s", run_id: "r1", cursor: 0, status: "", wait: 0 });
    assert.equal(views[1].arguments.wait, 5);
    assert.ok(views[1].arguments.status !== "", "the second call names the status the first returned");
    assert.deepEqual(calls.find((c) => c.name === "send_input").arguments, { session_id: "s", run_id: "r1", text: "Ada", wait: 0 });
  } finally {
    h.close();
  }
});

test("a result without a run shows at once and calls no tool", async () => {
  const calls = [];
  const h = await host((p) => {
    calls.push(p);
    return { content: [] };
  }, { theme: "light" });
  try {
    await h.bridge.sendToolResult({ content: [{ type: "text", text: "rows: 3, columns: 2" }], structuredContent: { session_id: "s", status: "ok" } });
    const cell = await until("the cell", () => h.doc.querySelector(".cell"));
    assert.match(cell.querySelector(".cell-outputs").textContent, /rows: 3/);
    assert.equal(h.doc.documentElement.dataset.theme, "light");
    await h.bridge.sendHostContextChange({ theme: "dark" });
    await until("the theme change", () => h.doc.documentElement.dataset.theme === "dark");
    assert.equal(calls.length, 0);
  } finally {
    h.close();
  }
});

test("an interrupt button calls interrupt_session for the session", async () => {
  const calls = [];
  const h = await host((p) => {
    calls.push(p);
    if (p.name === "view_run") {
      return { structuredContent: { cells: [{ session_id: "s2", run_id: "r9", index: -1, code: "sleep()", status: "running", outputs: [] }], cursor: 0, done: false } };
    }
    return { content: [{ type: "text", text: "interrupted" }] };
  });
  try {
    await h.bridge.sendToolResult({ content: [], structuredContent: { session_id: "s2", run_id: "r9", status: "running", stdout: "" } });
    const b = await until("the interrupt button", () => h.doc.querySelector(".cell-interrupt"));
    b.click();
    await until("interrupt_session", () => calls.some((c) => c.name === "interrupt_session"));
    assert.deepEqual(calls.find((c) => c.name === "interrupt_session").arguments, { session_id: "s2" });
  } finally {
    h.close();
  }
});

test("a call that became an MCP task is followed through the run its handle names", async () => {
  const calls = [];
  const h = await host((p) => {
    calls.push(p);
    return {
      content: [{ type: "text", text: "run r9 in session s: ok" }],
      structuredContent: { cells: [{ session_id: "s", run_id: "r9", index: 0, code: "slow()", language: "python", execution_count: 1, status: "ok", outputs: [{ output_type: "stream", name: "stdout", text: "finished\n" }] }], cursor: 1, done: true },
    };
  });
  try {
    await h.bridge.sendToolInput({ arguments: { code: "slow()", session_id: "s" } });
    await h.bridge.sendToolResult({ content: [], resultType: "task", taskId: "t1", status: "working", _meta: { "kernel-mcp/run": { session_id: "s", run_id: "r9" } } });
    await until("the run's final cell", () => /finished/.test(h.doc.querySelector('.cell[data-status="ok"] .cell-outputs')?.textContent || ""));
    const view = calls.find((c) => c.name === "view_run");
    assert.ok(view, "the view never called view_run");
    assert.equal(view.arguments.run_id, "r9");
    assert.equal(view.arguments.session_id, "s");
  } finally {
    h.close();
  }
});
