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
import { chartOf, renderChart } from "./charts.js";

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

/** sanitizeHTML returns kernel HTML with no script, handler or javascript: URL. */
export function sanitizeHTML(html) {
  return DOMPurify.sanitize(html, { ADD_ATTR: ["target"], FORBID_TAGS: ["form", "input", "button", "textarea", "select"] });
}

/** sanitizeSVG returns an SVG document with the same guarantees. */
export function sanitizeSVG(svg) {
  return DOMPurify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } });
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

/**
 * OutputList keeps a cell's outputs as a notebook shows them: consecutive
 * streams of the same name merged, clear_output applied (with wait, at the
 * next output).
 */
export class OutputList {
  constructor() {
    this.items = [];
    this.pendingClear = false;
  }

  /**
   * add applies outputs in arrival order. It returns the index of the first
   * item that is not as it was (items.length before the call when only new
   * items came).
   */
  add(outputs) {
    let first = this.items.length;
    const reset = () => {
      first = 0;
    };
    for (const o of outputs || []) {
      if (!o || !o.output_type) continue;
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

function renderMime(mime, value, metadata) {
  switch (mime) {
    case "text/html": {
      const d = el("div", "mime-html");
      d.innerHTML = sanitizeHTML(bundleText(value));
      return d;
    }
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
    case "text/markdown": {
      const d = el("div", "mime-markdown");
      d.innerHTML = sanitizeHTML(marked.parse(bundleText(value), { async: false }));
      return d;
    }
    case "text/latex":
      return el("pre", "mime-latex", bundleText(value));
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
      const chart = chartOf(data);
      if (chart) {
        wrap.dataset.mime = chart.mime;
        const still = MIME_ORDER.find((m) => m in data && m.startsWith("image/"));
        wrap.append(renderChart(chart, still && (() => renderMime(still, data[still], o.metadata))));
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
    if (c.source) this.head.append(el("span", "cell-source", c.source));

    const code = c.code || "";
    const key = type + "\u0000" + (c.language || "") + "\u0000" + code;
    if (this.shownCode !== key) {
      this.shownCode = key;
      this.codeBox.replaceChildren();
      this.codeBox.hidden = code === "";
      if (type === "markdown") {
        const d = el("div", "mime-markdown");
        d.innerHTML = sanitizeHTML(marked.parse(code, { async: false }));
        this.codeBox.append(d);
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
    while (this.outBox.children.length > first) this.outBox.lastElementChild.remove();
    for (const o of this.outputs.items.slice(first)) this.outBox.append(renderOutput(o));
  }

  drawOutputs() {
    this.outBox.replaceChildren(...this.outputs.items.map(renderOutput));
  }
}
