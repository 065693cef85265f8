// Interactive charts in the views: Plotly figures drawn by plotly.js, and
// Vega-Lite and Vega specs (Altair's too) drawn by vega-embed. render.js asks
// chartOf() whether an output bundle holds a chart and renderChart() for its
// element. The libraries are big (plotly.js alone is 4.6 MB), so no view
// carries them: each view sets a loader (setChartLoader) that fetches a
// library's code from its own server (the cell view through the host bridge,
// the web view from /ui/charts/), and the code runs as an inline <script>,
// which the MCP Apps default CSP ('unsafe-inline', no blob:, no eval) and the
// web view's CSP allow. Nothing is fetched from elsewhere.
//
// Specs come from kernels and are untrusted: links a chart carries are
// neutralized unless http(s), and a Vega spec loads no data by URL.

const VEGALITE_RE = /^application\/vnd\.vegalite\.v(\d+)(\.\d+)*(\+json|\.json)$/;
const VEGA_RE = /^application\/vnd\.vega\.v(\d+)(\.\d+)*(\+json|\.json)$/;
export const PLOTLY_MIME = "application/vnd.plotly.v1+json";

function parseJSON(v) {
  if (typeof v === "string" || Array.isArray(v)) {
    try {
      return JSON.parse(Array.isArray(v) ? v.join("") : v);
    } catch {
      return null;
    }
  }
  return v && typeof v === "object" ? v : null;
}

// firstJSONValue parses the JSON object that text starts with (after
// blanks), ignoring what follows it: the spec in Altair's
// "(function(spec, embedOpt){...})({...}, {...});".
export function firstJSONValue(text) {
  let i = 0;
  while (i < text.length && /\s/.test(text[i])) i++;
  if (text[i] !== "{") return null;
  let depth = 0;
  let inString = false;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (inString) {
      if (c === "\\") j++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) {
        try {
          return JSON.parse(text.slice(i, j + 1));
        } catch {
          return null;
        }
      }
    }
  }
  return null;
}

const VEGALITE_SCHEMA_RE = /^https:\/\/vega\.github\.io\/schema\/vega-lite\/v(\d+)[.\d]*\.json$/;
const MAX_EMBEDDED_HTML = 64 << 20;

/**
 * altairSpec returns the Vega-Lite spec of Altair's default HTML output (a
 * script that would load vega-embed from a CDN and call it with the spec
 * inline), or null. The script is never run: its text is searched, as
 * outputtext/altair.go does on the server.
 */
export function altairSpec(html) {
  if (typeof html !== "string" || html.length > MAX_EMBEDDED_HTML || !html.includes("vegaEmbed(")) return null;
  // ("[s]cript": the view's bundle is inlined in a <script> element.)
  const scripts = html.split(/<[s]cript\b[^>]*>/i).slice(1).map((s) => s.split(/<\/[s]cript/i)[0]);
  for (const script of scripts) {
    if (!script.includes("vegaEmbed(")) continue;
    const i = script.lastIndexOf("})(");
    if (i < 0) continue;
    const spec = firstJSONValue(script.slice(i + 3));
    if (spec && typeof spec.$schema === "string" && VEGALITE_SCHEMA_RE.test(spec.$schema)) return spec;
  }
  return null;
}

/**
 * chartOf returns the chart an output bundle holds, as {kind, mime, spec}
 * with kind "plotly", "vega-lite" or "vega", or null.
 */
export function chartOf(data) {
  if (!data || typeof data !== "object") return null;
  const keys = Object.keys(data);
  if (PLOTLY_MIME in data) {
    const spec = parseJSON(data[PLOTLY_MIME]);
    if (spec && !Array.isArray(spec)) return { kind: "plotly", mime: PLOTLY_MIME, spec };
  }
  for (const [re, kind] of [[VEGALITE_RE, "vega-lite"], [VEGA_RE, "vega"]]) {
    const mime = keys.find((k) => re.test(k));
    if (!mime) continue;
    const spec = parseJSON(data[mime]);
    if (spec && !Array.isArray(spec)) return { kind, mime, spec };
  }
  if ("text/html" in data) {
    const html = data["text/html"];
    const spec = altairSpec(Array.isArray(html) ? html.join("") : html);
    if (spec) return { kind: "vega-lite", mime: "text/html", spec };
  }
  return null;
}

// ---- sanitizing ----

/** isWebURL reports whether s is an absolute http(s) URL. */
export function isWebURL(s) {
  return typeof s === "string" && /^https?:\/\/[^\s]/i.test(s.trim());
}

// plotly.js draws a subset of HTML in its text (labels, titles, hover):
// <a href>, <b>, <i>, <br>, <sub>, <sup>, <span style>, <em>, <s>, <u>, and
// <extra> in hover templates.
// cleanLabel keeps that subset and drops any other tag, and keeps an
// anchor's href only when it is http(s).
const PLOTLY_TAGS = new Set(["a", "b", "i", "em", "br", "sub", "sup", "span", "s", "u", "extra"]);
export function cleanLabel(s) {
  if (!s.includes("<")) return s;
  return s.replace(/<\s*(\/?)\s*([a-zA-Z][\w-]*)([^>]*)>/g, (all, close, tag, attrs) => {
    tag = tag.toLowerCase();
    if (!PLOTLY_TAGS.has(tag)) return "";
    if (close) return "</" + tag + ">";
    if (tag === "a") {
      const m = /\bhref\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(attrs);
      const href = m ? m[2] ?? m[3] ?? m[4] : "";
      const target = /\btarget\s*=\s*["']?_blank/i.test(attrs);
      return isWebURL(href) ? '<a href="' + href.replace(/["<>]/g, "") + '"' + (target ? ' target="_blank"' : "") + ">" : "<a>";
    }
    if (tag === "span") {
      const m = /\bstyle\s*=\s*("([^"]*)"|'([^']*)')/i.exec(attrs);
      const style = m ? (m[2] ?? m[3]).replace(/url\s*\(|expression\s*\(|["<>]/gi, "") : "";
      return style ? '<span style="' + style + '">' : "<span>";
    }
    return "<" + tag + ">";
  });
}

// cleanValue walks a figure, cleaning every string; depth-bounded.
function cleanValue(v, depth) {
  if (typeof v === "string") return cleanLabel(v);
  if (!v || typeof v !== "object" || depth > 64) return v;
  if (Array.isArray(v)) return v.map((x) => cleanValue(x, depth + 1));
  if (ArrayBuffer.isView(v)) return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) out[k] = cleanValue(x, depth + 1);
  return out;
}

/**
 * plotlyFigure returns {data, layout, config} to plot: labels cleaned
 * (see cleanLabel), images only from data: URLs, and a config that sends
 * nothing anywhere (no Chart Studio link, no map tiles, no topojson by URL).
 */
export function plotlyFigure(fig) {
  const data = Array.isArray(fig.data) ? cleanValue(fig.data, 0) : [];
  const layout = fig.layout && typeof fig.layout === "object" ? cleanValue(fig.layout, 0) : {};
  if (Array.isArray(layout.images)) {
    layout.images = layout.images.filter((im) => im && typeof im.source === "string" && /^data:image\//i.test(im.source));
  }
  delete layout.template?.layout?.images;
  const config = {
    responsive: true,
    displaylogo: false,
    showLink: false,
    showEditInChartStudio: false,
    showSendToCloud: false,
    sendData: false,
    plotlyServerURL: "",
    linkText: "",
    topojsonURL: "data:,",
    mapboxAccessToken: "",
    typesetMath: false,
  };
  return { data, layout, config };
}

const refusal = (uri) => new Error("the chart names " + String(uri).slice(0, 100) + ", which is not loaded: only data inside the spec is drawn");

/**
 * vegaLoader makes a Vega loader (from vega.loader) that fetches nothing:
 * data by URL is refused; a link (href) is kept only when http(s), and
 * opens in a new tab; an image only from a data: URL. The URLs of data
 * refused are pushed on refused.
 */
export function vegaLoader(vega, refused = []) {
  const loader = vega.loader();
  const refuse = async (uri) => {
    refused.push(String(uri));
    throw refusal(uri);
  };
  loader.load = refuse;
  loader.http = refuse;
  loader.file = refuse;
  loader.sanitize = async (uri, options) => {
    const context = options && options.context;
    if (context === "href" && isWebURL(uri)) return { href: String(uri).trim(), target: "_blank", rel: "noopener noreferrer" };
    if (context === "image" && typeof uri === "string" && /^data:image\//i.test(uri)) return { href: uri };
    if (context !== "href") refused.push(String(uri));
    throw refusal(uri);
  };
  return loader;
}

/** vegaSpec drops what a spec may say to vega-embed (usermeta.embedOptions). */
export function vegaSpec(spec) {
  if (!spec.usermeta || typeof spec.usermeta !== "object") return spec;
  const usermeta = { ...spec.usermeta };
  delete usermeta.embedOptions;
  return { ...spec, usermeta };
}

// ---- loading the libraries ----

let loadCode = null;
const libs = new Map();

/**
 * setChartLoader sets how the view gets a library's code: fn(name) for
 * name "plotly" or "vega" resolves to the script's text.
 */
export function setChartLoader(fn) {
  loadCode = fn;
  libs.clear();
}

// The bundles (ui/src/chartlib-*.js) set these globals on the window their
// script runs in.
// (katex, which is no chart library, is loaded the same way by the cell
// view when math appears; widgets by the web view for its live widgets.)
const GLOBALS = { plotly: "__kmPlotly", vega: "__kmVega", katex: "__kmKatex", widgets: "__kmWidgets" };
const win = () => (typeof window !== "undefined" ? window : globalThis);

/** loadLibrary runs a library's code once and resolves to what it exports. */
export function loadLibrary(name) {
  if (!libs.has(name)) {
    const p = (async () => {
      if (win()[GLOBALS[name]]) return win()[GLOBALS[name]];
      if (!loadCode) throw new Error("this view cannot load the chart library");
      const t0 = performance.now();
      const code = await loadCode(name);
      const t1 = performance.now();
      const s = document.createElement("script");
      s.textContent = code;
      document.head.append(s);
      s.remove();
      // How long fetching and running took, for the browser tests' figures.
      performance.measure?.("kernel-mcp chart library " + name + ": fetch", { start: t0, end: t1 });
      performance.measure?.("kernel-mcp chart library " + name + ": run", { start: t1, end: performance.now() });
      const lib = win()[GLOBALS[name]];
      if (!lib) throw new Error("the chart library " + name + " did not load (blocked by the page's Content-Security-Policy?)");
      return lib;
    })();
    p.catch(() => libs.delete(name));
    libs.set(name, p);
  }
  return libs.get(name);
}

// connected resolves once el is in the document (plotly.js measures it).
async function connected(el) {
  for (let i = 0; i < 600 && !el.isConnected; i++) await new Promise((r) => setTimeout(r, 50));
}

// draw draws chart in box; it resolves to a note for the person, or "".
async function draw(box, chart) {
  await connected(box);
  if (chart.kind === "plotly") {
    const Plotly = await loadLibrary("plotly");
    const fig = plotlyFigure(chart.spec);
    await Plotly.newPlot(box, fig.data, fig.layout, fig.config);
    return "";
  }
  const { vega, embed, expressionInterpreter } = await loadLibrary("vega");
  const refused = [];
  await embed(box, vegaSpec(chart.spec), {
    mode: chart.kind,
    renderer: "svg",
    loader: vegaLoader(vega, refused),
    ast: true,
    expr: expressionInterpreter,
    actions: { export: true, source: false, compiled: false, editor: false },
    logLevel: vega.Error,
  });
  return refused.length ? "data at " + refused[0].slice(0, 100) + " is not loaded: only data inside the chart is drawn" : "";
}

/**
 * renderChart returns the element for a chart at once, and draws the
 * chart in it when its library has loaded; the element's dataset.chart
 * says how that went ("loading", "drawn" or "failed").
 */
export function renderChart(chart, fallback) {
  const wrap = document.createElement("div");
  wrap.className = "mime-chart chart-" + chart.kind;
  wrap.dataset.chart = "loading";
  const box = document.createElement("div");
  box.className = "chart-box";
  const note = document.createElement("div");
  note.className = "chart-note";
  note.textContent = "loading the chart…";
  wrap.append(box, note);
  draw(box, chart).then(
    (msg) => {
      wrap.dataset.chart = "drawn";
      if (msg) note.textContent = msg;
      else note.remove();
    },
    (err) => {
      wrap.dataset.chart = "failed";
      note.textContent = "the chart could not be drawn: " + String((err && err.message) || err);
      box.replaceChildren();
      if (fallback) box.append(fallback());
    },
  );
  return wrap;
}

// ---- Bokeh: not drawn, said ----

// BokehJS is not in the views (nor loaded: Bokeh's own output would run
// its script and fetch BokehJS from a CDN). show() after output_notebook()
// sends a text/html display holding only the empty <div> BokehJS would
// draw into, then a display of BOKEH_EXEC with the script that embeds the
// plot's document; output_notebook() itself sends BOKEH_LOAD.
export const BOKEH_EXEC = "application/vnd.bokehjs_exec.v0+json";
export const BOKEH_LOAD = "application/vnd.bokehjs_load.v0+json";

/** isBokehRoot reports whether html is only the empty <div> BokehJS draws a plot into. */
export function isBokehRoot(html) {
  return typeof html === "string" && html.length < 1000 && /^\s*<div\b[^>]*\bdata-root-id="[^"]*"[^>]*>\s*<\/div>\s*$/i.test(html);
}

/**
 * isBokehLoading reports whether html is output_notebook()'s "Loading
 * BokehJS ..." banner, which BokehJS would replace once loaded: here it
 * never loads, and the BOKEH_LOAD display beside it says so.
 */
export function isBokehLoading(html) {
  return typeof html === "string" && html.length < 50000 && html.includes("bk-notebook-logo") && /Loading BokehJS \.\.\./.test(html);
}

/**
 * bokehOf returns what a Bokeh show() display says of its plot, as
 * {kind, title, glyphs}, or null when data is not one. It reads the
 * document JSON out of the script's text ("const docs_json = {...};"), as
 * outputtext/bokeh.go does for the model, and never runs it; a bundle
 * whose script cannot be read is {kind: "", title: "", glyphs: []}.
 */
export function bokehOf(data) {
  if (!data || typeof data !== "object" || !(BOKEH_EXEC in data)) return null;
  const out = { kind: "", title: "", glyphs: [] };
  let js = data["application/javascript"];
  js = Array.isArray(js) ? js.join("") : js;
  if (typeof js !== "string" || js.length > MAX_EMBEDDED_HTML) return out;
  const i = js.indexOf("docs_json = ");
  const docs = i >= 0 ? firstJSONValue(js.slice(i + 12)) : null;
  const doc = docs && Object.values(docs)[0];
  const root = doc && Array.isArray(doc.roots) && doc.roots[0];
  if (!root || typeof root !== "object") return out;
  out.kind = typeof root.name === "string" ? root.name : "";
  const t = root.attributes && root.attributes.title;
  out.title = typeof t === "string" ? t : t && t.attributes && typeof t.attributes.text === "string" ? t.attributes.text : "";
  // The glyphs of its renderers (Line, Scatter, VBar…), in a bounded walk.
  const seen = new Set();
  let budget = 20000;
  const walk = (v, depth) => {
    if (!v || typeof v !== "object" || depth > 40 || --budget < 0) return;
    if (Array.isArray(v)) return v.forEach((x) => walk(x, depth + 1));
    if (v.name === "GlyphRenderer" && v.attributes && v.attributes.glyph && typeof v.attributes.glyph.name === "string") seen.add(v.attributes.glyph.name);
    for (const x of Object.values(v)) walk(x, depth + 1);
  };
  walk(root, 0);
  out.glyphs = [...seen].slice(0, 8);
  return out;
}

/** bokehLabel is the line that names a Bokeh plot: 'Bokeh plot "rise" (line, scatter)'. */
export function bokehLabel(b) {
  const kind = !b.kind || b.kind === "Figure" ? "plot" : b.kind.toLowerCase();
  let s = "Bokeh " + kind;
  if (b.title) s += " \u201c" + b.title.slice(0, 200) + "\u201d";
  if (b.glyphs.length) s += " (" + b.glyphs.map((g) => g.toLowerCase()).join(", ") + ")";
  return s;
}
