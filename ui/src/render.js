// The renderer both views share: a Cell (see docs and the server's Cell
// JSON) becomes a notebook cell in the DOM. Everything the kernel produced
// enters the page through this file, so every HTML and SVG string goes
// through DOMPurify here and text goes through ansi_up, which escapes HTML.

import DOMPurify from "dompurify";
import { AnsiUp } from "ansi_up";
import { marked } from "marked";
import hljs from "highlight.js/lib/core";
import python from "highlight.js/lib/languages/python";
import r from "highlight.js/lib/languages/r";
import { chartOf, renderChart, bokehOf, bokehLabel, isBokehRoot, isBokehLoading, BOKEH_LOAD } from "./charts.js";

hljs.registerLanguage("python", python);
hljs.registerLanguage("r", r);

// Kernel HTML may carry links; they open outside the view, never replace it.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const LIVE = new Set(["running", "queued", "input_requested"]);

// MIME_ORDER is the display priority: the first type a bundle has wins.
export const MIME_ORDER = [
  "text/html",
  "image/svg+xml",
  "image/png",
  "image/jpeg",
  "image/gif",
  "text/markdown",
  "text/latex",
  "application/json",
  "text/plain",
];

/** isLive reports whether a status means the run is not over yet. */
export function isLive(status) {
  return LIVE.has(status);
}

const FORBID_TAGS = ["form", "input", "button", "textarea", "select"];

/**
 * sanitizeHTML returns kernel HTML with no script, handler or javascript:
 * URL, and no <style> either: it goes into the page itself (markdown), where
 * a style sheet would restyle the page.
 */
export function sanitizeHTML(html) {
  return DOMPurify.sanitize(html, { ADD_ATTR: ["target"], FORBID_TAGS: [...FORBID_TAGS, "style"] });
}

// collected gathers the text of the <style> elements sanitizeScopedHTML
// meets, while it runs.
let collected = null;

DOMPurify.addHook("uponSanitizeElement", (node, data) => {
  if (data.tagName === "style" && collected) collected.push(node.textContent);
});

/**
 * sanitizeScopedHTML is sanitizeHTML for HTML shown in a shadow root of its
 * own (see htmlOutput). Its style sheets are kept, since their rules reach
 * nothing outside that root, but apart: css holds their text, with no
 * @import (no style sheet is fetched from elsewhere), @property or other
 * at-rule that is not scoped (see KEEP_AT), for htmlOutput to put in
 * <style> elements by textContent. (Left in the HTML, DOMPurify drops a
 * <style> whose text has a "<", as scikit-learn's does.)
 */
export function sanitizeScopedHTML(html) {
  collected = [];
  try {
    const body = DOMPurify.sanitize(html, { ADD_ATTR: ["target"], FORBID_TAGS: [...FORBID_TAGS, "style"], FORCE_BODY: true });
    return { html: body, css: collected.map(scopedSheet) };
  } finally {
    collected = null;
  }
}

// KEEP_AT are the at-rules an output's style sheet keeps: those that only
// hold rules for its own elements. The others (@import, @property,
// @font-face, @counter-style…) would fetch, or may reach past the shadow
// root in some browser: a registered custom property is the document's.
const KEEP_AT = /^@(media|supports|(-webkit-)?keyframes|layer|container|scope|starting-style)\b/i;

// prune deletes from a rule list the at-rules KEEP_AT does not name, in
// nested rules too.
function prune(rules, remove) {
  for (let i = rules.length - 1; i >= 0; i--) {
    const r = rules[i];
    const text = r.cssText;
    if (text.startsWith("@") && !KEEP_AT.test(text)) remove(i);
    else if (r.cssRules && !/^@(-webkit-)?keyframes/i.test(text)) prune(r.cssRules, (j) => r.deleteRule(j));
  }
}

// scopedSheet is a style sheet's text with only what KEEP_AT allows, as
// the browser's CSS parser reads it (a constructed sheet has no @import at
// all); a pattern does it where there is no such parser (jsdom).
function scopedSheet(css) {
  let sheet;
  try {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
  } catch {
    return css.replace(/@import[^;]*;?/gi, "").replace(/@(property|font-face|counter-style)[^{]*\{[^}]*\}/gi, "");
  }
  prune(sheet.cssRules, (i) => sheet.deleteRule(i));
  return [...sheet.cssRules].map((r) => r.cssText).join("\n");
}

/** sanitizeSVG returns an SVG document with the same guarantees. */
export function sanitizeSVG(svg) {
  return DOMPurify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } });
}

// --- math -------------------------------------------------------------------

// katex is the math renderer a view registers with setMath (the web view
// bundles KaTeX; the cell view, on a size budget, does not): without one,
// math shows as its TeX source.
let katex = null;
let mathOutput = "htmlAndMathml";

/**
 * setMath registers KaTeX (the module) as the renderer of math. output is
 * KaTeX's output option: "htmlAndMathml" (the default) needs KaTeX's CSS
 * and fonts; "mathml" needs neither (the browser lays MathML out with its
 * own fonts), for a view whose CSP loads no font (the cell view).
 */
export function setMath(k, output = "htmlAndMathml") {
  katex = k;
  mathOutput = output;
}

// KaTeX's options: no \href, \url, \includegraphics or \htmlData
// (trust: false), errors shown in place rather than thrown, and a bound
// on macro expansion (a macro bomb stops there).
const KATEX_OPTIONS = { trust: false, throwOnError: false, maxExpand: 500, maxSize: 50, strict: "ignore", output: "htmlAndMathml" };

/**
 * typeset renders the math elements under root not rendered yet: those
 * markdown and text/latex left with their TeX in data-tex, showing their
 * source. katex.render builds DOM nodes itself: no HTML string is parsed on
 * the way. A view that gets KaTeX later (setMath) calls it on its document.
 */
export function typeset(root) {
  if (!katex) return;
  for (const m of root.querySelectorAll(".math[data-tex]:not(.math-done)")) {
    const display = m.classList.contains("math-display");
    try {
      katex.render(m.dataset.tex, m, { ...KATEX_OPTIONS, output: mathOutput, displayMode: display });
      m.classList.add("math-done");
    } catch {
      /* left as its source */
    }
  }
  // (root itself too: latexOutput typesets the element it makes.)
  const sources = [...root.querySelectorAll(".mime-latex.math-source")];
  if (root.matches?.(".mime-latex.math-source")) sources.push(root);
  for (const d of sources) {
    if (!d.querySelector(".math[data-tex]:not(.math-done)")) d.classList.remove("math-source");
  }
}

function escapeHTML(s) {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// mathSpan is the markup marked leaves for math: its source, shown as is
// until typeset replaces it.
function mathSpan(tex, display, source) {
  const tag = display ? "div" : "span";
  return `<${tag} class="math math-${display ? "display" : "inline"}" data-tex="${escapeHTML(tex)}">${escapeHTML(source)}</${tag}>`;
}

// marked's math syntax, as JupyterLab reads it: $$…$$ (a block or inline)
// and $…$ with no space inside its dollars, no backtick in it, and no digit
// after it (so "$5 and $6" stays text), as pandoc reads it.
// Code spans and blocks are tokenized first and keep their dollars.
marked.use({
  extensions: [
    {
      name: "mathBlock",
      level: "block",
      start: (src) => src.indexOf("$$"),
      tokenizer(src) {
        const m = /^\$\$([\s\S]+?)\$\$[ \t]*(?:\n|$)/.exec(src);
        if (m) return { type: "mathBlock", raw: m[0], text: m[1].trim() };
      },
      renderer: (t) => mathSpan(t.text, true, "$$" + t.text + "$$") + "\n",
    },
    {
      name: "mathInline",
      level: "inline",
      start: (src) => src.indexOf("$"),
      tokenizer(src) {
        let m = /^\$\$([\s\S]+?)\$\$/.exec(src);
        if (m) return { type: "mathInline", raw: m[0], text: m[1].trim(), display: true };
        m = /^\$(?!\s)((?:\\.|[^\\$\n`])+?)(?<!\s)\$(?!\d)/.exec(src);
        if (m) return { type: "mathInline", raw: m[0], text: m[1], display: false };
      },
      renderer: (t) => mathSpan(t.text, t.display, t.raw),
    },
  ],
});

// LATEX_PARTS finds the math in a text/latex value: $$…$$, \[…\], $…$,
// \(…\) and \begin{env}…\end{env}, as MathJax would in JupyterLab.
const LATEX_PARTS = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\$((?:\\.|[^\\$])+?)\$|\\\(([\s\S]+?)\\\)|(\\begin\{([a-zA-Z*]+)\}[\s\S]*?\\end\{\6\})/g;

// latexOutput renders a text/latex value: the text between math as text,
// the math by KaTeX; without KaTeX, the source as it is (its text is the
// value, shown as code), until typeset runs.
function latexOutput(src) {
  const d = el("div", "mime-latex math-source");
  let at = 0;
  for (const m of src.matchAll(LATEX_PARTS)) {
    if (m.index > at) d.append(document.createTextNode(src.slice(at, m.index)));
    const display = m[1] !== undefined || m[2] !== undefined || m[5] !== undefined;
    const tex = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5];
    const box = el(display ? "div" : "span", "math math-" + (display ? "display" : "inline"), m[0]);
    box.dataset.tex = tex;
    d.append(box);
    at = m.index + m[0].length;
  }
  if (at === 0) {
    // No delimiters: the whole value is math (IPython's Math and Latex
    // objects without $ are shown so by JupyterLab's MathJax too).
    const box = el("div", "math math-display", src);
    box.dataset.tex = src.trim();
    d.append(box);
  } else if (at < src.length) d.append(document.createTextNode(src.slice(at)));
  typeset(d);
  return d;
}

// --- styled HTML ------------------------------------------------------------

// SCOPED_CSS is the page's look for what is inside an HTML output's shadow
// root (the page's own rules do not reach in); the output's own <style>
// elements come after it and win.
const SCOPED_CSS = [
  ":host{display:block}",
  "*{box-sizing:border-box}",
  "table{border-collapse:collapse;font-size:12px;margin:2px 0}",
  "th,td{border:1px solid var(--border);padding:2px 6px;text-align:right}",
  "thead th,tbody th{background:var(--bg-code)}",
  "img,svg{max-width:100%;height:auto}",
  "pre,code{font-family:var(--mono);font-size:13px}",
  "pre{margin:0;white-space:pre-wrap;word-break:break-word}",
  "a{color:var(--accent)}",
].join("");

// htmlOutput shows kernel HTML in a shadow root of its own, so that its
// <style> (a pandas Styler's #T_… rules, scikit-learn's diagram) styles it
// and nothing else: selectors in a shadow root match only inside it, and
// the page's rules do not reach in either. The output box it sits in
// (.output[data-mime]) contains paint and is the containing block of
// what is positioned in it, so nothing in it, position: fixed included, is
// drawn outside it, whatever the shadow's :host rules do to the host (see
// style.css).
function htmlOutput(html) {
  const host = el("div", "mime-html");
  const shadow = host.attachShadow({ mode: "open" });
  const { html: body, css } = sanitizeScopedHTML(html);
  shadow.innerHTML = body;
  shadow.prepend(...[SCOPED_CSS, ...css].map((text) => el("style", "", text)));
  return host;
}

const ansi = new AnsiUp();
ansi.use_classes = true;

/** ansiToHTML turns terminal text into escaped HTML with colour spans. */
export function ansiToHTML(text) {
  return ansi.ansi_to_html(text);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// bundleText reads one MIME value: nbformat allows a list of lines.
function bundleText(v) {
  if (Array.isArray(v)) return v.join("");
  if (typeof v === "string") return v;
  return v == null ? "" : JSON.stringify(v);
}

// carriage applies \r the way a terminal does: text after a bare \r
// overwrites its line (progress bars).
function carriage(text) {
  if (!text.includes("\r")) return text;
  return text
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => {
      const i = line.lastIndexOf("\r");
      return i < 0 ? line : line.slice(i + 1);
    })
    .join("\n");
}

/** isWait reports whether a clear_output waits for the next output. */
function isWait(o) {
  return o.wait === true || (o.metadata && o.metadata.wait === true);
}

// displayID is the display id an output carries (Jupyter's transient).
function displayID(o) {
  return (o.transient && o.transient.display_id) || "";
}

/**
 * OutputList keeps a cell's outputs as a notebook shows them: consecutive
 * streams of the same name merged, clear_output applied (with wait, at the
 * next output, as JupyterLab does: the outputs stay until then, so the cell
 * never shows empty in between), update_display_data applied to every
 * output with its display id (in place; an update naming no output shown
 * is dropped, as in JupyterLab).
 */
export class OutputList {
  constructor() {
    this.items = [];
    this.pendingClear = false;
    // updated holds the indices of items the last add replaced in place.
    this.updated = new Set();
  }

  /**
   * add applies outputs in arrival order. It returns the index of the first
   * item that is not as it was (items.length before the call when only new
   * items came), updates in place aside: updated lists those.
   */
  add(outputs) {
    let first = this.items.length;
    const reset = () => {
      first = 0;
    };
    this.updated = new Set();
    for (const o of outputs || []) {
      if (!o || !o.output_type) continue;
      if (o.output_type === "update_display_data") {
        const id = displayID(o);
        this.items.forEach((it, i) => {
          if (id && displayID(it) === id) {
            this.items[i] = { ...it, data: o.data, metadata: o.metadata };
            this.updated.add(i);
          }
        });
        continue;
      }
      if (o.output_type === "clear_output") {
        if (isWait(o)) this.pendingClear = true;
        else {
          this.items = [];
          this.pendingClear = false;
          reset();
        }
        continue;
      }
      if (this.pendingClear) {
        this.items = [];
        this.pendingClear = false;
        reset();
      }
      const last = this.items[this.items.length - 1];
      if (o.output_type === "stream" && last && last.output_type === "stream" && last.name === o.name) {
        this.items[this.items.length - 1] = { ...last, text: last.text + bundleText(o.text) };
        first = Math.min(first, this.items.length - 1);
        continue;
      }
      this.items.push(o.output_type === "stream" ? { ...o, text: bundleText(o.text) } : o);
    }
    return first;
  }
}

function dataURL(mime, b64) {
  return "data:" + mime + ";base64," + String(b64).replace(/\s+/g, "");
}

function utf8Base64(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** markdown renders markdown, its math typeset when KaTeX is there. */
export function markdown(text) {
  const d = el("div", "mime-markdown");
  d.innerHTML = sanitizeHTML(marked.parse(text, { async: false }));
  typeset(d);
  return d;
}

function renderMime(mime, value, metadata) {
  switch (mime) {
    case "text/html":
      return htmlOutput(bundleText(value));
    case "image/svg+xml": {
      // An SVG shown as an image cannot run script even if one slipped
      // through, and its ids and styles stay out of the page.
      const img = el("img", "mime-image mime-svg");
      img.alt = "SVG output";
      img.src = "data:image/svg+xml;base64," + utf8Base64(sanitizeSVG(bundleText(value)));
      return img;
    }
    case "image/png":
    case "image/jpeg":
    case "image/gif": {
      const img = el("img", "mime-image");
      img.alt = mime + " output";
      img.src = dataURL(mime, bundleText(value));
      const m = metadata && metadata[mime];
      if (m && m.width) img.width = m.width;
      if (m && m.height) img.height = m.height;
      return img;
    }
    case "text/markdown":
      return markdown(bundleText(value));
    case "text/latex":
      return latexOutput(bundleText(value));
    case "application/json": {
      let v = value;
      if (typeof v === "string") {
        try {
          v = JSON.parse(v);
        } catch {
          /* shown as the string it is */
        }
      }
      return el("pre", "mime-json", typeof v === "string" ? v : JSON.stringify(v, null, 2));
    }
    default: {
      const pre = el("pre", "mime-text");
      pre.innerHTML = ansiToHTML(bundleText(value));
      return pre;
    }
  }
}

// BOKEH_NOTE says where to see a Bokeh plot, since the views do not draw it.
const BOKEH_NOTE =
  "Interactive Bokeh plots are not drawn here (BokehJS is not in this view). " +
  'To see it, save it as a page with bokeh.io.save(p, "plot.html") and open that file, ' +
  'or as an image with bokeh.io.export_png(p, filename="plot.png").';

// bokehPlaceholder stands for the plot of a Bokeh show() display: what it
// is, where to see it, and the bundle's still image if it has one.
function bokehPlaceholder(b, data, metadata) {
  const box = el("div", "bokeh-placeholder");
  box.append(el("div", "bokeh-label", bokehLabel(b)), el("div", "bokeh-note", BOKEH_NOTE));
  const still = ["image/png", "image/jpeg", "image/svg+xml"].find((m) => m in data);
  if (still) box.append(renderMime(still, data[still], metadata));
  return box;
}

export const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";

// widgetRenderer draws a widget view, in a view that has live widgets
// (the web view sets it; see widgets.js): (view, fallback) → Element, view
// being the output's WIDGET_MIME value and fallback() the element of what
// else the output holds. Without it the output's text/plain stands for it.
let widgetRenderer = null;

/** setWidgetRenderer sets how this view draws widget views. */
export function setWidgetRenderer(fn) {
  widgetRenderer = fn;
}

/** renderOutput returns the element for one output (not clear_output). */
export function renderOutput(o) {
  const wrap = el("div", "output output-" + o.output_type);
  switch (o.output_type) {
    case "stream": {
      wrap.classList.add("stream-" + (o.name || "stdout"));
      const pre = el("pre");
      pre.innerHTML = ansiToHTML(carriage(bundleText(o.text)));
      wrap.append(pre);
      break;
    }
    case "error": {
      wrap.dataset.ename = o.ename || "";
      const pre = el("pre", "traceback");
      const tb = Array.isArray(o.traceback) ? o.traceback.join("\n") : bundleText(o.traceback);
      pre.innerHTML = ansiToHTML(tb || `${o.ename || "Error"}: ${o.evalue || ""}`);
      wrap.append(pre);
      break;
    }
    case "display_data":
    case "execute_result":
    case "update_display_data": {
      const data = o.data || {};
      // A chart (Plotly, Vega-Lite, Vega, Altair's HTML) before anything
      // else the bundle has: charts.js draws it, interactive.
      if (widgetRenderer && WIDGET_MIME in data) {
        wrap.dataset.mime = WIDGET_MIME;
        const rest = { ...data };
        delete rest[WIDGET_MIME];
        wrap.append(widgetRenderer(data[WIDGET_MIME], () => renderOutput({ ...o, data: rest }).firstChild || el("span")));
        break;
      }
      const chart = chartOf(data);
      if (chart) {
        wrap.dataset.mime = chart.mime;
        const still = MIME_ORDER.find((m) => m in data && m.startsWith("image/"));
        wrap.append(renderChart(chart, still && (() => renderMime(still, data[still], o.metadata))));
        break;
      }
      // Bokeh: BokehJS is not here. Its plot's display says what the plot
      // is and where to see it; the empty <div> it would draw into is not
      // shown (an empty box), and output_notebook()'s loader says it did not load.
      const bokeh = bokehOf(data);
      if (bokeh) {
        wrap.dataset.mime = "application/vnd.bokehjs_exec.v0+json";
        wrap.append(bokehPlaceholder(bokeh, data, o.metadata));
        break;
      }
      const html = bundleText(data["text/html"]);
      if ((isBokehRoot(html) || isBokehLoading(html)) && Object.keys(data).every((m) => m === "text/html" || m === "text/plain")) {
        wrap.classList.add("output-bokeh-root");
        wrap.hidden = true;
        break;
      }
      if (BOKEH_LOAD in data) {
        wrap.append(el("pre", "mime-none", "[BokehJS, which output_notebook() loads, is not loaded in this view: Bokeh plots show as a note]"));
        break;
      }
      const mime = MIME_ORDER.find((m) => m in data) || Object.keys(data).find((m) => m.startsWith("text/"));
      if (!mime) {
        wrap.append(el("pre", "mime-none", "[output of type " + (Object.keys(data).join(", ") || "none") + " not shown]"));
        break;
      }
      wrap.dataset.mime = mime;
      wrap.append(renderMime(mime, data[mime], o.metadata));
      break;
    }
    default:
      wrap.append(el("pre", "mime-none", "[" + o.output_type + "]"));
  }
  return wrap;
}

/** highlight returns escaped, highlighted HTML for code in a kernel language. */
export function highlight(code, language) {
  const lang = String(language || "").toLowerCase();
  const name = lang.startsWith("python") ? "python" : lang === "r" ? "r" : "";
  if (name) return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  const d = document.createElement("div");
  d.textContent = code;
  return d.innerHTML;
}

/** formatElapsed says how long a run took, briefly. */
export function formatElapsed(ms) {
  if (!(ms > 0)) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  const m = Math.floor(ms / 60000);
  return m + " min " + Math.round((ms % 60000) / 1000) + " s";
}

/**
 * CellView owns one cell's element. set() shows a whole cell; append()
 * adds live outputs (a view_run delta or an SSE run_output) without
 * redrawing what is already there. Callbacks: onInput(cell, text) and
 * onInterrupt(cell), both optional; without them the controls are not shown.
 */
export class CellView {
  constructor(opts = {}) {
    this.opts = opts;
    this.cell = null;
    this.outputs = new OutputList();
    this.root = el("div", "cell");
    this.head = el("div", "cell-head");
    this.codeBox = el("div", "cell-code");
    this.controls = el("div", "cell-controls");
    this.outBox = el("div", "cell-outputs");
    this.noteBox = el("div", "cell-note");
    this.root.append(this.head, this.codeBox, this.controls, this.outBox, this.noteBox);
    this.controls.hidden = true;
    this.shownCode = null;
    this.shownControls = "";
  }

  /** set shows cell, its outputs replacing the ones shown. */
  set(cell) {
    this.setMeta(cell);
    this.outputs = new OutputList();
    this.outputs.add(cell.outputs);
    this.drawOutputs();
  }

  /** setMeta shows everything of cell but its outputs. */
  setMeta(cell) {
    this.cell = { ...this.cell, ...cell };
    const c = this.cell;
    const status = c.status || "ok";
    this.root.dataset.runId = c.run_id || "";
    this.root.dataset.index = String(c.index ?? -1);
    this.root.dataset.status = status;
    this.root.classList.toggle("cell-live", isLive(status));
    this.root.classList.toggle("cell-by-person", c.by === "person");

    this.head.replaceChildren();
    const type = c.cell_type || "code";
    if (type === "code") {
      this.head.append(el("span", "cell-count", c.execution_count > 0 ? `[${c.execution_count}]` : "[ ]"));
    }
    this.head.append(el("span", "status status-" + status, status.replace("_", " ")));
    const elapsed = formatElapsed(c.elapsed_ms);
    if (elapsed) this.head.append(el("span", "cell-elapsed", elapsed));
    if (c.by === "person") this.head.append(el("span", "cell-by", "by the person"));
    if (c.task && isLive(status)) {
      const t = el("span", "cell-task", "task");
      t.title = "The client follows this run as an MCP task";
      this.head.append(t);
    }
    if (c.source) this.head.append(el("span", "cell-source", c.source));

    const code = c.code || "";
    const key = type + "\u0000" + (c.language || "") + "\u0000" + code;
    if (this.shownCode !== key) {
      this.shownCode = key;
      this.codeBox.replaceChildren();
      this.codeBox.hidden = code === "";
      if (type === "markdown") {
        this.codeBox.append(markdown(code));
      } else if (type === "raw") {
        this.codeBox.append(el("pre", "raw", code));
      } else {
        const pre = el("pre");
        const cd = el("code", "hljs");
        cd.innerHTML = highlight(code, c.language);
        pre.append(cd);
        this.codeBox.append(pre);
      }
    }

    this.drawControls();
    this.noteBox.textContent = c.note || "";
    this.noteBox.hidden = !c.note;
  }

  drawControls() {
    const c = this.cell;
    const status = c.status;
    const wantInput = status === "input_requested" && this.opts.onInput;
    const wantInterrupt = isLive(status) && this.opts.onInterrupt;
    const key = (wantInput ? "i" + (c.prompt || "") + (c.password ? "p" : "") : "") + (wantInterrupt ? "x" : "");
    if (key === this.shownControls) return;
    this.shownControls = key;
    this.controls.replaceChildren();
    this.controls.hidden = key === "";
    if (wantInput) {
      const form = el("form", "cell-input-form");
      const label = el("label", "cell-prompt", c.prompt || "input:");
      const input = el("input", "cell-input");
      input.type = c.password ? "password" : "text";
      input.autocomplete = "off";
      label.append(input);
      const send = el("button", "cell-input-send", "Send");
      send.type = "button";
      form.append(label, send);
      // No form submission: a sandboxed frame without allow-forms blocks it
      // and fires no submit event.
      const answer = (ev) => {
        ev.preventDefault();
        const text = input.value;
        input.disabled = send.disabled = true;
        Promise.resolve(this.opts.onInput(this.cell, text))
          .catch((err) => this.showError(err))
          .finally(() => {
            input.disabled = send.disabled = false;
          });
      };
      send.addEventListener("click", answer);
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") answer(ev);
      });
      form.addEventListener("submit", (ev) => ev.preventDefault());
      this.controls.append(form);
      if (this.opts.focusInput) queueMicrotask(() => input.focus());
    }
    if (wantInterrupt) {
      const b = el("button", "cell-interrupt", "Interrupt");
      b.type = "button";
      b.addEventListener("click", () => {
        b.disabled = true;
        Promise.resolve(this.opts.onInterrupt(this.cell))
          .catch((err) => this.showError(err))
          .finally(() => {
            b.disabled = false;
          });
      });
      this.controls.append(b);
    }
  }

  /** showError says, in the cell, that an action failed. */
  showError(err) {
    this.noteBox.hidden = false;
    this.noteBox.textContent = String((err && err.message) || err);
  }

  /** append adds live outputs in arrival order. */
  append(outputs) {
    const first = this.outputs.add(outputs);
    // Everything changes in this one task: the browser paints the result,
    // never a cell emptied by a clear that waited.
    while (this.outBox.children.length > first) this.outBox.lastElementChild.remove();
    for (const i of this.outputs.updated) {
      if (i < first) this.outBox.children[i].replaceWith(renderOutput(this.outputs.items[i]));
    }
    for (const o of this.outputs.items.slice(first)) this.outBox.append(renderOutput(o));
  }

  drawOutputs() {
    this.outBox.replaceChildren(...this.outputs.items.map(renderOutput));
  }
}
