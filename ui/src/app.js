// The cell view, an MCP App: the host hands it a run tool's result; it
// shows that at once, then follows the run through the app-only tool
// view_run until the run is done. Its only channel is the host bridge.

import { App } from "./bridge.js";
import { CellView, isLive, setMath, typeset } from "./render.js";
import { setChartLoader, loadLibrary } from "./charts.js";
import { setupCellWidgets } from "./cellwidgets.js";

// view_run waits up to WAIT_S for news (output, a change of status), so the
// view asks again as soon as an answer brings some; an answer without news
// (the wait ran out) is followed by a pause of POLL_MS.
const WAIT_S = 5;
const POLL_MS = 500;

const root = document.getElementById("root");
const app = new App({ name: "kernel-mcp", version: "1" });

// The chart libraries are resources of the server (ui://kernel-mcp/charts/),
// read through the host when a chart appears: the view's first load stays
// small, and nothing comes from outside the server.
// A browser that can gunzip reads the gzipped form (NAME.js.gz, base64 in
// the result): 2.4 times fewer bytes through the host's transport.
setChartLoader(async (name) => {
  const gz = typeof DecompressionStream === "function";
  const uri = "ui://kernel-mcp/charts/" + name + ".js" + (gz ? ".gz" : "");
  const r = await app.readServerResource({ uri });
  const c = ((r && r.contents) || []).find((x) => x.uri === uri) || (r && r.contents && r.contents[0]);
  if (c && gz && typeof c.blob === "string") {
    const bytes = Uint8Array.from(atob(c.blob), (ch) => ch.charCodeAt(0));
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  }
  if (!c || typeof c.text !== "string") throw new Error("the host gave no script for " + uri);
  return c.text;
});

// Math: the view does not bundle KaTeX (its size budget), so math first
// shows as its TeX source (render.js marks it .math[data-tex]); when some
// appears, KaTeX is read like a chart library (ui://kernel-mcp/charts/katex.js)
// and typesets it in place, and every later output as it is drawn. KaTeX
// writes MathML only: its HTML output needs its fonts, which the MCP Apps
// default CSP blocks (default-src 'none' and no font-src, data: included),
// while the browser lays MathML out with its own math fonts.
let math = null;
function mathLater() {
  if (math || !document.querySelector(".math[data-tex]:not(.math-done)")) return;
  math = loadLibrary("katex").then(
    (katex) => {
      setMath(katex, "mathml");
      typeset(document);
    },
    () => {
      /* the math stays as its source */
    },
  );
}

// Widgets: drawn live by ipywidgets' frontend (read like a chart library),
// their state read and changed through the app-only tools view_widgets
// and send_widget (see cellwidgets.js).
let shownSession = "";
const widgets = setupCellWidgets({
  call: async (name, args) => {
    const r = toolError(await app.callServerTool({ name, arguments: args }));
    return (r && r.structuredContent) || {};
  },
  session: () => shownSession,
  report: (msg) => showMessage(msg),
});

let views = [];
let follow = 0; // bumped for each tool result, so an older poll loop stops
let toolArgs = {};

function applyTheme(ctx) {
  if (!ctx) return;
  if (ctx.theme === "dark" || ctx.theme === "light") document.documentElement.dataset.theme = ctx.theme;
  const vars = ctx.styles && ctx.styles.variables;
  if (vars) {
    for (const [k, v] of Object.entries(vars)) if (k.startsWith("--") && v) document.documentElement.style.setProperty(k, v);
  }
}

function textOf(result) {
  return (result.content || [])
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

// firstCell makes a cell from a tool result alone, before view_run answers:
// a RunOutput's streams, value and errors, or the result's text and images
// for the tools that return something else.
export function firstCell(result, args) {
  const sc = result.structuredContent || {};
  // A call that became an MCP task: the host may hand the view the task's
  // handle, whose _meta names the run it follows; the view follows that
  // run as any other.
  const task = (result._meta && result._meta["kernel-mcp/run"]) || null;
  const outputs = [];
  const isRun = typeof sc.stdout === "string" || typeof sc.output === "string";
  if (isRun) {
    const out = sc.stdout || sc.output || "";
    if (out) outputs.push({ output_type: "stream", name: "stdout", text: out });
    if (sc.stderr) outputs.push({ output_type: "stream", name: "stderr", text: sc.stderr });
    if (sc.result) outputs.push({ output_type: "execute_result", data: { "text/plain": sc.result } });
    for (const e of sc.errors || (sc.error ? [sc.error] : [])) {
      outputs.push({ output_type: "error", ename: e.ename, evalue: e.evalue, traceback: e.traceback ? [e.traceback] : [] });
    }
  } else {
    const text = textOf(result);
    if (text) outputs.push({ output_type: "stream", name: result.isError ? "stderr" : "stdout", text });
  }
  for (const b of result.content || []) {
    if (b.type === "image" && b.data) outputs.push({ output_type: "display_data", data: { [b.mimeType || "image/png"]: b.data } });
  }
  return {
    session_id: sc.session_id || (task && task.session_id) || args.session_id || "",
    run_id: sc.run_id || (task && task.run_id) || "",
    index: -1,
    code: typeof args.code === "string" ? args.code : "",
    cell_type: "code",
    language: "python",
    execution_count: sc.execution_count || 0,
    status: sc.status || (task && task.run_id ? "running" : result.isError ? "error" : "ok"),
    task: !!task,
    elapsed_ms: sc.elapsed_ms || 0,
    outputs,
    prompt: sc.prompt || "",
    password: !!sc.password,
    note: sc.note || "",
  };
}

function toolError(result) {
  if (result && result.isError) throw new Error(textOf(result) || "the tool failed");
  return result;
}

const actions = {
  focusInput: true,
  onInput: async (cell, text) => {
    const r = await app.callServerTool({
      name: "send_input",
      // Answer only: the view follows the run itself (view_run), and a
      // waiting send_input would take output the model has not seen yet.
      arguments: { session_id: cell.session_id, run_id: cell.run_id, text, wait: 0 },
    });
    toolError(r);
  },
  onInterrupt: async (cell) => {
    toolError(await app.callServerTool({ name: "interrupt_session", arguments: { session_id: cell.session_id } }));
  },
};

function showCells(cells) {
  while (views.length > cells.length) views.pop().root.remove();
  cells.forEach((c, i) => {
    if (!views[i]) {
      views[i] = new CellView(actions);
      root.append(views[i].root);
    }
    views[i].set(c);
  });
  mathLater();
}

function showMessage(text) {
  let m = document.querySelector(".view-message");
  if (!m) {
    m = document.createElement("div");
    m.className = "view-message";
    document.body.append(m);
  }
  m.textContent = text;
}

async function followRun(sessionID, runID, me) {
  let cursor = 0;
  let status = "";
  let first = true;
  for (;;) {
    let r;
    try {
      r = toolError(
        await app.callServerTool({
          name: "view_run",
          arguments: { session_id: sessionID, run_id: runID, cursor, status, wait: first ? 0 : WAIT_S },
        }),
      );
    } catch (err) {
      if (me === follow) showMessage("live view unavailable: " + err.message);
      return;
    }
    if (me !== follow) return;
    const v = r.structuredContent || {};
    const cells = v.cells || [];
    if (v.done) {
      if (cells.length) showCells(cells);
      else if (views[0]) views[0].setMeta({ status: views[0].cell.status === "running" ? "ok" : views[0].cell.status });
      return;
    }
    const live = cells[0];
    if (live) {
      if (cursor === 0) showCells([live]);
      else {
        views[0].setMeta({ ...live, outputs: undefined });
        views[0].append(live.outputs);
        mathLater();
      }
    }
    cursor = typeof v.cursor === "number" ? v.cursor : cursor;
    if (live && !isLive(live.status)) return;
    const news = first || (live && ((live.outputs && live.outputs.length > 0) || live.status !== status));
    if (live) status = live.status;
    if (news) widgets.follow();
    first = false;
    if (!news) await new Promise((res) => setTimeout(res, POLL_MS));
    if (me !== follow) return;
  }
}

app.ontoolinput = (p) => {
  toolArgs = p.arguments || {};
};

app.ontoolresult = (result) => {
  const me = ++follow;
  const cell = firstCell(result, toolArgs);
  shownSession = cell.session_id || toolArgs.session_id || "default";
  showCells([cell]);
  if (cell.run_id && cell.session_id) followRun(cell.session_id, cell.run_id, me);
};

app.onhostcontextchanged = () => applyTheme(app.getHostContext());

app.onteardown = () => {
  follow++;
  widgets.stop();
  return {};
};

app
  .connect()
  .then(() => applyTheme(app.getHostContext()))
  .catch((err) => showMessage("could not connect to the host: " + err.message));
