// Charts in the views (src/charts.js): which outputs are charts, Altair's
// HTML read without running it, what is cleaned out of a Plotly figure and
// a Vega spec, and how a library is loaded and a chart drawn (with a stand-in
// library: the real ones are drawn in the browser tests).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as vega from "vega";
import { loadRenderer } from "./dom.mjs";

const { window: w, render } = await loadRenderer();
const charts = await import("../src/charts.js");
const { chartOf, altairSpec, cleanLabel, plotlyFigure, vegaLoader, vegaSpec, setChartLoader, renderChart } = charts;

const vlSpec = { $schema: "https://vega.github.io/schema/vega-lite/v6.1.0.json", data: { values: [{ a: 1 }] }, mark: "point", encoding: { x: { field: "a", type: "quantitative" } } };
const altairHTML = `<style>#altair-viz-1 { }</style><div id="altair-viz-1"></div><script type="text/javascript">
  var VEGA_DEBUG = (typeof VEGA_DEBUG == "undefined") ? {} : VEGA_DEBUG;
  (function(spec, embedOpt){
    let outputDiv = document.currentScript.previousElementSibling;
    function showError(err){ outputDiv.innerHTML = '<div class="error" style="color:red;">' + err + '</div>'; }
    const deps = ["vega", "vega-lite", "vega-embed"];
    loadScript("https://cdn.jsdelivr.net/npm/vega@5").then(() => vegaEmbed(outputDiv, spec, embedOpt));
  })(${JSON.stringify({ ...vlSpec, title: 'a } tricky " title' })}, {"mode": "vega-lite"});
</script>`;

test("chartOf finds Plotly, Vega-Lite (v5, v6 .json), Vega and Altair's HTML, in that order over the rest", () => {
  assert.equal(chartOf({ "application/vnd.plotly.v1+json": { data: [] }, "text/html": "<div></div>" }).kind, "plotly");
  assert.equal(chartOf({ "application/vnd.vegalite.v5+json": vlSpec }).kind, "vega-lite");
  const v6 = chartOf({ "application/vnd.vegalite.v6.json": JSON.stringify(vlSpec), "text/plain": "alt.Chart(...)" });
  assert.equal(v6.kind, "vega-lite");
  assert.equal(v6.mime, "application/vnd.vegalite.v6.json");
  assert.deepEqual(v6.spec, vlSpec);
  assert.equal(chartOf({ "application/vnd.vega.v6+json": { marks: [] } }).kind, "vega");
  const alt = chartOf({ "text/html": altairHTML, "text/plain": "alt.Chart(...)" });
  assert.equal(alt.kind, "vega-lite");
  assert.equal(alt.spec.title, 'a } tricky " title');
  assert.equal(chartOf({ "text/html": "<p>vegaEmbed( is just text</p>" }), null);
  assert.equal(chartOf({ "text/plain": "x" }), null);
  assert.equal(chartOf({ "application/vnd.plotly.v1+json": "not json" }), null);
});

test("altairSpec takes only a Vega-Lite spec, and never runs the script", () => {
  assert.equal(altairSpec(altairHTML.replace("vega-lite/v6.1.0", "vega/v6")), null);
  w.__pwned = undefined;
  assert.ok(altairSpec(altairHTML.replace("var VEGA_DEBUG", "window.__pwned = 1; var VEGA_DEBUG")));
  assert.equal(w.__pwned, undefined);
});

test("an output bundle with a chart renders as a chart, not as a MIME type not shown", () => {
  setChartLoader(async () => {
    throw new Error("no library here");
  });
  const el = render.renderOutput({ output_type: "display_data", data: { "application/vnd.plotly.v1+json": { data: [] }, "image/png": "iVBORw0KGgo=" } });
  assert.equal(el.dataset.mime, "application/vnd.plotly.v1+json");
  assert.ok(el.querySelector(".mime-chart.chart-plotly"));
  assert.ok(!el.textContent.includes("not shown"));
});

test("Plotly labels keep plotly's HTML subset, lose other tags and javascript: links", () => {
  assert.equal(cleanLabel("plain < text"), "plain < text");
  assert.equal(cleanLabel("<b>bold</b><br>x<sup>2</sup>"), "<b>bold</b><br>x<sup>2</sup>");
  assert.equal(cleanLabel('<img src=x onerror="window.__pwned=1">caption'), "caption");
  assert.equal(cleanLabel('<a href="javascript:window.__pwned=1">go</a>'), "<a>go</a>");
  assert.equal(cleanLabel("<a href='JaVaScRiPt:alert(1)' target=_blank>go</a>"), "<a>go</a>");
  assert.equal(cleanLabel('<a href="https://example.org/x?a=1">ok</a>'), '<a href="https://example.org/x?a=1">ok</a>');
  assert.equal(cleanLabel('<span style="color:red;background:url(javascript:x)" onclick="y">s</span>'), '<span style="color:red;background:javascript:x)">s</span>');
  assert.equal(cleanLabel("%{x}<extra></extra>"), "%{x}<extra></extra>");
  assert.equal(cleanLabel("<svg onload=alert(1)><script>alert(1)</script>"), "alert(1)");
});

test("plotlyFigure cleans every string, drops images by URL, and sends nothing anywhere", () => {
  const fig = plotlyFigure({
    data: [{ x: [1], y: [2], name: '<a href="javascript:x">t</a>', text: ["<img src=x onerror=y>p"], marker: { color: [1] } }],
    layout: { title: { text: "<b>T</b>" }, images: [{ source: "https://tracker.example/i.png" }, { source: "data:image/png;base64,AAAA" }] },
    config: { plotlyServerURL: "https://evil.example", showLink: true },
  });
  assert.equal(fig.data[0].name, "<a>t</a>");
  assert.deepEqual(fig.data[0].text, ["p"]);
  assert.equal(fig.layout.title.text, "<b>T</b>");
  assert.deepEqual(fig.layout.images.map((i) => i.source), ["data:image/png;base64,AAAA"]);
  assert.equal(fig.config.showLink, false);
  assert.equal(fig.config.plotlyServerURL, "");
});

test("the Vega loader loads no URL and keeps only http(s) links", async () => {
  const refused = [];
  const l = vegaLoader(vega, refused);
  await assert.rejects(l.load("https://example.org/data.csv"));
  await assert.rejects(l.load("data.csv"));
  await assert.rejects(l.sanitize("javascript:window.__pwned=1", { context: "href" }));
  await assert.rejects(l.sanitize(" JAVASCRIPT:x", { context: "href" }));
  await assert.rejects(l.sanitize("https://example.org/d.json", { context: "dataflow" }));
  await assert.rejects(l.sanitize("https://example.org/i.png", { context: "image" }));
  assert.deepEqual(await l.sanitize("https://example.org/", { context: "href" }), { href: "https://example.org/", target: "_blank", rel: "noopener noreferrer" });
  assert.equal((await l.sanitize("data:image/png;base64,AA", { context: "image" })).href, "data:image/png;base64,AA");
  assert.ok(refused.includes("https://example.org/data.csv") && !refused.some((u) => u.includes("javascript")), JSON.stringify(refused));
  const spec = vegaSpec({ ...vlSpec, usermeta: { embedOptions: { ast: false, loader: { baseURL: "https://evil.example" } }, keep: 1 } });
  assert.deepEqual(spec.usermeta, { keep: 1 });
});

test("a library is loaded once, as an inline script, and the chart drawn with it", async () => {
  let loads = 0;
  setChartLoader(async (name) => {
    loads++;
    assert.equal(name, "plotly");
    return "window.__kmPlotly = { newPlot: async (el, data, layout, config) => { el.dataset.traces = String(data.length); el.dataset.link = String(config.showLink); } };";
  });
  const a = renderChart({ kind: "plotly", spec: { data: [{}, {}, {}] } });
  const b = renderChart({ kind: "plotly", spec: { data: [{}] } });
  w.document.body.append(a, b);
  for (let i = 0; i < 100 && (a.dataset.chart === "loading" || b.dataset.chart === "loading"); i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(a.dataset.chart, "drawn");
  assert.equal(b.dataset.chart, "drawn");
  assert.equal(a.querySelector(".chart-box").dataset.traces, "3");
  assert.equal(a.querySelector(".chart-box").dataset.link, "false");
  assert.equal(loads, 1);
  assert.equal(w.document.querySelectorAll("script").length, 0, "the script element is removed once run");
});

test("a library that fails to load leaves a note and the still image", async () => {
  setChartLoader(async () => {
    throw new Error("no such resource");
  });
  const el = render.renderOutput({ output_type: "display_data", data: { "application/vnd.vegalite.v6+json": vlSpec, "image/png": "iVBORw0KGgo=" } });
  w.document.body.append(el);
  const wrap = el.querySelector(".mime-chart");
  for (let i = 0; i < 100 && wrap.dataset.chart === "loading"; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(wrap.dataset.chart, "failed");
  assert.match(wrap.textContent, /could not be drawn: no such resource/);
  assert.ok(wrap.querySelector("img.mime-image"));
});

// Bokeh's show() output (outputtext/testdata: Bokeh 3.9, as a kernel sent it).
const { readFileSync } = await import("node:fs");
const bokehData = (name) => JSON.parse(readFileSync(new URL("../../outputtext/testdata/" + name + ".json", import.meta.url), "utf8"));

test("a Bokeh plot is a placeholder that says what it is and where to see it, never an empty box", () => {
  const line = charts.bokehOf(bokehData("bokeh_line"));
  assert.equal(line.kind, "Figure");
  assert.ok(line.glyphs.includes("Line"), JSON.stringify(line));
  const el = render.renderOutput({ output_type: "display_data", data: bokehData("bokeh_line"), metadata: {} });
  const text = el.textContent;
  assert.match(text, /^Bokeh plot/);
  if (line.title) assert.ok(text.includes(line.title), text);
  assert.match(text, /not drawn here/);
  assert.match(text, /bokeh\.io\.save/);
  assert.match(text, /export_png/);
  assert.equal(el.querySelector("script"), null);
  const grid = render.renderOutput({ output_type: "display_data", data: bokehData("bokeh_grid"), metadata: {} });
  assert.match(grid.textContent, /^Bokeh gridplot/);
  // With a still image, the image too.
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  const withPNG = render.renderOutput({ output_type: "display_data", data: { ...bokehData("bokeh_line"), "image/png": png }, metadata: {} });
  assert.ok(withPNG.querySelector(".bokeh-placeholder img"));
  // A script that cannot be read still gives the placeholder.
  const bare = render.renderOutput({ output_type: "display_data", data: { "application/vnd.bokehjs_exec.v0+json": "" }, metadata: {} });
  assert.match(bare.textContent, /^Bokeh plot.*not drawn here/);
  // The empty <div> BokehJS would draw into is not shown.
  const root = render.renderOutput({ output_type: "display_data", data: { "text/html": '\n  <div id="a7ce4de8" data-root-id="p1008" style="display: contents;"></div>\n' }, metadata: {} });
  assert.equal(root.hidden, true);
  const banner = '<style>.bk-notebook-logo { display: block; }</style><div class="bk-root"><a href="https://bokeh.org" target="_blank" class="bk-notebook-logo"></a><span id="p1001">Loading BokehJS ...</span></div>';
  assert.equal(render.renderOutput({ output_type: "display_data", data: { "text/html": banner }, metadata: {} }).hidden, true, "output_notebook()'s banner");
  // output_notebook()'s loader says BokehJS is not loaded here.
  const load = render.renderOutput({ output_type: "display_data", data: { "application/javascript": "x", "application/vnd.bokehjs_load.v0+json": "x" }, metadata: {} });
  assert.match(load.textContent, /not loaded in this view/);
});
