// The renderer's notebook rules: stream merging, clear_output, MIME
// priority, live appends, and the DOM hooks the browser tests rely on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadRenderer, deepAll } from "./dom.mjs";

const { render } = await loadRenderer();
const { CellView, OutputList } = render;

const base = { session_id: "s", run_id: "r3", index: 4, code: "print(1)", language: "python", execution_count: 3, status: "ok", elapsed_ms: 1234 };
const out = (text, name = "stdout") => ({ output_type: "stream", name, text });

test("consecutive streams of one name merge; another name or a display breaks the run", () => {
  const l = new OutputList();
  l.add([out("a"), out("b"), out("e", "stderr"), out("c"), { output_type: "display_data", data: { "text/plain": "x" } }, out("d")]);
  assert.deepEqual(
    l.items.map((o) => o.text ?? "display"),
    ["ab", "e", "c", "display", "d"],
  );
});

test("clear_output clears at once; with wait, at the next output", () => {
  const l = new OutputList();
  l.add([out("a"), { output_type: "clear_output", wait: false }, out("b")]);
  assert.deepEqual(l.items.map((o) => o.text), ["b"]);
  l.add([{ output_type: "clear_output", metadata: { wait: true } }]);
  assert.deepEqual(l.items.map((o) => o.text), ["b"], "wait keeps what is shown until something new comes");
  l.add([out("c")]);
  assert.deepEqual(l.items.map((o) => o.text), ["c"]);
});

test("MIME priority: html over svg over png over markdown over latex over json over text", () => {
  const order = [
    ["text/html", "<i>h</i>"],
    ["image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'/>"],
    ["image/png", "iVBORw0KGgo="],
    ["image/jpeg", "/9j/"],
    ["text/markdown", "*m*"],
    ["text/latex", "$x^2$"],
    ["application/json", { a: [1, 2] }],
    ["text/plain", "plain"],
  ];
  for (let i = 0; i < order.length; i++) {
    const data = Object.fromEntries(order.slice(i));
    const el = render.renderOutput({ output_type: "execute_result", data, metadata: {} });
    assert.equal(el.dataset.mime, order[i][0]);
  }
  const json = render.renderOutput({ output_type: "display_data", data: { "application/json": { a: [1, 2] } } });
  assert.equal(json.textContent, JSON.stringify({ a: [1, 2] }, null, 2));
  const latex = render.renderOutput({ output_type: "display_data", data: { "text/latex": "$\\frac{1}{2}$" } });
  assert.equal(latex.querySelector(".mime-latex").textContent, "$\\frac{1}{2}$");
  const png = render.renderOutput({ output_type: "display_data", data: { "image/png": "iVBO\nRw0=" } });
  assert.equal(png.querySelector("img").getAttribute("src"), "data:image/png;base64,iVBORw0=");
  const lines = render.renderOutput({ output_type: "display_data", data: { "text/html": ["<b>a</b>", "<b>b</b>"] } });
  assert.equal(deepAll(lines, "b").length, 2, "nbformat's list of lines is joined");
});

test("a cell carries the stable hooks, its count, status, elapsed time, note and highlighted code", () => {
  const v = new CellView();
  v.set({ ...base, note: "kernel restarted", outputs: [out("1\n")] });
  const r = v.root;
  assert.equal(r.className.split(" ")[0], "cell");
  assert.equal(r.dataset.runId, "r3");
  assert.equal(r.dataset.index, "4");
  assert.equal(r.dataset.status, "ok");
  assert.equal(r.querySelector(".cell-count").textContent, "[3]");
  assert.ok(r.querySelector(".status.status-ok"));
  assert.equal(r.querySelector(".cell-elapsed").textContent, "1.23 s");
  assert.equal(r.querySelector(".cell-note").textContent, "kernel restarted");
  assert.ok(r.querySelector(".cell-code .hljs-built_in"), "print is highlighted");
  assert.equal(r.querySelectorAll(".cell-outputs > .output").length, 1);
  assert.equal(r.querySelector(".cell-input"), null);
  assert.equal(r.querySelector(".cell-interrupt"), null);
  assert.equal(r.querySelector(".cell-controls").hidden, true, "no empty control bar");
});

test("R code is highlighted too", () => {
  const v = new CellView();
  v.set({ ...base, language: "R", code: 'x <- c(1, 2) # two\nprint("a")', outputs: [] });
  assert.ok(v.root.querySelector(".cell-code .hljs-comment"));
  assert.ok(v.root.querySelector(".cell-code .hljs-string"));
});

test("input_requested shows the box and the interrupt button; the answer goes to onInput", async () => {
  const got = [];
  const v = new CellView({ onInput: (c, text) => got.push([c.run_id, text]), onInterrupt: (c) => got.push(["interrupt", c.session_id]) });
  v.set({ ...base, status: "input_requested", prompt: "name? ", password: true, outputs: [] });
  document.body.append(v.root); // a form submits only when it is in a document
  const input = v.root.querySelector("input.cell-input");
  assert.ok(input);
  assert.equal(input.type, "password");
  assert.match(v.root.querySelector(".cell-prompt").textContent, /name\?/);
  input.value = "Ada";
  v.root.querySelector(".cell-input-send").click();
  v.root.querySelector(".cell-interrupt").click();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(got, [["r3", "Ada"], ["interrupt", "s"]]);
  v.setMeta({ status: "ok" });
  assert.equal(v.root.querySelector(".cell-input"), null);
  assert.equal(v.root.querySelector(".cell-interrupt"), null);
  assert.equal(v.root.dataset.status, "ok");
});

test("live appends extend the last stream in place and honour clear_output", () => {
  const v = new CellView({ onInterrupt: () => {} });
  v.set({ ...base, status: "running", outputs: [{ output_type: "display_data", data: { "text/html": "<table><td>1</td></table>" } }, out("tick 1\n")] });
  const table = v.root.querySelector("table");
  assert.ok(v.root.querySelector(".cell-interrupt"));
  v.append([out("tick 2\n")]);
  assert.equal(v.root.querySelector("table"), table, "what came before is not redrawn");
  assert.equal(v.root.querySelectorAll(".output").length, 2);
  assert.equal(v.root.querySelector(".output-stream").textContent, "tick 1\ntick 2\n");
  v.append([{ output_type: "clear_output", wait: true }]);
  assert.equal(v.root.querySelectorAll(".output").length, 2);
  v.append([out("fresh")]);
  assert.equal(v.root.querySelector(".cell-outputs").textContent, "fresh");
});

test("a carriage return overwrites its line, as in a terminal", () => {
  const el = render.renderOutput(out("10%\r50%\r100%\ndone\r\n"));
  assert.equal(el.textContent, "100%\ndone\n");
});

test("markdown and raw text cells show as text, not code", () => {
  const v = new CellView();
  v.set({ ...base, cell_type: "markdown", code: "# Title\n\nsome *text*", outputs: [] });
  assert.equal(v.root.querySelector(".cell-code h1").textContent, "Title");
  assert.equal(v.root.querySelector(".cell-count"), null);
});

test("a live cell followed as an MCP task says so; once done it does not", () => {
  const v = new CellView({ onInterrupt: () => {} });
  v.set({ ...base, status: "running", task: true, outputs: [] });
  const badge = v.root.querySelector(".cell-task");
  assert.ok(badge, "no task badge on a live task's cell");
  assert.equal(badge.textContent, "task");
  v.setMeta({ status: "ok" });
  assert.equal(v.root.querySelector(".cell-task"), null, "the badge stays on a finished cell");
  const w = new CellView({ onInterrupt: () => {} });
  w.set({ ...base, status: "running", outputs: [] });
  assert.equal(w.root.querySelector(".cell-task"), null, "a run that is no task has a badge");
});
