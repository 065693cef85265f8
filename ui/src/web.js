// The live web view: the sessions of one user, each as a notebook of its
// history, kept current by the server's event stream (SSE). The token comes
// from the page's URL and goes back on every request.
//
// Every URL the page asks for is relative ("api/sessions", "charts/x.js"),
// resolved against the page's own URL (…/ui/): the view works wherever it
// is served, at /ui/ or below the path of --public-url behind a proxy that
// keeps it (JupyterHub's /services/NAME/ui/). The CSP's base-uri 'none'
// keeps any <base> from moving them.

import katex from "katex";
import { CellView, isLive, setMath } from "./render.js";
import { setChartLoader } from "./charts.js";
import { setupWidgets } from "./widgets.js";

setMath(katex);

const token = new URLSearchParams(location.search).get("token") || "";
// The page's own controls, found once at load, before any cell is drawn:
// kernel HTML in a cell may carry the same class names.
const chrome = new Map(
  [
    ".cells", ".download-ipynb", ".download-py", ".new-cell", ".new-cell-code", ".new-cell-run", ".session-bar",
    ".session-interrupt", ".session-tabs", ".session-title", ".page-message", ".new-cell-message",
  ].map((sel) => [sel, document.querySelector(sel)]),
);
const $ = (sel) => chrome.get(sel);

// hashSession is the session the URL's #s= names; "" when none or garbled.
function hashSession() {
  try {
    return decodeURIComponent(location.hash.replace(/^#s=/, ""));
  } catch {
    return "";
  }
}

let current = ""; // the session shown
let sessions = [];
let views = new Map(); // key -> CellView
let refetching = null;
let refetchAgain = false;
let fetchSeq = 0; // bumped as each cells fetch is sent
// Runs the event stream said had finished: a late answer to the person's
// POST, or a late output event, does not bring a live cell of one back.
// Run ids are a session's ("r1", "r2"...) and start again with the server,
// so the set is keyed by session and cleared when the stream reconnects.
const ended = new Set();
const endedKey = (runID) => current + "\n" + runID;

function api(path, init = {}) {
  const headers = { Authorization: "Bearer " + token, ...(init.headers || {}) };
  if (init.body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(path, { ...init, headers });
}

async function apiJSON(path, init) {
  const resp = await api(path, init);
  let body = null;
  const text = await resp.text();
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!resp.ok) {
    const msg = (body && (body.error || body.message)) || text.trim() || resp.status + " " + resp.statusText;
    const err = new Error(msg);
    err.status = resp.status;
    throw err;
  }
  return body || {};
}

// The chart libraries are served beside the page (…/ui/charts/, gzipped),
// fetched when a chart appears.
setChartLoader(async (name) => {
  const resp = await api("charts/" + encodeURIComponent(name) + ".js");
  if (!resp.ok) throw new Error("loading the chart library " + name + ": " + resp.status + " " + resp.statusText);
  return resp.text();
});

// Live widgets: the libraries' loader above fetches the widgets bundle too.
const widgets = setupWidgets({
  current: () => current,
  getJSON: (path) => apiJSON(path),
  postJSON: (path, body) => apiJSON(path, { method: "POST", body: JSON.stringify(body) }),
  sessionPath: (id, rest) => sessionPath(id, rest),
  report: (msg) => showMessage(".page-message", msg, true),
});

// sessionPath is a session's API path, relative to the page.
function sessionPath(id, rest) {
  return "api/sessions/" + encodeURIComponent(id) + rest;
}

function withToken(path) {
  return path + "?token=" + encodeURIComponent(token);
}

function showMessage(sel, text, isError) {
  const m = $(sel);
  m.textContent = text || "";
  m.classList.toggle("error", !!isError);
  m.hidden = !text;
}

const actions = {
  onInput: async (cell, text) => {
    await apiJSON(sessionPath(cell.session_id || current, "/input"), {
      method: "POST",
      body: JSON.stringify({ run_id: cell.run_id, text }),
    });
  },
  onInterrupt: async (cell) => {
    await apiJSON(sessionPath(cell.session_id || current, "/interrupt"), { method: "POST", body: "{}" });
  },
};

// cellKey names a cell's view: a live run by its run id (a block re-run
// in place is listed at its history index, but is the run's live cell, fed
// by its events), a recorded block by its index.
function cellKey(c) {
  return c.run_id && (c.index < 0 || isLive(c.status)) ? "r:" + c.run_id : "h:" + c.index;
}

// --- sessions ---------------------------------------------------------------

async function loadSessions() {
  try {
    const r = await apiJSON("api/sessions");
    sessions = r.sessions || [];
    showMessage(".page-message", "");
  } catch (err) {
    showMessage(".page-message", err.message, true);
    return false;
  }
  const fromHash = hashSession();
  if (!sessions.some((s) => s.session_id === current)) {
    current = sessions.some((s) => s.session_id === fromHash) ? fromHash : sessions[0] ? sessions[0].session_id : "";
    await showSession();
  }
  drawTabs();
  return true;
}

function drawTabs() {
  const nav = $(".session-tabs");
  nav.replaceChildren(
    ...sessions.map((s) => {
      const a = document.createElement("a");
      a.className = "session-tab" + (s.session_id === current ? " active" : "");
      a.href = "#s=" + encodeURIComponent(s.session_id);
      a.dataset.sessionId = s.session_id;
      a.textContent = s.session_id;
      const st = document.createElement("span");
      st.className = "session-state";
      st.textContent = (s.run && s.run.status !== "done" ? s.run.status : s.state) || "";
      a.append(" ", st);
      a.title = (s.language || "") + ", " + (s.history_count || 0) + " cells";
      return a;
    }),
  );
  if (!sessions.length) nav.textContent = "No sessions yet.";
}

window.addEventListener("hashchange", () => {
  const id = hashSession();
  if (id && id !== current) {
    current = id;
    drawTabs();
    showSession();
  }
});

async function showSession() {
  views.forEach((v) => v.root.remove());
  views = new Map();
  $(".session-bar").hidden = !current;
  $(".new-cell").hidden = !current;
  if (!current) return;
  $(".session-title").textContent = current;
  $(".download-ipynb").href = withToken(sessionPath(current, "/notebook.ipynb"));
  $(".download-py").href = withToken(sessionPath(current, "/script.py"));
  await refetchCells();
}

// --- cells ------------------------------------------------------------------

// refetchCells redraws the session from the server. A live run's outputs
// that arrived as events are kept: the fetch may be older than they are.
function refetchCells() {
  if (refetching) {
    refetchAgain = true;
    return refetching;
  }
  refetching = (async () => {
    do {
      refetchAgain = false;
      const id = current;
      const seq = ++fetchSeq;
      let r;
      try {
        r = await apiJSON(sessionPath(id, "/cells"));
      } catch (err) {
        showMessage(".page-message", err.message, true);
        break;
      }
      if (id !== current) continue;
      drawCells(r.cells || [], seq);
    } while (refetchAgain);
    refetching = null;
  })();
  return refetching;
}

function drawCells(cells, seq) {
  const box = $(".cells");
  const next = new Map();
  for (const c of cells) {
    const key = cellKey(c);
    let v = views.get(key);
    if (!v) {
      v = new CellView(actions);
      v.set(c);
    } else if (isLive(c.status) && v.outputs.items.length > 0) {
      v.setMeta({ ...c, outputs: undefined });
    } else if (JSON.stringify(c) !== v.lastJSON) {
      v.set(c);
    }
    v.lastJSON = JSON.stringify(c);
    next.set(key, v);
    box.append(v.root); // moves it into order
  }
  const fetchedRuns = new Set(cells.map((c) => c.run_id).filter(Boolean));
  for (const [key, v] of views) {
    if (next.has(key)) continue;
    // A run its events announced after the fetch was sent stays; one
    // older than the fetch that the fetch does not list has ended.
    if (key.startsWith("r:") && isLive(v.cell.status) && v.born > seq && !fetchedRuns.has(v.cell.run_id) && !ended.has(endedKey(v.cell.run_id))) next.set(key, v);
    else v.root.remove();
  }
  views = next;
}

function liveView(runID, status) {
  const key = "r:" + runID;
  let v = views.get(key);
  if (!v && ended.has(endedKey(runID))) return { setMeta() {}, append() {} }; // its recorded cells show it
  if (!v) {
    v = new CellView(actions);
    v.born = fetchSeq + 1; // a fetch sent from now on may not list it yet
    v.set({ session_id: current, run_id: runID, index: -1, code: "", status: status || "running", outputs: [] });
    views.set(key, v);
    $(".cells").append(v.root);
    refetchCells(); // brings its code
  }
  return v;
}

// --- events -----------------------------------------------------------------

function onEvent(e) {
  widgets.onEvent(e);
  if (e.kind === "missed") {
    ended.clear();
    loadSessions();
    refetchCells();
    return;
  }
  if (["session_created", "session_deleted", "kernel_started", "kernel_died", "kernel_restarted", "kernel_stopped", "run_queued", "run_finished"].includes(e.kind)) {
    loadSessions();
  }
  if (e.session_id !== current) return;
  switch (e.kind) {
    case "run_queued":
      liveView(e.run_id, "queued");
      break;
    case "run_started":
      liveView(e.run_id, "running").setMeta({ status: "running" });
      // Its code is known now (a run the assistant queued had none yet).
      refetchCells();
      break;
    case "run_output":
      if (e.output) liveView(e.run_id, "running").append([e.output]);
      break;
    case "input_requested":
      liveView(e.run_id, "running").setMeta({ status: "input_requested", prompt: e.prompt || "", password: !!e.password });
      break;
    case "input_answered":
      liveView(e.run_id, "running").setMeta({ status: "running", prompt: "" });
      break;
    case "run_finished": {
      // The run's recorded cells replace its live one.
      ended.add(endedKey(e.run_id));
      const v = views.get("r:" + e.run_id);
      if (v) {
        v.root.remove();
        views.delete("r:" + e.run_id);
      }
      refetchCells();
      break;
    }
    case "history_changed":
    case "kernel_restarted":
      refetchCells();
      break;
  }
}

function subscribe() {
  const es = new EventSource(withToken("api/events"));
  es.onmessage = (m) => {
    let e;
    try {
      e = JSON.parse(m.data);
    } catch {
      return;
    }
    onEvent(e);
  };
  es.onopen = () => showMessage(".page-message", "");
  es.onerror = () => {
    if (es.readyState === 2) {
      showMessage(".page-message", "the event stream closed; reload the page to follow the sessions again", true);
      return;
    }
    // EventSource reconnects by itself; what passed meanwhile is refetched.
    showMessage(".page-message", "connection lost, reconnecting…", true);
    es.addEventListener("open", () => onEvent({ kind: "missed" }), { once: true });
  };
}

// --- the person's own cell --------------------------------------------------

async function runNewCell() {
  const ta = $(".new-cell-code");
  const code = ta.value;
  if (!code.trim() || !current) return;
  const btn = $(".new-cell-run");
  btn.disabled = true;
  try {
    const r = await apiJSON(sessionPath(current, "/run"), { method: "POST", body: JSON.stringify({ code }) });
    ta.value = "";
    showMessage(".new-cell-message", "");
    if (r.run_id) liveView(r.run_id, "queued");
  } catch (err) {
    showMessage(".new-cell-message", err.message, true);
  } finally {
    btn.disabled = false;
  }
}

$(".new-cell-run").addEventListener("click", runNewCell);
$(".new-cell-code").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    runNewCell();
  }
});
$(".session-interrupt").addEventListener("click", () =>
  actions.onInterrupt({ session_id: current }).catch((err) => showMessage(".page-message", err.message, true)),
);

// Without a working token there is nothing to follow: the page says why.
loadSessions().then((ok) => ok && subscribe());
