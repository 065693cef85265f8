// The browser half of the UI tests: one headless Chromium, driven by
// playwright-core, runs the cases of one suite (each in a page of its own)
// and prints a JSON verdict as the last line of stdout.
//
//   node run.mjs app|web|hub CONFIG.json
//
// CONFIG carries the browser's path, the URLs the Go test serves and the
// directory screenshots go to. The Go test and this script meet at sync
// points: the script prints {"sync": NAME, ...} on a line of stdout and
// reads one JSON line back on stdin before going on.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [suite, configPath] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configPath, "utf8"));
const T = cfg.timeoutMs || 60000;

const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function sync(name, data = {}) {
  process.stdout.write(JSON.stringify({ sync: name, ...data }) + "\n");
  const { value, done } = await stdinLines.next();
  if (done) throw new Error(`sync ${name}: stdin closed`);
  const reply = JSON.parse(value);
  if (reply.error) throw new Error(`sync ${name}: ${reply.error}`);
  return reply;
}

function log(...a) { process.stderr.write(a.join(" ") + "\n"); }

class Fail extends Error {}
function check(cond, msg) { if (!cond) throw new Fail(msg); }

// poll evaluates fn in target (a page or frame) until it returns a truthy
// value or the deadline passes; it returns that value.
async function poll(target, fn, arg, what, timeout = T) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await target.evaluate(fn, arg);
      if (last) return last;
    } catch (e) {
      last = String(e);
    }
    if (Date.now() > deadline) throw new Fail(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Init script: in every frame, record when each "lat N MS" line first
// appears in the DOM, and keep whatever the page set on window.__pwned.
const latencyProbe = () => {
  window.__seen = {};
  const scan = () => {
    const text = document.body ? document.body.innerText || document.body.textContent : "";
    const re = /lat (\d+) (\d+(?:\.\d+)?)/g;
    let m;
    while ((m = re.exec(text))) {
      if (!(m[1] in window.__seen)) window.__seen[m[1]] = { kernel: Number(m[2]), dom: Date.now() };
    }
  };
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true });
};

// DEEP installs, in a frame, the helpers that read through the open shadow
// roots HTML outputs are drawn in: __deepAll(root, sel) is
// querySelectorAll through them, __deepText(root) the text of root and of
// the shadow roots under it.
const DEEP = `window.__deepAll = (root, sel) => {
  const f = [...root.querySelectorAll(sel)];
  for (const e of [root, ...root.querySelectorAll("*")]) if (e.shadowRoot) f.push(...window.__deepAll(e.shadowRoot, sel));
  return f;
};
window.__deepText = (root) => [root.innerText || "", ...window.__deepAll(root, "*").concat(root.shadowRoot ? [root] : []).filter((e) => e.shadowRoot).map((e) => e.shadowRoot.textContent)].join("\\n");
true`;
async function installDeep(target) {
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      if (await target.evaluate(DEEP)) return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const results = [];
let browser;

async function runCase(name, fn) {
  if (cfg.only && !cfg.only.split(",").includes(name)) return;
  const t0 = Date.now();
  const context = await browser.newContext({ viewport: { width: 820, height: 700 } });
  const page = await context.newPage();
  const consoleLines = [];
  // Every request of the case's pages and frames, for the offline checks.
  page.requests = [];
  context.on("request", (req) => page.requests.push(req.url()));
  page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => consoleLines.push(`pageerror: ${e}`));
  page.on("response", (resp) => { if (resp.status() >= 400) consoleLines.push(`http: ${resp.status()} ${resp.url().replace(/token=[^&]+/, "token=…")}`); });
  const r = { name, ok: false };
  try {
    Object.assign(r, (await fn(page)) || {});
    r.ok = true;
  } catch (e) {
    r.error = e instanceof Fail ? e.message : String(e.stack || e);
    r.console = consoleLines.filter((l) => !l.startsWith("debug:")).slice(-30);
    r.calls = await page.evaluate(() => (window.calls || []).filter((c) => c.name !== "view_run" || c.isError || c.error).slice(-20)).catch(() => undefined);
  }
  try {
    r.screenshot = join(cfg.artifacts, `${suite}-${name}.png`);
    await page.screenshot({ path: r.screenshot, fullPage: true });
  } catch (e) {
    r.screenshot = `(none: ${e})`;
  }
  r.ms = Date.now() - t0;
  await context.close();
  results.push(r);
  log(`case ${name}: ${r.ok ? "ok" : "FAIL " + r.error} (${r.ms} ms)`);
}


// ---- rich outputs, both suites ----

const MATH_CODE = [
  "from IPython.display import Latex, Markdown, display",
  "display(Latex(r'$\\alpha^2 + \\sum_i x_i$'))",
  "display(Markdown(r'Inline $\\alpha^2 + \\sum_i x_i$ and display $$\\int_0^1 x\\,dx$$'))",
  "print('math done')",
].join("\n");

// STYLED_CODE shows a pandas Styler (its colours come from a <style> of
// #T_… rules), scikit-learn's estimator diagram (its own style sheet shows
// the diagram and hides the text fallback), then HTML that tries to restyle the page's buttons and
// cells (by selectors, by :host, and by registering the page's own CSS
// variables as non-inheriting with @property, which is not scoped to a
// shadow root) and lays a position: fixed overlay over the whole window.
const STYLED_CODE = [
  "import pandas as pd",
  "from IPython.display import HTML, display",
  "df = pd.DataFrame({'a': [1, 5, 9], 'b': [9, 5, 1]})",
  "display(df.style.background_gradient(cmap='Reds'))",
  "from sklearn.linear_model import LogisticRegression",
  "display(LogisticRegression())",
  "display(HTML('<style>button, .cell, .cell-head, .session-bar { display: none !important; background: rgb(255, 0, 0) !important; } * { color: rgb(255, 0, 0) !important; } :host { position: fixed !important; inset: 0 !important; contain: none !important; } @property --bg-code { syntax: \"<color>\"; inherits: false; initial-value: rgb(255, 0, 0); } @property --fg { syntax: \"<color>\"; inherits: false; initial-value: rgb(255, 0, 0); } @property --bg { syntax: \"<color>\"; inherits: false; initial-value: rgb(255, 0, 0); }</style>'",
  "  '<div id=\"fake-overlay\" style=\"position: fixed; left: 0; top: 0; width: 100vw; height: 100vh; z-index: 2147483647; background: rgba(255, 0, 0, 0.9)\">fake controls</div><p id=\"styled-probe\">probe</p>'))",
  "print('styled done')",
].join("\n");

const UPDATE_CODE = [
  "import time",
  "from IPython.display import display",
  "h = display('v0', display_id=True)",
  "for i in range(1, 21):",
  "    time.sleep(0.2)",
  "    h.update(f'v{i}')",
].join("\n");

// BOKEH_CODE shows a Bokeh figure the notebook way (output_notebook(),
// show()): BokehJS is in neither view, so each must say what the plot is
// and where to see it, and show no empty box.
const BOKEH_CODE = [
  "from bokeh.plotting import figure, show",
  "from bokeh.io import output_notebook",
  "output_notebook()",
  "p = figure(title='bokeh rise', width=300, height=200)",
  "p.line([1, 2, 3], [1, 3, 2])",
  "show(p)",
  "print('bokeh done')",
].join("\n");

// bokehState reads the Bokeh cell: the placeholder's text, and the outputs
// shown that have nothing in them (an empty box).
const bokehState = (marker) => {
  const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes(marker));
  const outs = c?.querySelector(".cell-outputs");
  if (!outs || !outs.innerText.includes("bokeh done") || !(Number(c.dataset.index) >= 0)) return null;
  const ph = outs.querySelector(".bokeh-placeholder");
  if (!ph) return null;
  const empty = [...outs.querySelectorAll(".output")].filter((o) => {
    if (o.hidden || getComputedStyle(o).display === "none") return false;
    const text = window.__deepText(o).trim();
    return !text && !window.__deepAll(o, "img, svg, canvas, math").length;
  }).map((o) => o.outerHTML.slice(0, 200));
  const r = ph.getBoundingClientRect();
  return { placeholder: ph.innerText, visible: r.width > 100 && r.height > 20, empty, outputs: outs.innerText.slice(0, 600) };
};

const checkBokeh = (st) => {
  check(/^Bokeh plot \u201cbokeh rise\u201d \(line\)/.test(st.placeholder), `the placeholder does not name the plot: ${JSON.stringify(st)}`);
  check(/not drawn here/.test(st.placeholder) && /bokeh\.io\.save/.test(st.placeholder) && /export_png/.test(st.placeholder), `the placeholder does not say where to see it: ${JSON.stringify(st)}`);
  check(st.visible, `the placeholder is not visible: ${JSON.stringify(st)}`);
  check(st.empty.length === 0, `empty output boxes: ${JSON.stringify(st.empty)}`);
};

// mathState reads the math in the cell whose code has marker; with
// minKatex, it waits (null) until that many .katex are there.
const mathState = (arg) => {
  const [marker, minKatex] = Array.isArray(arg) ? arg : [arg, 0];
  const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes(marker));
  const outs = c?.querySelector(".cell-outputs");
  if (!outs || !outs.innerText.includes("math done")) return null;
  if (outs.querySelectorAll(".katex").length < minKatex) return null;
  const k = outs.querySelector(".katex");
  return {
    status: c.dataset.status,
    index: Number(c.dataset.index),
    katex: outs.querySelectorAll(".katex").length,
    display: outs.querySelectorAll(".katex-display").length,
    mathml: outs.querySelectorAll("math").length,
    displayMath: outs.querySelectorAll('math[display="block"]').length,
    sourceLeft: outs.querySelectorAll(".math-source, .math[data-tex]:not(.math-done)").length,
    dollars: (outs.innerText.match(/\$/g) || []).length,
    latexSource: outs.querySelector(".mime-latex")?.textContent || "",
    font: k ? getComputedStyle(k).fontFamily : "",
    text: outs.innerText.slice(0, 300),
  };
};

// styledState checks a Styler cell's colour against its own rule, and
// where the hostile overlay is drawn. controls are selectors of the page's
// own controls, whose computed style must be what it was (before).
const styledState = ([marker, controls]) => {
  const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes(marker));
  const outs = c?.querySelector(".cell-outputs");
  // The recorded cell (the web view swaps the live one for it at the end).
  if (!outs || !outs.innerText.includes("styled done") || c.dataset.status !== "ok" || !(Number(c.dataset.index) >= 0)) return null;
  const probe = window.__deepAll(outs, "#styled-probe")[0];
  const overlay = window.__deepAll(outs, "#fake-overlay")[0];
  const td = window.__deepAll(outs, "td[id]").find((e) => /row2_col0$/.test(e.id));
  if (!probe || !overlay || !td) return null;
  const skFallback = window.__deepAll(outs, ".sk-text-repr-fallback")[0];
  const skDiagram = window.__deepAll(outs, ".sk-container")[0];
  if (!skFallback || !skDiagram) return null;
  const css = window.__deepAll(outs, "style").map((s) => s.textContent).join("\n");
  const m = new RegExp("#" + td.id + "\\s*\\{[^}]*background-color:\\s*([^;]+);").exec(css);
  const norm = (col) => {
    const d = document.createElement("div");
    d.style.backgroundColor = col;
    document.body.append(d);
    const v = getComputedStyle(d).backgroundColor;
    d.remove();
    return v;
  };
  const look = (e) => {
    const s = getComputedStyle(e);
    return { display: s.display, visibility: s.visibility, color: s.color, background: s.backgroundColor };
  };
  const hit = (e) => {
    e.scrollIntoView({ block: "center" });
    const r = e.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !!at && (at === e || e.contains(at));
  };
  const host = overlay.getRootNode().host;
  const box = host.closest(".output").getBoundingClientRect();
  const o = overlay.getBoundingClientRect();
  return {
    rule: m ? m[1].trim() : null,
    want: m ? norm(m[1].trim()) : null,
    got: getComputedStyle(td).backgroundColor,
    probeColor: getComputedStyle(probe).color,
    unscoped: css.match(/@(property|import|font-face)\b/g),
    sklearn: { fallback: getComputedStyle(skFallback).display, diagram: getComputedStyle(skDiagram).display, height: skDiagram.getBoundingClientRect().height },
    overlayInBox: o.top >= box.top - 1 && o.left >= box.left - 1,
    controls: Object.fromEntries(controls.map((sel) => {
      const e = document.querySelector(sel);
      return [sel, e ? { ...look(e), hit: hit(e) } : null];
    })),
    codeHit: hit(c.querySelector(".cell-head")),
  };
};

// uncontained is the control: with the hostile output's box stripped of
// its containment, the overlay must cover the controls (else the test
// proves nothing). It puts the containment back.
const uncontained = ([marker, controls]) => {
  const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes(marker));
  const box = window.__deepAll(c, "#fake-overlay")[0].getRootNode().host.closest(".output");
  const covered = (sel) => {
    const e = document.querySelector(sel);
    e.scrollIntoView({ block: "center" });
    const r = e.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !at || !(at === e || e.contains(at));
  };
  box.style.setProperty("contain", "none", "important");
  box.style.setProperty("transform", "none", "important");
  const out = Object.fromEntries(controls.map((sel) => [sel, covered(sel)]));
  box.style.removeProperty("contain");
  box.style.removeProperty("transform");
  return out;
};

// checkStyled judges a styledState against the controls' looks before.
function checkStyled(st, before) {
  check(st.rule, `no background-color rule for the Styler's cell in its <style>`);
  check(st.got === st.want && st.got !== "rgba(0, 0, 0, 0)", `the Styler's cell is ${st.got}, its rule says ${st.rule} (${st.want})`);
  check(st.sklearn.fallback === "none" && st.sklearn.diagram !== "none" && st.sklearn.height > 10, `scikit-learn's diagram is not drawn by its own style sheet: ${JSON.stringify(st.sklearn)}`);
  check(!st.unscoped, `at-rules that are not scoped to the output were kept: ${st.unscoped}`);
  check(st.probeColor === "rgb(255, 0, 0)", `the output's own style did not apply inside it: probe colour ${st.probeColor}`);
  check(st.overlayInBox, "the position: fixed overlay is not placed in its output's box");
  check(st.codeHit, "the overlay covers the cell's head: it escaped its output box");
  for (const [sel, was] of Object.entries(before)) {
    const now = st.controls[sel];
    check(now, `the page's ${sel} is gone`);
    check(now.hit, `the page's ${sel} is covered by the output's overlay`);
    for (const k of ["display", "visibility", "color", "background"]) check(now[k] === was[k], `the page's ${sel} ${k} changed from ${was[k]} to ${now[k]}`);
  }
}

// updateSamples follows the cell whose code has marker: how many outputs
// it shows and their text, sampled until its status is ok.
async function updateSamples(target, marker) {
  const samples = [];
  const deadline = Date.now() + T;
  for (;;) {
    const s = await target.evaluate((mk) => {
      const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes(mk));
      if (!c) return null;
      return { status: c.dataset.status, outs: [...c.querySelectorAll(".cell-outputs .output")].map((o) => o.innerText.trim()) };
    }, marker);
    if (s) samples.push(s);
    if (s && s.status === "ok" && s.outs.length && s.outs[0].includes("v20")) break;
    check(Date.now() < deadline, `the updated display never reached v20 (last ${JSON.stringify(samples.slice(-1))})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const most = Math.max(...samples.map((s) => s.outs.length));
  const values = [...new Set(samples.flatMap((s) => s.outs))];
  const last = samples[samples.length - 1];
  check(most <= 1, `a display updated through its handle showed as ${most} outputs at once: ${JSON.stringify(samples.find((s) => s.outs.length > 1))}`);
  check(last.outs.length === 1 && /'v20'/.test(last.outs[0]), `at the end: ${JSON.stringify(last.outs)}, want one output 'v20'`);
  const live = values.filter((v) => /'v(1?\d)'/.test(v) && !/'v0'/.test(v));
  check(live.length >= 1, `no update showed while the run went on (values seen: ${JSON.stringify(values)})`);
  return { samples: samples.length, liveValues: live.length };
}

// ---- charts, in either view ----

// chartProbe (an init script, in every frame) records when each chart
// element appears and when it is drawn, for the time from an output to
// drawn marks.
const chartProbe = () => {
  window.__charts = [];
  const seen = new Map();
  const scan = () => {
    for (const el of document.querySelectorAll(".mime-chart")) {
      let r = seen.get(el);
      if (!r) {
        r = { kind: el.className, shown: performance.now() };
        seen.set(el, r);
        window.__charts.push(r);
      }
      if (el.dataset.chart !== "loading" && r.done === undefined) {
        r.done = performance.now();
        r.state = el.dataset.chart;
      }
    }
  };
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-chart"] });
};

// offline checks that every request the case made stayed on this machine.
function offline(page) {
  const away = page.requests.filter((u) => {
    if (/^(data|blob|about):/.test(u)) return false;
    try {
      return !["127.0.0.1", "localhost", "[::1]"].includes(new URL(u).hostname);
    } catch {
      return true;
    }
  });
  check(away.length === 0, `requests that left loopback: ${JSON.stringify(away.slice(0, 10))}`);
  return page.requests.length;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.floor(s.length / 2)]) : null;
};

// checkCharts asserts on the charts of cfg.chartCode in target (the view's
// frame, or the web view's page): a Plotly scatter of three traces, 12
// points, with a hover label on a hovered point; an Altair layered chart
// drawn by vega-embed. shot, when given, takes the screenshot once both
// are drawn, before the hover and the legend click change them.
async function checkCharts(page, target, shot) {
  const states = await poll(target, () => {
    const cs = [...document.querySelectorAll(".mime-chart")];
    return cs.length >= 2 && cs.every((c) => c.dataset.chart !== "loading") ? cs.map((c) => c.className + ":" + c.dataset.chart + ":" + c.innerText.slice(0, 200)) : null;
  }, null, "two charts drawn (or failed)");
  check(states.every((s) => s.includes(":drawn")), `charts: ${JSON.stringify(states)}`);
  const plotly = await poll(target, () => {
    const p = document.querySelector(".chart-plotly");
    const pts = p && p.querySelectorAll(".scatterlayer .point").length;
    return pts ? { points: pts, traces: p.querySelectorAll(".scatterlayer .trace").length, legend: p.querySelectorAll(".legend .traces").length } : null;
  }, null, "Plotly's points");
  check(plotly.points === 12 && plotly.traces === 3, `Plotly drew ${JSON.stringify(plotly)}, want 12 points in 3 traces`);
  if (shot) await shot();
  // Hover a point: plotly.js shows its hover label.
  const point = target.locator(".chart-plotly .scatterlayer .point").nth(5);
  await point.scrollIntoViewIfNeeded();
  const box = await point.boundingBox();
  check(box, "the hovered point has no box");
  await page.mouse.move(box.x + box.width / 2 - 3, box.y + box.height / 2 - 3);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 3 });
  const hover = await poll(target, () => {
    const h = document.querySelector(".chart-plotly .hoverlayer .hovertext");
    return h ? h.textContent : null;
  }, null, "Plotly's hover label", 10000);
  // Toggle a legend entry: its trace is hidden.
  await target.locator(".chart-plotly .legend .traces").first().click({ force: true });
  const afterToggle = await poll(target, () => {
    const n = document.querySelectorAll(".chart-plotly .scatterlayer .point").length;
    return n === 8 ? n : null;
  }, null, "a legend click to hide a trace (8 points left)", 10000);
  const vega = await poll(target, () => {
    const v = document.querySelector(".chart-vega-lite");
    const svg = v && v.querySelector("svg.marks");
    if (!svg) return null;
    return { symbols: svg.querySelectorAll(".mark-symbol path").length, lines: svg.querySelectorAll(".mark-line path").length, title: svg.querySelector(".role-title-text")?.textContent || "" };
  }, null, "vega-embed's marks");
  check(vega.symbols === 6 && vega.lines === 1, `vega-embed drew ${JSON.stringify(vega)}, want 6 points and a line`);
  const timing = await target.evaluate(() => window.__charts.map((c) => ({ kind: c.kind, ms: Math.round(c.done - c.shown), state: c.state })));
  const libraries = await target.evaluate(() => performance.getEntriesByType("measure").filter((m) => m.name.startsWith("kernel-mcp chart library")).map((m) => m.name.replace("kernel-mcp chart library ", "") + " " + Math.round(m.duration) + " ms"));
  return { plotly, hover, afterToggle, vega, timing, libraries };
}

// checkTqdm follows the live tqdm bar of the cell whose code loops over
// tqdm(range(50)) in target (a view's frame or the web view's page): its
// width must rise while the run goes on and end at 100%.
async function checkTqdm(target) {
  const seen = [];
  const deadline = Date.now() + 60000;
  for (;;) {
    const st = await target.evaluate(() => {
      const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes("tqdm(range(50)"));
      const bars = c ? [...c.querySelectorAll('[data-widget="live"] .widget-hprogress .progress-bar')] : [];
      return { width: bars.length ? bars[bars.length - 1].style.width : null, status: c?.dataset.status, done: (c?.innerText || "").includes("tqdm done") };
    });
    if (st.width && seen[seen.length - 1]?.width !== st.width) seen.push({ width: st.width, status: st.status });
    if ((st.done && st.width === "100%") || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const during = seen.filter((x) => x.status !== "ok" && parseFloat(x.width) > 0 && parseFloat(x.width) < 100);
  check(during.length >= 3, `the bar's width while the run went on: ${JSON.stringify(seen)}`);
  check(seen.length && seen[seen.length - 1].width === "100%", `the bar ends at ${JSON.stringify(seen[seen.length - 1])}, want 100%`);
  return { widths: seen.map((x) => x.width).join(" ") };
}

// sliderValue is the readout of the slider described desc in target.
const sliderValue = (target, desc) => target.evaluate((d) => {
  const s = [...document.querySelectorAll(".widget-slider")].find((e) => e.querySelector(".widget-label")?.textContent === d);
  return s ? s.querySelector(".widget-readout")?.textContent : null;
}, desc);

// checkChartGL asserts that the WebGL scatter of cfg.chartGLCode is drawn
// on plotly's WebGL canvas, not replaced by its "WebGL is not supported".
async function checkChartGL(target) {
  const st = await poll(target, () => {
    const c = document.querySelector(".chart-plotly");
    if (!c || c.dataset.chart === "loading") return null;
    return { state: c.dataset.chart, text: c.innerText, canvases: c.querySelectorAll("canvas.gl-canvas").length, type: c.querySelector(".js-plotly-plot")?._fullData?.[0]?.type };
  }, null, "the WebGL chart drawn (or failed)");
  check(st.state === "drawn", `the WebGL chart: ${JSON.stringify(st)}`);
  check(st.type === "scattergl", `the trace drawn is ${st.type}, want scattergl`);
  check(!/WebGL is not supported/.test(st.text), `plotly.js could not draw WebGL under the view's CSP: ${st.text.slice(0, 200)}`);
  check(st.canvases >= 1, `no WebGL canvas: ${JSON.stringify(st)}`);
  return { canvases: st.canvases };
}

// checkChartSanitize asserts that the hostile charts of
// cfg.chartSanitizeCode ran nothing: clicked links, hovered points, and
// window.__pwned still unset in the view and the page.
async function checkChartSanitize(page, target) {
  await poll(target, () => {
    const cs = [...document.querySelectorAll(".mime-chart")];
    return cs.length >= 3 && cs.every((c) => c.dataset.chart !== "loading") ? true : null;
  }, null, "three hostile charts settled");
  const states = await target.evaluate(() => [...document.querySelectorAll(".mime-chart")].map((c) => c.className + ":" + c.dataset.chart + ":" + c.innerText.slice(0, 120)));
  check(states[0].includes(":drawn") && states[1].includes(":drawn"), `hostile charts: ${JSON.stringify(states)}`);
  // Click every link in the charts, and every Vega point (their href is javascript:).
  const links = target.locator(".mime-chart a");
  const nLinks = await links.count();
  for (let i = 0; i < nLinks; i++) await links.nth(i).click({ force: true, timeout: 5000 }).catch(() => {});
  const marks = target.locator(".chart-vega-lite .mark-symbol path");
  const nMarks = await marks.count();
  for (let i = 0; i < nMarks; i++) await marks.nth(i).click({ force: true, timeout: 5000 }).catch(() => {});
  await new Promise((r) => setTimeout(r, 500));
  await poll(target, () => [...document.images].every((i) => i.complete), null, "every image settled");
  const dom = await target.evaluate(() => ({
    jsLinks: [...document.querySelectorAll(".mime-chart *")].filter((e) => /^\s*javascript:/i.test(e.getAttribute("href") || e.getAttribute("xlink:href") || e.getAttribute("src") || "")).length,
    imgs: document.querySelectorAll(".mime-chart img").length,
    handlers: [...document.querySelectorAll(".mime-chart *")].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
    legend: document.querySelector(".chart-plotly .legend")?.textContent || "",
    pwned: window.__pwned,
  }));
  check(dom.pwned === undefined, `window.__pwned is ${dom.pwned}`);
  check(await page.evaluate(() => window.__pwned) === undefined, "window.__pwned set in the page");
  check(dom.jsLinks === 0 && dom.handlers === 0 && dom.imgs === 0, `unsafe markup in the charts: ${JSON.stringify(dom)}`);
  check(nMarks === 2, `the Vega-Lite chart with javascript: hrefs drew ${nMarks} points, want 2`);
  check(/192\.0\.2\.1\/leak\.json is not loaded/.test(states[2]), `the chart with data at a URL says nothing of it: ${states[2]}`);
  return { links: nLinks, marks: nMarks, dom, states };
}

// ---- the MCP App suite ----

async function openHost(page, url = cfg.hostURL) {
  await page.goto(url);
  await page.evaluate(() => window.hostReady);
}

async function waitFrame(page, name) {
  const deadline = Date.now() + T;
  for (;;) {
    const f = page.frame({ name });
    if (f) return f;
    check(Date.now() < deadline, `no frame ${name}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// runTool calls a tool through the host page and returns the view's frame
// and the tool result.
async function runTool(page, name, args) {
  const { frame: frameName, result } = await page.evaluate(([n, a]) => window.runTool(n, a), [name, args]);
  const frame = await waitFrame(page, frameName);
  await installDeep(frame);
  return { frame, result, frameName };
}

const cellDone = (frame, status, what) => poll(frame, (st) => {
  const c = document.querySelector(".cell");
  return c && c.dataset.status === st ? c.innerText : null;
}, status, what || `the cell's status ${status}`);

const frameText = (frame) => frame.evaluate(() => document.body.innerText);

// tableCells lists the text of the table cells in the outputs (HTML
// outputs are in shadow roots).
const tableCells = () => {
  const tds = [...document.querySelectorAll(".cell-outputs")].flatMap((o) => window.__deepAll(o, "table td, table th")).map((e) => e.textContent.trim());
  return tds.length ? tds : null;
};

async function appSuite() {
  await runCase("dataframe", async (page) => {
    await openHost(page);
    const code = "import pandas as pd\npd.DataFrame({'city': ['Lyon', 'Oslo'], 'n': [11, 22]})";
    const { frame, frameName } = await runTool(page, "run_code", { session_id: "app", code });
    await cellDone(frame, "ok");
    const cells = await poll(frame, tableCells, null, "a table in the outputs");
    for (const want of ["city", "n", "Lyon", "Oslo", "11", "22"]) check(cells.includes(want), `table cell ${want} missing: ${JSON.stringify(cells)}`);
    const codeText = await frame.evaluate(() => document.querySelector(".cell-code")?.textContent || "");
    check(codeText.includes("pd.DataFrame"), `the code is not shown: ${JSON.stringify(codeText)}`);
    // The view sizes itself: the host set the iframe to the height it reported.
    const height = await poll(page, () => {
      const h = document.querySelector("iframe").getBoundingClientRect().height;
      return h > 100 ? h : null;
    }, null, "the view to report its height (iframe taller than 100 px)", 10000);
    await page.locator("iframe").first().screenshot({ path: join(cfg.artifacts, "cell-view.png") });
    // It follows the host's theme.
    const themes = [await frame.evaluate(() => document.documentElement.dataset.theme)];
    await page.evaluate((f) => window.setTheme(f, "dark"), frameName);
    themes.push(await poll(frame, () => document.documentElement.dataset.theme === "dark" && getComputedStyle(document.body).backgroundColor, null, "the dark theme", 10000));
    check(themes[0] === "light", `the view's theme under a light host: ${themes[0]}`);
    return { cells, height, themes };
  });

  await runCase("plot", async (page) => {
    await openHost(page);
    const code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('rise')\nplt.show()";
    const { frame } = await runTool(page, "run_code", { session_id: "app", code });
    await cellDone(frame, "ok");
    const img = await poll(frame, () => {
      const i = document.querySelector(".cell-outputs img");
      return i && i.complete && i.naturalWidth > 0 ? { w: i.naturalWidth, h: i.naturalHeight } : null;
    }, null, "a loaded img with naturalWidth > 0");
    return { img };
  });

  await runCase("error", async (page) => {
    await openHost(page);
    const code = "x = 1\ny = x / 0\nprint('never')";
    const { frame } = await runTool(page, "run_code", { session_id: "app", code });
    const text = await cellDone(frame, "error");
    const outs = await frame.evaluate(() => document.querySelector(".cell-outputs").innerText);
    check(outs.includes("ZeroDivisionError"), `no ZeroDivisionError in the outputs: ${JSON.stringify(outs)}`);
    check(/y = x \/ 0/.test(outs), `the failing line is not shown: ${JSON.stringify(outs)}`);
    const streams = await frame.evaluate(() => [...document.querySelectorAll(".cell-outputs .output")].map((o) => o.innerText.trim()));
    check(!streams.includes("never"), `output after the error: ${JSON.stringify(streams)}`);
    check(!/\x1b\[/.test(outs), "raw ANSI escapes in the traceback");
    return { status: "error", chars: text.length };
  });

  await runCase("live-ticks", async (page) => {
    await openHost(page);
    const code = "import time\nfor i in range(10):\n    print(f'tick {i}', flush=True)\n    time.sleep(1)\nprint('loop done')";
    const { frame, result } = await runTool(page, "run_code", { session_id: "ticks", code });
    const handed = result.structuredContent?.status;
    check(handed === "running" || handed === "queued", `run_code under --max-wait 2 returned status ${handed}, want running (handed off)`);
    const callsBefore = await page.evaluate(() => window.calls.length);
    // Ticks must show while the run still goes on and only the view polls.
    const seenLive = new Set();
    const deadline = Date.now() + T;
    for (;;) {
      const s = await frame.evaluate(() => {
        const c = document.querySelector(".cell");
        return { status: c?.dataset.status, text: c?.querySelector(".cell-outputs")?.innerText || "" };
      });
      if (s.status === "ok") break;
      for (const m of s.text.matchAll(/tick (\d)/g)) seenLive.add(m[1]);
      check(Date.now() < deadline, `no final status ok (last status ${s.status})`);
      await new Promise((r) => setTimeout(r, 150));
    }
    const outs = await frame.evaluate(() => document.querySelector(".cell-outputs").innerText);
    for (let i = 0; i < 10; i++) check(outs.includes(`tick ${i}`), `tick ${i} missing at the end`);
    check(outs.includes("loop done"), "the final line is missing");
    const later = await page.evaluate((n) => window.calls.slice(n), callsBefore);
    const others = later.filter((c) => !(c.by === "view" && c.name === "view_run"));
    check(others.length === 0, `calls other than the view's view_run while the run went on: ${JSON.stringify(others)}`);
    const polls = later.length;
    check(polls > 0, "the view never called view_run");
    // Ticks that appeared live, beyond those in the handed-off result.
    const inResult = new Set([...JSON.stringify(result).matchAll(/tick (\d)/g)].map((m) => m[1]));
    const live = [...seenLive].filter((t) => !inResult.has(t));
    check(live.length >= 2, `only ${live.length} ticks appeared while the run went on (seen ${[...seenLive]}, in the result ${[...inResult]})`);
    return { liveTicks: live.length, viewRunCalls: polls };
  });

  await runCase("input", async (page) => {
    await openHost(page);
    const code = "name = input('your name? ')\nprint('hello', name)";
    const { frame } = await runTool(page, "run_code", { session_id: "ask", code });
    await poll(frame, () => document.querySelector(".cell")?.dataset.status === "input_requested" && document.querySelector("input.cell-input"), null, "the input box");
    const prompt = await frameText(frame);
    check(prompt.includes("your name?"), `the prompt is not shown: ${JSON.stringify(prompt)}`);
    await frame.locator("input.cell-input").fill("Ada");
    await frame.locator(".cell-input-send").click();
    await poll(frame, () => document.querySelector(".cell")?.dataset.status !== "input_requested", null, "the view to send the answer (status leaving input_requested)", 20000);
    await cellDone(frame, "ok");
    const outs = await frame.evaluate(() => document.querySelector(".cell-outputs").innerText);
    check(outs.includes("hello Ada"), `the answer did not reach the kernel: ${JSON.stringify(outs)}`);
    const sent = await page.evaluate(() => window.calls.filter((c) => c.name === "send_input").map((c) => c.args));
    check(sent.length === 1 && sent[0].text === "Ada", `send_input calls: ${JSON.stringify(sent)}`);
  });

  await runCase("sanitize", async (page) => {
    await openHost(page);
    const code = [
      "from IPython.display import HTML, SVG, display",
      "display(HTML('<p id=\"safe\">kept <b>bold</b></p><script>window.__pwned=1</script>'))",
      "display(HTML('<img id=\"bad-img\" src=\"x\" onerror=\"window.__pwned=1\">'))",
      "display(HTML('<a id=\"bad-link\" href=\"javascript:void(window.__pwned=1)\">click me</a>'))",
      "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" height=\"20\"><script>window.__pwned=1</script><rect width=\"20\" height=\"20\" fill=\"red\" onload=\"window.__pwned=1\"/></svg>'))",
      "print('sanitize done')",
    ].join("\n");
    const { frame } = await runTool(page, "run_code", { session_id: "app", code });
    await cellDone(frame, "ok");
    // The tool result alone shows the streams; the recorded cell, which
    // view_run brings right after, has the displays.
    await poll(frame, () => Number(document.querySelector(".cell")?.dataset.index) >= 0 && document.querySelector(".cell-outputs")?.innerText.includes("sanitize done"), null, "the recorded cell with its last output");
    const safe = await frame.evaluate(() => window.__deepText(document.querySelector(".cell-outputs")));
    check(safe.includes("kept bold"), `the harmless HTML was not rendered: ${JSON.stringify(safe)}`);
    check(safe.includes("click me"), `the link's text was not rendered: ${JSON.stringify(safe)}`);
    // Click every link (a javascript: URL would run now), and wait until
    // every image has finished loading or failing (an onerror would have run).
    const links = frame.locator(".cell-outputs a"); // (locators pierce shadow roots)
    for (let i = 0; i < (await links.count()); i++) await links.nth(i).click({ timeout: 5000 }).catch(() => {});
    await poll(frame, () => [...document.images].every((i) => i.complete), null, "every image settled");
    const dom = await frame.evaluate(() => {
      const outs = document.querySelector(".cell-outputs");
      return {
        scripts: window.__deepAll(outs, "script").length,
        handlers: window.__deepAll(outs, "*").filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
        jsLinks: window.__deepAll(outs, "[href], [src]").filter((e) => /^\s*javascript:/i.test(e.getAttribute("href") || e.getAttribute("src") || "")).length,
        pwned: window.__pwned,
      };
    });
    const hostPwned = await page.evaluate(() => window.__pwned);
    check(dom.pwned === undefined, `window.__pwned in the view frame is ${dom.pwned}`);
    check(hostPwned === undefined, `window.__pwned in the host page is ${hostPwned}`);
    check(dom.scripts === 0 && dom.handlers === 0 && dom.jsLinks === 0, `unsafe markup left in the view: ${JSON.stringify(dom)}`);
    // The control: each payload, put in a frame as it is, does set the flag.
    const payloads = [
      "<script>window.__pwned=1</script>",
      '<img src="x" onerror="window.__pwned=1">',
      '<a href="javascript:void(window.__pwned=1)">click me</a>',
      '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><script>window.__pwned=1</script></svg>',
    ];
    await page.evaluate((ps) => ps.forEach((p, i) => {
      const f = document.createElement("iframe");
      f.name = `control-${i}`;
      // (Chromium runs no javascript: URL in a sandboxed frame: the link's
      // control frame is not sandboxed; the others are, like the view.)
      if (!p.startsWith("<a")) f.setAttribute("sandbox", "allow-scripts");
      f.srcdoc = p;
      document.body.append(f);
    }), payloads);
    for (let i = 0; i < payloads.length; i++) {
      const f = await waitFrame(page, `control-${i}`);
      if (payloads[i].startsWith("<a")) await f.locator("a").click();
      await poll(f, () => window.__pwned === 1, null, `the unsanitized payload ${payloads[i]} to set window.__pwned (the control)`, 10000);
    }
    check(await page.evaluate(() => window.__pwned) === undefined, "a control frame reached the host page");
    return { dom };
  });

  await runCase("charts", async (page) => {
    await page.addInitScript(chartProbe);
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "charts", code: cfg.chartCode });
    await cellDone(frame, "ok");
    const got = await checkCharts(page, frame, () => page.locator("iframe").first().screenshot({ path: join(cfg.artifacts, "cell-view-charts.png") }));
    const csp = await page.evaluate(() => window.viewCSPs.at(-1).policy);
    check(/connect-src 'none'/.test(csp), `the view ran under ${csp}`);
    const size = await page.evaluate(() => window.viewSizes.at(-1));
    return { ...got, requests: offline(page), csp, cellViewBytes: size };
  });

  await runCase("chart-sanitize", async (page) => {
    await page.addInitScript(chartProbe);
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "charts-bad", code: cfg.chartSanitizeCode });
    await cellDone(frame, "ok");
    const got = await checkChartSanitize(page, frame);
    return { ...got, requests: offline(page) };
  });

  await runCase("chart-webgl", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "charts-gl", code: cfg.chartGLCode });
    await cellDone(frame, "ok");
    return { ...(await checkChartGL(frame)), requests: offline(page) };
  });

  await runCase("latency", async (page) => {
    await page.addInitScript(latencyProbe);
    await openHost(page);
    // The run is handed off after --max-wait; the lines printed after that
    // reach the view only through its polling.
    const code = "import time\nfor i in range(24):\n    print(f'lat {i} {time.time()*1000:.1f}', flush=True)\n    time.sleep(0.25)";
    const { frame } = await runTool(page, "run_code", { session_id: "lat", code });
    const handedAt = Date.now();
    await cellDone(frame, "ok");
    const seen = await frame.evaluate(() => window.__seen);
    const deltas = Object.values(seen).filter((s) => s.kernel > handedAt).map((s) => s.dom - s.kernel).sort((a, b) => a - b);
    check(deltas.length >= 3, `only ${deltas.length} outputs arrived live`);
    const median = deltas[Math.floor(deltas.length / 2)];
    return { latencyMedianMs: Math.round(median), latencySamples: deltas.length, latencyMinMs: Math.round(deltas[0]), latencyMaxMs: Math.round(deltas[deltas.length - 1]) };
  });


  // The cell view does not bundle KaTeX (its size budget): it reads KaTeX
  // through the host when math appears and typesets it as MathML, which
  // needs no font (the default CSP has no font-src: data: fonts are blocked).
  await runCase("math", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "app", code: MATH_CODE });
    await cellDone(frame, "ok");
    // The tool result alone shows the streams; the recorded cell, which
    // view_run brings right after, has the displays.
    await poll(frame, () => Number(document.querySelector(".cell")?.dataset.index) >= 0, null, "the recorded cell");
    const m = await poll(frame, mathState, ["Latex", 3], "the math typeset (3 .katex)");
    check(m.mathml >= 3, `want 3 MathML math elements: ${JSON.stringify(m)}`);
    check(m.displayMath >= 1, `no display math: ${JSON.stringify(m)}`);
    check(m.dollars === 0, `$ source left in the outputs: ${JSON.stringify(m)}`);
    check(!m.sourceLeft, `math left as its source: ${JSON.stringify(m)}`);
    const loaded = await frame.evaluate(() => performance.getEntriesByType("measure").filter((e) => e.name.includes("library katex")).map((e) => `${e.name}: ${Math.round(e.duration)} ms`));
    check(loaded.length === 2, `KaTeX was not read through the host: ${JSON.stringify(loaded)}`);
    const csp = await page.evaluate(() => window.viewCSPs.at(-1).policy);
    check(!/font-src[^;]*data:/.test(csp), `the view ran under a CSP that allows data: fonts: ${csp}`);
    const box = await frame.evaluate(() => {
      const r = document.querySelector(".cell-outputs math")?.getBoundingClientRect();
      return r ? { w: r.width, h: r.height } : null;
    });
    check(box && box.w > 20 && box.h > 8, `the MathML is not laid out: ${JSON.stringify(box)}`);
    await page.locator("iframe").first().screenshot({ path: join(cfg.artifacts, "cell-view-math.png") });
    return { math: m, box, loaded, csp };
  });

  await runCase("bokeh", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "app", code: BOKEH_CODE });
    await cellDone(frame, "ok");
    const st = await poll(frame, bokehState, "bokeh rise", "the Bokeh placeholder in the recorded cell");
    checkBokeh(st);
    return { bokeh: st };
  });

  await runCase("styled-html", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "app", code: STYLED_CODE });
    await cellDone(frame, "ok");
    const before = await frame.evaluate(() => {
      const s = getComputedStyle(document.querySelector(".cell-head"));
      return { ".cell-head": { display: s.display, visibility: s.visibility, color: s.color, background: s.backgroundColor } };
    });
    const st = await poll(frame, styledState, ["background_gradient", [".cell-head"]], "the Styler and the hostile HTML");
    checkStyled(st, before);
    const control = await frame.evaluate(uncontained, ["background_gradient", [".cell-head"]]);
    check(Object.values(control).every(Boolean), `without containment the overlay should cover the controls: ${JSON.stringify(control)}`);
    return { styler: st.got, rule: st.rule, control };
  });

  await runCase("display-update", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "upd", code: UPDATE_CODE });
    return updateSamples(frame, "display_id=True");
  });

  // Live widgets in the cell view: drawn from the kernel's state (read
  // through view_widgets), changed through send_widget.
  await runCase("widgets", async (page) => {
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "cw", code: cfg.widgetCode });
    await cellDone(frame, "ok");
    await poll(frame, () => document.querySelectorAll('[data-widget="live"] .widget-slider').length >= 2, null, "two live sliders in the cell view");
    check((await sliderValue(frame, "n")) === "3", `slider n shows ${await sliderValue(frame, "n")}, want 3`);
    const handle = (desc) => frame.locator(".widget-slider", { has: frame.locator(".widget-label", { hasText: new RegExp("^" + desc + "$") }) }).locator(".noUi-handle").first();
    await handle("n").focus();
    for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowRight");
    check((await sliderValue(frame, "n")) === "7", `slider n shows ${await sliderValue(frame, "n")} after 4 steps right`);
    let got = "";
    const deadline = Date.now() + 20000;
    for (;;) {
      const r = await page.evaluate(() => window.callTool("get_value", { session_id: "cw", expression: "s.value" }));
      got = (r.content || []).map((c) => c.text || "").join("\n");
      if (/\(int\):\s*7$/.test(got.trim()) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    check(/\(int\):\s*7$/.test(got.trim()), `get_value s.value after the cell view moved it: ${got}`);
    await poll(frame, () => document.body.innerText.includes("x is 5"), null, "the interact's output x is 5");
    await handle("x").focus();
    await page.keyboard.press("ArrowRight");
    check((await sliderValue(frame, "x")) === "6", `slider x shows ${await sliderValue(frame, "x")} after a step right, want 6`);
    await poll(frame, () => document.body.innerText.includes("x is 6") && !document.body.innerText.includes("x is 5"), null, "the interact's output following its slider (x is 6)")
      .catch(async (err) => { throw new Error(err.message + `; slider x shows ${await sliderValue(frame, "x")}; outputs: ${JSON.stringify((await frame.evaluate(() => document.body.innerText)).match(/x is \d+/g))}`); });
    await frame.locator('[data-widget="live"] .widget-button', { hasText: "go" }).first().click();
    let clicks = "";
    for (const end = Date.now() + 20000; ; ) {
      const r = await page.evaluate(() => window.callTool("run_code", { session_id: "cw", code: "print('clicks', len(clicks))" }));
      clicks = (r.content || []).map((c) => c.text || "").join("\n");
      if (/clicks 1\b/.test(clicks) || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    check(/clicks 1\b/.test(clicks), `the button's handler after a click in the cell view: ${clicks}`);
    const sends = await page.evaluate(() => window.calls.filter((c) => c.by === "view" && c.name === "send_widget" && !c.isError && !c.error).length);
    check(sends >= 3, `the view's send_widget calls: ${sends}`);
    await page.locator("iframe").first().screenshot({ path: join(cfg.artifacts, "cell-view-widgets.png") });
    return { kernel: got.trim(), clicks: clicks.trim(), sends, requests: offline(page) };
  });

  // A tqdm bar advances in the cell view while the run goes on (handed
  // off after --max-wait 2), and ends full. The loop takes 8 s, not the web
  // view's 5: the view has nothing before the hand-off, then loads the
  // widgets library through the host.
  await runCase("widgets-tqdm", async (page) => {
    await openHost(page);
    const code = "from tqdm.auto import tqdm\nimport time\nfor i in tqdm(range(50), desc='tq'):\n    time.sleep(0.16)\nprint('tqdm done')";
    const { frame } = await runTool(page, "run_code", { session_id: "ctq", code });
    return { ...(await checkTqdm(frame)), requests: offline(page) };
  });

  // Hostile widget state runs nothing in the view or the host.
  await runCase("widgets-sanitize", async (page) => {
    await page.addInitScript(() => { window.__pwned = undefined; });
    await openHost(page);
    const { frame } = await runTool(page, "run_code", { session_id: "cw-bad", code: cfg.widgetSanitizeCode });
    await cellDone(frame, "ok");
    await poll(frame, () => document.body.innerText.includes("html widget") && document.body.innerText.includes("math widget") && document.querySelectorAll('[data-widget="live"]').length >= 6, null, "the hostile widgets drawn live");
    const note = await poll(frame, () => [...document.querySelectorAll(".widget-note")].map((e) => e.textContent).find((t) => t.includes("evil-widgets")), null, "a note for the unknown widget module");
    await frame.locator(".widget-note", { hasText: "evil-widgets" }).first().click();
    // Whatever the click set off has run once the view answers again.
    await frame.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    const st = await frame.evaluate(() => ({ pwned: window.__pwned, scripts: document.querySelectorAll(".cell script").length, handlers: document.querySelectorAll(".cell [onerror]").length }));
    check(st.pwned === undefined, `window.__pwned is ${st.pwned} in the view`);
    check(await page.evaluate(() => window.__pwned) === undefined, "window.__pwned set in the host page");
    check(st.scripts === 0 && st.handlers === 0, `scripts or handlers in the widgets: ${JSON.stringify(st)}`);
    return { note, requests: offline(page) };
  });

  if (cfg.rHostURL) {
    await runCase("r-dataframe", async (page) => {
      await openHost(page, cfg.rHostURL);
      const code = "data.frame(city = c('Lyon', 'Oslo'), n = c(11L, 22L))";
      const { frame } = await runTool(page, "run_code", { session_id: "r", code });
      await cellDone(frame, "ok");
      const cells = await poll(frame, tableCells, null, "a table in the outputs");
      for (const want of ["city", "Lyon", "Oslo", "11", "22"]) check(cells.includes(want), `table cell ${want} missing: ${JSON.stringify(cells)}`);
      return { cells };
    });
  }
}

// ---- the web view suite ----

// webSession opens the page on a session's notebook: the page lists the
// sessions; a link or button naming the session opens it.
async function openSession(page, url, session) {
  const resp = await page.goto(url);
  check(resp.status() === 200, `GET ${url}: ${resp.status()}`);
  const entry = page.locator(`[data-session-id="${session}"]`).first();
  await entry.waitFor({ timeout: T });
  await entry.click();
  await page.locator(`.cell`).first().waitFor({ timeout: T });
  await installDeep(page);
}

// onlyOnce checks that exactly one cell shows code, once its run is over:
// the live cell gives way to the recorded one.
async function onlyOnce(page, code, what) {
  const statuses = await poll(page, (c) => {
    const st = [...document.querySelectorAll(".cell")].filter((e) => (e.querySelector(".cell-code")?.textContent || "").includes(c)).map((e) => e.dataset.status);
    return st.length === 1 ? st : null;
  }, code, `one cell for ${what}`, 10000).catch(async () => page.evaluate((c) => [...document.querySelectorAll(".cell")].filter((e) => (e.querySelector(".cell-code")?.textContent || "").includes(c)).map((e) => e.dataset.status), code));
  check(statuses.length === 1 && statuses[0] === "ok", `${statuses.length} cells show ${what} after it ended (statuses ${statuses.join(", ")}), want one with status ok`);
}

// personBox returns the page's box for a new cell and its run button.
function personBox(page) {
  return { box: page.locator("textarea.new-cell-code").first(), run: page.locator(".new-cell-run").first() };
}

async function webSuite() {
  await runCase("stream", async (page) => {
    await page.addInitScript(latencyProbe);
    await openSession(page, cfg.webURL, "web");
    const before = await page.locator(".cell").count();
    await sync("client-run", { session: "web" });
    // The client's cell appears and streams while it runs.
    const live = await poll(page, () => {
      const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes("stream"));
      if (!c) return null;
      const t = c.querySelector(".cell-outputs")?.innerText || "";
      return c.dataset.status !== "ok" && /stream 1/.test(t) ? { status: c.dataset.status, text: t } : null;
    }, null, "the client's cell streaming (stream 1 shown while it runs)");
    const done = await poll(page, () => {
      const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes("stream") && e.dataset.status === "ok");
      const t = c?.querySelector(".cell-outputs")?.innerText || "";
      return c && t.includes("stream 5") ? t : null;
    }, null, "the client's cell done with status ok");
    await onlyOnce(page, "for i in range(6)", "the client's run");
    const after = await page.locator(".cell").count();
    check(after === before + 1, `cells: ${before} before, ${after} after one run`);
    await sync("client-run-done");
    const deltas = Object.values(await page.evaluate(() => window.__seen)).map((s) => s.dom - s.kernel).sort((a, b) => a - b);
    check(deltas.length === 6, `latency samples: ${deltas.length}, want 6`);
    return { liveStatus: live.status, final: done.slice(0, 80), latencyMedianMs: Math.round(deltas[3]), latencySamples: deltas.length, latencyMinMs: Math.round(deltas[0]), latencyMaxMs: Math.round(deltas[5]) };
  });

  await runCase("person-run", async (page) => {
    await openSession(page, cfg.webURL, "web");
    const { box, run } = personBox(page);
    await box.fill("person_value = 6 * 7\nprint('from the person', person_value)");
    await run.click();
    await poll(page, () => {
      const c = [...document.querySelectorAll(".cell")].find((e) => (e.querySelector(".cell-code")?.textContent || "").includes("person_value = 6 * 7") && e.dataset.status === "ok");
      const t = c?.querySelector(".cell-outputs")?.innerText || "";
      return c && t.includes("from the person 42");
    }, null, "the person's cell done with its output");
    await onlyOnce(page, "person_value = 6 * 7", "the person's cell");
    await page.screenshot({ path: join(cfg.artifacts, "web-view.png") });
    const reply = await sync("person-ran", { session: "web", code: "person_value = 6 * 7" });
    check(reply.ok, `get_history: ${reply.detail}`);
    return { history: reply.detail };
  });


  // The person runs them, in the session the suite has: a cell of theirs
  // is drawn like any other.
  const personRuns = async (page, code) => {
    const { box, run } = personBox(page);
    await box.fill(code);
    await run.click();
  };
  const controls = [".session-interrupt", ".new-cell-run", ".session-title"];
  const looks = (page) => page.evaluate((sels) => Object.fromEntries(sels.map((sel) => {
    const s = getComputedStyle(document.querySelector(sel));
    return [sel, { display: s.display, visibility: s.visibility, color: s.color, background: s.backgroundColor }];
  })), controls);

  await runCase("math", async (page) => {
    await openSession(page, cfg.webURL, "web");
    await personRuns(page, MATH_CODE);
    const m = await poll(page, mathState, "Latex", "the math outputs");
    check(m.katex >= 3, `want 3 .katex (the Latex, the markdown's inline and display math): ${JSON.stringify(m)}`);
    check(m.display >= 1, `no display math: ${JSON.stringify(m)}`);
    check(m.dollars === 0, `$ source left in the outputs: ${JSON.stringify(m)}`);
    check(/KaTeX_Main/.test(m.font), `KaTeX's font is not used: ${m.font}`);
    const fonts = await page.evaluate(async () => {
      await document.fonts.ready;
      return document.fonts.check("16px KaTeX_Main") && [...document.fonts].some((f) => f.family.includes("KaTeX_Main") && f.status === "loaded");
    });
    check(fonts, "KaTeX_Main did not load (its inlined woff2)");
    return { math: m };
  });

  await runCase("styled-html", async (page) => {
    await openSession(page, cfg.webURL, "web");
    const before = await looks(page);
    await personRuns(page, STYLED_CODE);
    const st = await poll(page, styledState, ["background_gradient", controls], "the Styler and the hostile HTML");
    checkStyled(st, before);
    check(JSON.stringify(await looks(page)) === JSON.stringify(before), "the page's controls look different");
    const control = await page.evaluate(uncontained, ["background_gradient", controls]);
    check(Object.values(control).every(Boolean), `without containment the overlay should cover the controls: ${JSON.stringify(control)}`);
    return { styler: st.got, rule: st.rule, control };
  });

  await runCase("bokeh", async (page) => {
    await openSession(page, cfg.webURL, "web");
    await personRuns(page, BOKEH_CODE);
    const st = await poll(page, bokehState, "bokeh rise", "the Bokeh placeholder in the recorded cell");
    checkBokeh(st);
    return { bokeh: st };
  });

  await runCase("display-update", async (page) => {
    await openSession(page, cfg.webURL, "web");
    await personRuns(page, UPDATE_CODE);
    return updateSamples(page, "display_id=True");
  });

  await runCase("charts", async (page) => {
    await page.addInitScript(chartProbe);
    await openSession(page, cfg.webURL, "charts");
    // The page down to the chart cell's end (the README's screenshot).
    const got = await checkCharts(page, page, async () => {
      const bottom = await page.evaluate(() => Math.ceil(document.querySelector(".cell").getBoundingClientRect().bottom + window.scrollY + 4));
      await page.screenshot({ path: join(cfg.artifacts, "web-view-charts.png"), fullPage: true, clip: { x: 0, y: 0, width: 820, height: bottom } });
    });
    return { ...got, requests: offline(page) };
  });

  await runCase("chart-sanitize", async (page) => {
    await page.addInitScript(chartProbe);
    await openSession(page, cfg.webURL, "charts-bad");
    const got = await checkChartSanitize(page, page);
    return { ...got, requests: offline(page) };
  });

  await runCase("chart-webgl", async (page) => {
    await openSession(page, cfg.webURL, "charts-gl");
    return { ...(await checkChartGL(page)), requests: offline(page) };
  });

  // Live widgets: the slider and the interact of widgetCode, moved in the
  // page (the keyboard on noUiSlider's handle), reach the kernel.
  await runCase("widgets", async (page) => {
    await openSession(page, cfg.webURL, "widgets");
    await poll(page, () => document.querySelectorAll('[data-widget="live"] .widget-slider').length >= 2, null, "two live sliders");
    const handle = (desc) => page.locator(".widget-slider", { has: page.locator(".widget-label", { hasText: new RegExp("^" + desc + "$") }) }).locator(".noUi-handle").first();
    check((await sliderValue(page, "n")) === "3", `slider n shows ${await sliderValue(page, "n")}, want 3`);
    await handle("n").focus();
    for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowRight");
    check((await sliderValue(page, "n")) === "7", `slider n shows ${await sliderValue(page, "n")} after 4 steps right`);
    let got = "";
    const deadline = Date.now() + 20000;
    for (;;) {
      got = (await sync("client-value", { session: "widgets", expression: "s.value" })).text;
      if (/\(int\):\s*7$/.test(got.trim()) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    check(/\(int\):\s*7$/.test(got.trim()), `get_value s.value after the page moved it: ${got}`);
    check(await page.evaluate(() => document.body.innerText.includes("x is 5")), "the interact's output x is 5 is not shown");
    await handle("x").focus();
    await page.keyboard.press("ArrowRight");
    check((await sliderValue(page, "x")) === "6", `slider x shows ${await sliderValue(page, "x")} after a step right, want 6`);
    await poll(page, () => document.body.innerText.includes("x is 6") && !document.body.innerText.includes("x is 5"), null, "the interact's output following its slider (x is 6)")
      .catch(async (err) => { throw new Error(err.message + `; slider x shows ${await sliderValue(page, "x")}; outputs: ${JSON.stringify((await page.evaluate(() => document.body.innerText)).match(/x is \d+/g))}`); });
    // A button's click is its own message (custom), which runs its handler.
    await page.locator('[data-widget="live"] .widget-button', { hasText: "go" }).first().click();
    let clicks = "";
    for (const end = Date.now() + 20000; ; ) {
      clicks = (await sync("client-code", { session: "widgets", code: "print('clicks', len(clicks))" })).text;
      if (/clicks 1\b/.test(clicks) || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    check(/clicks 1\b/.test(clicks), `the button's handler after a click in the page: ${clicks}`);
    await page.screenshot({ path: join(cfg.artifacts, "web-view-widgets.png"), fullPage: true });
    return { kernel: got.trim(), clicks: clicks.trim(), requests: offline(page) };
  });

  // A tqdm bar advances in the page while the run goes on, and ends full.
  await runCase("widgets-tqdm", async (page) => {
    await openSession(page, cfg.webURL, "widgets");
    await personRuns(page, "from tqdm.auto import tqdm\nimport time\nfor i in tqdm(range(50), desc='tq'):\n    time.sleep(0.1)\nprint('tqdm done')");
    return { ...(await checkTqdm(page)), requests: offline(page) };
  });

  // Hostile widget state runs nothing, and no widget code is fetched.
  await runCase("widgets-sanitize", async (page) => {
    await page.addInitScript(() => { window.__pwned = undefined; });
    await openSession(page, cfg.webURL, "widgets-bad");
    await poll(page, () => document.body.innerText.includes("html widget") && document.body.innerText.includes("math widget") && document.querySelectorAll('[data-widget="live"]').length >= 6, null, "the hostile widgets drawn live");
    const note = await poll(page, () => [...document.querySelectorAll(".widget-note")].map((e) => e.textContent).find((t) => t.includes("evil-widgets")), null, "a note for the unknown widget module");
    // ipywidgets' own error view would set the names as HTML on a click.
    await page.locator(".widget-note", { hasText: "evil-widgets" }).first().click();
    await new Promise((r) => setTimeout(r, 1000));
    const st = await page.evaluate(() => ({ pwned: window.__pwned, scripts: document.querySelectorAll(".cells script").length, handlers: document.querySelectorAll(".cells [onerror]").length }));
    check(st.pwned === undefined, `window.__pwned is ${st.pwned}`);
    check(st.scripts === 0 && st.handlers === 0, `scripts or handlers in the widgets: ${JSON.stringify(st)}`);
    return { note, requests: offline(page) };
  });

  // Under --ui-readonly a widget is drawn live but a change is refused,
  // said so, and the widget goes back to the kernel's value.
  await runCase("widgets-readonly", async (page) => {
    await openSession(page, cfg.readonlyURL, "ro-widgets");
    await poll(page, () => document.querySelectorAll('[data-widget="live"] .widget-slider').length >= 1, null, "a live slider");
    await page.locator(".widget-slider .noUi-handle").first().focus();
    await page.keyboard.press("ArrowRight");
    const message = await poll(page, () => { const m = document.querySelector(".page-message"); return m && !m.hidden && /read-only/.test(m.textContent) ? m.textContent : null; }, null, "the read-only refusal");
    await poll(page, () => document.querySelector(".widget-slider .widget-readout")?.textContent === "3", null, "the slider back at 3", 10000).catch(() => {});
    const value = await sliderValue(page, "n");
    check(value === "3", `the slider shows ${value} after the refused change, want the kernel's 3`);
    return { message: message.slice(0, 120), requests: offline(page) };
  });

  await runCase("readonly", async (page) => {
    await openSession(page, cfg.readonlyURL, "ro");
    const before = await page.locator(".cell").count();
    const { box, run } = personBox(page);
    const shown = await box.count() > 0 && await box.isVisible() && await run.isEnabled();
    let message = "";
    if (shown) {
      await box.fill("print('should not run')");
      await run.click();
      message = await poll(page, () => /read-only|readonly/i.test(document.body.innerText) ? document.body.innerText.match(/.*(read-only|readonly).*/i)[0] : null, null, "a read-only message");
    } else {
      message = "(no run box under --ui-readonly)";
    }
    // The API refuses the run with the page's own token.
    const api = await page.evaluate(async () => {
      const token = new URL(location.href).searchParams.get("token");
      const r = await fetch(`/ui/api/sessions/ro/run?token=${token}`, { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` }, body: JSON.stringify({ code: "print('should not run')" }) });
      return { status: r.status, body: await r.text() };
    });
    check(api.status === 403, `POST run under --ui-readonly: ${api.status} ${api.body}`);
    const after = await page.locator(".cell").count();
    const ran = await page.evaluate(() => document.body.innerText.includes("should not run\n") || [...document.querySelectorAll(".cell-outputs")].some((o) => o.innerText.includes("should not run")));
    check(!ran && after === before, `a cell ran under --ui-readonly (cells ${before} -> ${after})`);
    return { message: message.slice(0, 120), api: `${api.status} ${api.body.slice(0, 120)}` };
  });

  await runCase("wrong-token", async (page) => {
    const u = new URL(cfg.webURL);
    u.searchParams.set("token", "0".repeat(32));
    const resp = await page.goto(u.toString());
    check(resp.status() === 401, `GET with a wrong token: ${resp.status()}`);
    u.searchParams.delete("token");
    const resp2 = await page.goto(u.toString());
    check(resp2.status() === 401, `GET without a token: ${resp2.status()}`);
    u.pathname = "/ui/api/sessions";
    u.searchParams.set("token", "0".repeat(32));
    const resp3 = await page.goto(u.toString());
    check(resp3.status() === 401, `GET /ui/api/sessions with a wrong token: ${resp3.status()}`);
  });

  await runCase("users", async (page) => {
    const resp = await page.goto(cfg.user2URL);
    check(resp.status() === 200, `user 2's page: ${resp.status()}`);
    await page.locator(`[data-session-id="${cfg.user2Session}"]`).first().waitFor({ timeout: T });
    const text = await page.evaluate(() => document.body.innerText + document.body.innerHTML);
    check(!text.includes(cfg.user1Session), `user 2's page shows user 1's session ${cfg.user1Session}`);
    const api = await page.evaluate(async () => {
      const token = new URL(location.href).searchParams.get("token");
      return (await fetch(`/ui/api/sessions?token=${token}`, { headers: { Authorization: `Bearer ${token}` } })).text();
    });
    check(api.includes(cfg.user2Session) && !api.includes(cfg.user1Session), `user 2's /ui/api/sessions: ${api}`);
    const other = await page.evaluate(async (s) => {
      const token = new URL(location.href).searchParams.get("token");
      const r = await fetch(`/ui/api/sessions/${s}/cells?token=${token}`, { headers: { Authorization: `Bearer ${token}` } });
      return { status: r.status, body: (await r.text()).slice(0, 200) };
    }, cfg.user1Session);
    check(!other.body.includes("secret_of_user_1"), `user 2 read user 1's cells: ${JSON.stringify(other)}`);
    return { otherCells: other.status };
  });
}

// ---- the web view below a path, through JupyterHub's proxy ----

// hubSuite opens the web view at cfg.webURL (<hub>/services/kernel-mcp/ui/,
// --public-url with that path) in a browser that has not signed in: the
// page sends it through the hub's login and back, it shows the cell the
// person ran through their MCP client, and runs one from the page, with a
// chart whose library comes from below the path too.
async function hubSuite() {
  await runCase("hub-sign-in", async (page) => {
    const web = new URL(cfg.webURL);
    const prefix = web.pathname.replace(/ui\/$/, ""); // /services/kernel-mcp/
    await page.goto(cfg.webURL);
    check(new URL(page.url()).pathname.startsWith("/hub/login"), `sent to ${page.url()}, want the hub's login page`);
    await page.fill('input[name="username"]', cfg.user);
    await page.fill('input[name="password"]', cfg.password);
    await Promise.all([
      page.waitForURL((u) => u.href.startsWith(cfg.webURL), { timeout: T }),
      page.locator('#login_submit, [type="submit"]').first().click(),
    ]);
    check(page.url() === cfg.webURL, `back at ${page.url()}, want ${cfg.webURL}`);

    // The cell the person's MCP client ran.
    const entry = page.locator(`[data-session-id="${cfg.session}"]`).first();
    await entry.waitFor({ timeout: T });
    await entry.click();
    await poll(page, (code) => [...document.querySelectorAll(".cell")].some((e) => (e.querySelector(".cell-code")?.textContent || "").includes(code)
      && /via the hub/.test(e.querySelector(".cell-outputs")?.innerText || "")), cfg.clientCode, "the cell run through the MCP client, with its output");

    // A cell from the page: it runs, its output comes over the event
    // stream, and the history has it as the person's.
    const { box, run } = personBox(page);
    await box.fill(cfg.personCode);
    await run.click();
    await poll(page, (code) => [...document.querySelectorAll(".cell")].some((e) => (e.querySelector(".cell-code")?.textContent || "").includes(code)
      && e.dataset.status === "ok" && /from the page 42/.test(e.querySelector(".cell-outputs")?.innerText || "")), cfg.personCode, "the person's cell done with its output");
    const reply = await sync("person-ran", { session: cfg.session, code: cfg.personCode.split("\n")[0] });
    check(reply.ok, `get_history: ${reply.detail}`);

    // A chart: plotly.js is loaded from below the path.
    await box.fill(cfg.chartCode);
    await run.click();
    const chart = await poll(page, () => {
      const c = document.querySelector(".mime-chart.chart-plotly");
      if (!c || c.dataset.chart === "loading") return null;
      return { state: c.dataset.chart, points: c.querySelectorAll(".scatterlayer .point").length };
    }, null, "the Plotly chart drawn (or failed)");
    check(chart.state === "drawn" && chart.points === 3, `the chart: ${JSON.stringify(chart)}, want drawn with 3 points`);

    // Every request to the hub's host went below the path, or to the
    // hub's own pages (its login); none to /ui/ at the root.
    const own = page.requests.map((u) => new URL(u)).filter((u) => u.host === web.host);
    const astray = own.filter((u) => !u.pathname.startsWith(prefix) && !u.pathname.startsWith("/hub/"));
    check(astray.length === 0, `requests outside ${prefix} and /hub/: ${JSON.stringify(astray.map((u) => u.pathname))}`);
    for (const want of ["oauth/session", "oauth/callback", "ui/api/sessions", "ui/api/events", "ui/charts/plotly.js", `ui/api/sessions/${cfg.session}/run`]) {
      check(own.some((u) => u.pathname === prefix + want), `no request to ${prefix + want}`);
    }
    const cookie = (await page.context().cookies()).find((c) => c.name === "km_session");
    check(cookie && cookie.path === prefix + "ui/" && cookie.httpOnly && cookie.sameSite === "Lax", `the session cookie: ${JSON.stringify(cookie && { ...cookie, value: "…" })}, want path ${prefix}ui/, HttpOnly, SameSite Lax`);
    return { requests: own.length, cookiePath: cookie.path, chart };
  });
}

const t0 = Date.now();
try {
  browser = await chromium.launch({ executablePath: cfg.chromium, headless: true, args: ["--no-sandbox"] });
  if (suite === "app") await appSuite();
  else if (suite === "web") await webSuite();
  else if (suite === "hub") await hubSuite();
  else throw new Error(`unknown suite ${suite}`);
} catch (e) {
  results.push({ name: "driver", ok: false, error: String(e.stack || e) });
} finally {
  if (browser) await browser.close();
}
process.stdout.write(JSON.stringify({ verdict: { suite, ms: Date.now() - t0, cases: results } }) + "\n");
process.exit(0);
