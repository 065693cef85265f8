// The script chartimage runs in a headless browser to draw charts as PNG
// images for the model: Plotly figures with plotly.js, Vega-Lite and Vega
// specs with Vega, SVG through an <img>. It runs after the views' chart
// libraries (chartlib: ui/src/chartlib-*.js), which it takes from the
// globals they set, so that the binary carries one copy of each. The specs
// come from kernels and are untrusted: they are parsed as JSON (never
// evaluated), and nothing they name is fetched (the Vega loader refuses
// every URL; the browser runs with no network besides).
const Plotly = globalThis.__kmPlotly;
const { vega, vegaLite } = globalThis.__kmVega;
const compile = (spec) => vegaLite.compile(spec);

const MAX_SIDE = 4096;

function clampSize(w, h) {
  w = Number.isFinite(w) && w > 0 ? w : 700;
  h = Number.isFinite(h) && h > 0 ? h : 500;
  const f = Math.min(1, MAX_SIDE / w, MAX_SIDE / h);
  return [Math.max(1, Math.round(w * f)), Math.max(1, Math.round(h * f))];
}

// refused is the first URL the chart being drawn asked for: Vega logs a
// failed load and draws on, so the render reports it afterwards.
let refused = null;
const refusal = (uri) => new Error("the chart names data at " + String(uri).slice(0, 100) + ", which is not fetched: only data inside the spec is drawn");
const refuse = async (uri) => {
  if (refused === null) refused = uri;
  throw refusal(uri);
};
const loader = vega.loader();
loader.load = refuse;
loader.sanitize = refuse;
loader.http = refuse;
loader.file = refuse;

async function plotly(fig) {
  if (!fig || typeof fig !== "object" || Array.isArray(fig)) throw new Error("a Plotly figure is an object with data and layout");
  const layout = Object.assign({}, fig.layout || {});
  const [width, height] = clampSize(layout.width, layout.height);
  layout.width = width;
  layout.height = height;
  const config = Object.assign({}, fig.config || {}, { staticPlot: true, topojsonURL: "data:,", mapboxAccessToken: "", typesetMath: false });
  return Plotly.toImage({ data: fig.data || [], layout, frames: [], config }, { format: "png", width, height, scale: 1 });
}

async function vegaImage(vgSpec) {
  refused = null;
  const view = new vega.View(vega.parse(vgSpec), { renderer: "none", loader, logLevel: vega.Error });
  try {
    if (vgSpec.background === undefined) view.background("white");
    await view.runAsync();
    if (refused !== null) throw refusal(refused);
    const w = view.width() + 2 * (view.padding().left || 0), h = view.height();
    let scale = 1;
    if (w > MAX_SIDE || h > MAX_SIDE) scale = Math.min(MAX_SIDE / Math.max(w, 1), MAX_SIDE / Math.max(h, 1));
    return await view.toImageURL("png", scale);
  } finally {
    view.finalize();
  }
}

async function svg(text) {
  const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error("the SVG could not be drawn"));
      img.src = url;
    });
    const [w, h] = clampSize(img.naturalWidth || 640, img.naturalHeight || 480);
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "white";
    ctx.fillRect(0, 0, w, h);
    ctx.drawImage(img, 0, 0, w, h);
    return canvas.toDataURL("image/png");
  } finally {
    URL.revokeObjectURL(url);
  }
}

// kmRender draws one chart: kind is "plotly", "vega-lite", "vega" or
// "svg"; text is the spec's JSON (or the SVG). It resolves to a PNG data URL.
window.kmRender = async function (kind, text) {
  switch (kind) {
    case "plotly":
      return plotly(JSON.parse(text));
    case "vega-lite":
      return vegaImage(compile(JSON.parse(text)).spec);
    case "vega":
      return vegaImage(JSON.parse(text));
    case "svg":
      return svg(text);
    default:
      throw new Error("unknown chart kind " + kind);
  }
};
window.kmReady = true;
