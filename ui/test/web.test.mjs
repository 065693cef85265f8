// The built web view (mcpserver/ui/web.html) in jsdom against a scripted
// /ui/ API: the token on every request, the session list, the cells, the
// event stream's live cells, the input box, the person's run and the
// read-only refusal; below a path prefix, every request under the page's own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { JSDOM } from "jsdom";
import { deep } from "./dom.mjs";

const html = await readFile(new URL("../../mcpserver/ui/web.html", import.meta.url), "utf8");
const TOKEN = "0123456789abcdef0123456789abcdef";

async function until(what, cond, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const historyCell = {
  session_id: "default",
  run_id: "",
  index: 0,
  code: "df.head()",
  cell_type: "code",
  by: "",
  language: "python",
  execution_count: 1,
  status: "ok",
  elapsed_ms: 12,
  outputs: [{ output_type: "execute_result", data: { "text/html": "<table><tr><td>7</td></tr></table>", "text/plain": "7" }, execution_count: 1 }],
};

// page opens web.html at pageURL with fetch and EventSource replaced by the
// routes. A request's URL is resolved against the page's, as a browser
// does: routes are keyed by the resolved path.
function page(routes, pageURL = "http://127.0.0.1:8765/ui/?token=" + TOKEN) {
  const requests = [];
  const sources = [];
  const dom = new JSDOM(html, {
    url: pageURL,
    runScripts: "dangerously",
    pretendToBeVisual: true,
    beforeParse(w) {
      w.fetch = async (url, init = {}) => {
        const req = { url: String(url), resolved: new URL(String(url), w.location.href), method: init.method || "GET", headers: init.headers || {}, body: init.body };
        requests.push(req);
        const key = req.method + " " + req.resolved.pathname;
        const route = routes[key];
        const [status, body] = route ? route(req) : [404, { error: "no route " + key }];
        return { ok: status < 300, status, statusText: "", text: async () => JSON.stringify(body) };
      };
      w.EventSource = class {
        constructor(url) {
          this.url = url;
          this.resolved = new URL(String(url), w.location.href);
          sources.push(this);
        }
        emit(e) {
          this.onmessage?.({ data: JSON.stringify(e) });
        }
        addEventListener() {}
      };
    },
  });
  return { doc: dom.window.document, requests, sources, close: () => dom.window.close() };
}

test("the page lists the sessions, shows the cells and follows the events", async () => {
  let inputBody;
  let cells = [historyCell];
  const p = page({
    "GET /ui/api/sessions": () => [200, { sessions: [{ session_id: "default", state: "idle", language: "python", history_count: 1, run: null }, { session_id: "other", state: "idle" }] }],
    "GET /ui/api/sessions/default/cells": () => [200, { cells }],
    "POST /ui/api/sessions/default/input": (r) => {
      inputBody = JSON.parse(r.body);
      return [200, { message: "sent" }];
    },
  });
  try {
    const td = await until("the history cell's table", () => (() => { const c = p.doc.querySelector('.cell[data-index="0"]'); return c && deep(c, "td"); })());
    assert.equal(td.textContent, "7");
    assert.deepEqual([...p.doc.querySelectorAll(".session-tab")].map((a) => a.dataset.sessionId), ["default", "other"]);
    for (const r of p.requests) assert.equal(r.headers.Authorization, "Bearer " + TOKEN, r.url + " carries the token");
    assert.equal(p.doc.querySelector(".download-ipynb").href, "http://127.0.0.1:8765/ui/api/sessions/default/notebook.ipynb?token=" + TOKEN);
    assert.equal(p.doc.querySelector(".download-py").href, "http://127.0.0.1:8765/ui/api/sessions/default/script.py?token=" + TOKEN);

    const es = await until("the event stream", () => p.sources[0]);
    assert.equal(es.resolved.href, "http://127.0.0.1:8765/ui/api/events?token=" + TOKEN);
    cells = [historyCell, { ...historyCell, run_id: "r2", index: -1, code: "for i in range(3): print(i)", status: "running", outputs: [] }];
    es.emit({ seq: 1, kind: "run_started", session_id: "default", run_id: "r2", status: "running" });
    es.emit({ seq: 2, kind: "run_output", session_id: "default", run_id: "r2", output: { output_type: "stream", name: "stdout", text: "0\n" } });
    es.emit({ seq: 3, kind: "run_output", session_id: "default", run_id: "r2", output: { output_type: "stream", name: "stdout", text: "1\n" } });
    es.emit({ seq: 4, kind: "run_output", session_id: "other", run_id: "r7", output: { output_type: "stream", name: "stdout", text: "elsewhere\n" } });
    const live = await until("the live cell", () => p.doc.querySelector('.cell[data-run-id="r2"]'));
    await until("its code, fetched", () => /range\(3\)/.test(live.querySelector(".cell-code").textContent));
    assert.equal(live.querySelector(".cell-outputs").textContent, "0\n1\n", "outputs from events, not lost to the refetch");
    assert.doesNotMatch(p.doc.body.textContent, /elsewhere/);

    es.emit({ seq: 5, kind: "input_requested", session_id: "default", run_id: "r2", prompt: "go? " });
    const input = await until("the input box", () => live.querySelector("input.cell-input"));
    input.value = "yes";
    live.querySelector(".cell-input-send").click();
    await until("the answer posted", () => inputBody);
    assert.deepEqual(inputBody, { run_id: "r2", text: "yes" });

    cells = [historyCell, { ...historyCell, run_id: "r2", index: 1, code: "for i in range(3): print(i)", outputs: [{ output_type: "stream", name: "stdout", text: "0\n1\n2\n" }] }];
    es.emit({ seq: 6, kind: "run_finished", session_id: "default", run_id: "r2", status: "ok" });
    await until("the recorded cell", () => p.doc.querySelector('.cell[data-index="1"][data-status="ok"]'));
    assert.equal(p.doc.querySelectorAll(".cell").length, 2);
    assert.equal(p.doc.querySelector('.cell[data-index="1"] .cell-outputs').textContent, "0\n1\n2\n");
  } finally {
    p.close();
  }
});

test("the person's cell is posted; a read-only server's refusal is shown", async () => {
  const bodies = [];
  let readonly = false;
  let cells = [];
  const p = page({
    "GET /ui/api/sessions": () => [200, { sessions: [{ session_id: "default", state: "idle" }] }],
    "GET /ui/api/sessions/default/cells": () => [200, { cells }],
    "POST /ui/api/sessions/default/run": (r) => {
      bodies.push(JSON.parse(r.body));
      if (readonly) return [403, { error: "the web view is read-only (--ui-readonly)" }];
      // The server lists a run from the moment it answers with its id.
      cells = [{ ...historyCell, run_id: "r5", index: -1, code: "1 + 1", by: "person", status: "queued", outputs: [] }];
      return [202, { run_id: "r5" }];
    },
    "POST /ui/api/sessions/default/interrupt": () => [200, { message: "interrupted" }],
  });
  try {
    const ta = await until("the code box", () => !p.doc.querySelector(".new-cell").hidden && p.doc.querySelector("textarea.new-cell-code"));
    ta.value = "1 + 1";
    p.doc.querySelector(".new-cell-run").click();
    await until("the queued cell", () => p.doc.querySelector('.cell[data-run-id="r5"][data-status="queued"]'));
    assert.deepEqual(bodies, [{ code: "1 + 1" }]);
    assert.equal(ta.value, "");

    readonly = true;
    ta.value = "2 + 2";
    p.doc.querySelector(".new-cell-run").click();
    const msg = await until("the refusal", () => !p.doc.querySelector(".new-cell-message").hidden && p.doc.querySelector(".new-cell-message"));
    assert.match(msg.textContent, /read-only/);
    assert.equal(ta.value, "2 + 2", "the code stays for the person");

    p.doc.querySelector(".session-interrupt").click();
    await until("the interrupt", () => p.requests.some((r) => r.method === "POST" && r.url.endsWith("/interrupt")));
  } finally {
    p.close();
  }
});

test("a wrong token's 401 is said on the page", async () => {
  const p = page({ "GET /ui/api/sessions": () => [401, { error: "unauthorized: wrong or missing token" }] });
  try {
    const m = await until("the message", () => !p.doc.querySelector(".page-message").hidden && p.doc.querySelector(".page-message"));
    assert.match(m.textContent, /unauthorized/);
    assert.equal(p.sources.length, 0, "no event stream without a working token");
  } finally {
    p.close();
  }
});

test("a run that ended before the answer to its POST shows once, as its recorded cell", async () => {
  let cells = [];
  let answer;
  const recorded = { ...historyCell, run_id: "", index: 0, code: "6 * 7", by: "person", outputs: [{ output_type: "execute_result", data: { "text/plain": "42" }, execution_count: 1 }] };
  const p = page({
    "GET /ui/api/sessions": () => [200, { sessions: [{ session_id: "default", state: "idle" }] }],
    "GET /ui/api/sessions/default/cells": () => [200, { cells }],
    // The run is quick: its events, and its recording, come before the
    // answer to the POST that started it.
    "POST /ui/api/sessions/default/run": () => {
      cells = [recorded];
      const es = p.sources[0];
      es.emit({ seq: 1, kind: "run_queued", session_id: "default", run_id: "r1", status: "queued" });
      es.emit({ seq: 2, kind: "run_started", session_id: "default", run_id: "r1", status: "running" });
      es.emit({ seq: 3, kind: "run_output", session_id: "default", run_id: "r1", output: recorded.outputs[0] });
      es.emit({ seq: 4, kind: "history_changed", session_id: "default" });
      es.emit({ seq: 5, kind: "run_finished", session_id: "default", run_id: "r1", status: "ok" });
      answer = true;
      return [202, { run_id: "r1" }];
    },
  });
  try {
    const ta = await until("the code box", () => !p.doc.querySelector(".new-cell").hidden && p.doc.querySelector("textarea.new-cell-code"));
    await until("the event stream", () => p.sources[0]);
    ta.value = "6 * 7";
    p.doc.querySelector(".new-cell-run").click();
    await until("the POST answered", () => answer && ta.value === "");
    await until("the recorded cell", () => p.doc.querySelector('.cell[data-index="0"][data-status="ok"]'));
    // Every fetch the page sent has been answered by now; none brings a
    // live cell back.
    const fetches = () => p.requests.filter((r) => r.url.includes("/cells")).length;
    const n = fetches();
    p.sources[0].emit({ seq: 6, kind: "history_changed", session_id: "default" });
    await until("one more fetch", () => fetches() > n);
    await until("the page settled", () => p.doc.querySelectorAll(".cell").length === 1);
    assert.deepEqual([...p.doc.querySelectorAll(".cell")].map((c) => c.dataset.status), ["ok"]);
  } finally {
    p.close();
  }
});

test("a block re-run in place is drawn once, where it is, and follows its run's events", async () => {
  const block = (i, extra) => ({ ...historyCell, index: i, code: `print(${i})`, outputs: [{ output_type: "stream", name: "stdout", text: `old ${i}\n` }], ...extra });
  let cells = [block(0), block(1), block(2)];
  const p = page({
    "GET /ui/api/sessions": () => [200, { sessions: [{ session_id: "default", state: "idle" }] }],
    "GET /ui/api/sessions/default/cells": () => [200, { cells }],
  });
  try {
    await until("the three blocks", () => p.doc.querySelectorAll(".cell").length === 3);
    const es = await until("the event stream", () => p.sources[0]);
    // rerun_code re-runs block 1 in place: the server lists its live cell at index 1.
    cells = [block(0), block(1, { run_id: "r4", status: "running", outputs: [] }), block(2)];
    es.emit({ seq: 1, kind: "run_started", session_id: "default", run_id: "r4", status: "running" });
    es.emit({ seq: 2, kind: "run_output", session_id: "default", run_id: "r4", output: { output_type: "stream", name: "stdout", text: "new 1\n" } });
    await until("the live cell in the block's place", () => {
      const all = [...p.doc.querySelectorAll(".cell")];
      return all.length === 3 && all[1].dataset.runId === "r4" && /new 1/.test(all[1].querySelector(".cell-outputs").textContent);
    });
    assert.doesNotMatch(p.doc.querySelectorAll(".cell")[1].textContent, /old 1/, "the old outputs are not shown under the running block");
    cells = [block(0), block(1, { outputs: [{ output_type: "stream", name: "stdout", text: "new 1\n" }] }), block(2)];
    es.emit({ seq: 3, kind: "history_changed", session_id: "default" });
    es.emit({ seq: 4, kind: "run_finished", session_id: "default", run_id: "r4", status: "ok" });
    await until("the recorded block back in its place", () => {
      const all = [...p.doc.querySelectorAll(".cell")];
      return all.length === 3 && all[1].dataset.index === "1" && all[1].dataset.status === "ok" && /new 1/.test(all[1].textContent);
    });
  } finally {
    p.close();
  }
});

test("below a path prefix, every request the page makes stays under the page's own path", async () => {
  // As behind JupyterHub's proxy with --public-url https://hub.example/services/kernel-mcp.
  const base = "https://hub.example/services/kernel-mcp/ui/";
  const chart = {
    ...historyCell,
    index: 1,
    code: "fig.show()",
    outputs: [{ output_type: "display_data", data: { "application/vnd.plotly.v1+json": { data: [{ x: [1], y: [2] }] }, "text/plain": "Figure" } }],
  };
  let ran;
  const prefixed = {
    "GET /services/kernel-mcp/ui/api/sessions": () => [200, { sessions: [{ session_id: "default", state: "idle" }] }],
    "GET /services/kernel-mcp/ui/api/sessions/default/cells": () => [200, { cells: [historyCell, chart] }],
    "POST /services/kernel-mcp/ui/api/sessions/default/run": (r) => {
      ran = JSON.parse(r.body);
      return [202, { run_id: "r3" }];
    },
    "POST /services/kernel-mcp/ui/api/sessions/default/interrupt": () => [200, { message: "interrupted" }],
    "GET /services/kernel-mcp/ui/charts/plotly.js": () => [200, {}],
  };
  const p = page(prefixed, base + "?token=" + TOKEN + "#s=default");
  try {
    await until("the history cell", () => p.doc.querySelector('.cell[data-index="0"]'));
    const es = await until("the event stream", () => p.sources[0]);
    assert.equal(es.resolved.href, base + "api/events?token=" + TOKEN);
    assert.equal(p.doc.querySelector(".download-ipynb").href, base + "api/sessions/default/notebook.ipynb?token=" + TOKEN);
    assert.equal(p.doc.querySelector(".download-py").href, base + "api/sessions/default/script.py?token=" + TOKEN);
    await until("the chart library fetched", () => p.requests.some((r) => r.resolved.pathname.endsWith("/plotly.js")));
    p.doc.querySelector(".new-cell-code").value = "print(1)";
    p.doc.querySelector(".new-cell-run").click();
    await until("the run posted", () => ran);
    p.doc.querySelector(".session-interrupt").click();
    await until("the interrupt", () => p.requests.some((r) => r.resolved.pathname.endsWith("/interrupt")));
    for (const r of p.requests) {
      assert.ok(r.resolved.href.startsWith(base), r.resolved.href + " is not under " + base);
      assert.ok(prefixed[r.method + " " + r.resolved.pathname], "no route for " + r.method + " " + r.resolved.pathname);
    }
  } finally {
    p.close();
  }
});
