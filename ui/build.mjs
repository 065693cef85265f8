// Builds the two views into single self-contained HTML files, the chart
// libraries the views load when a chart appears into gzipped scripts, and
// the script that draws charts for the model's images on those libraries:
//   node build.mjs              writes ../mcpserver/ui/cell.html and web.html,
//                               ../chartlib/plotly.js.gz and vega.js.gz, and
//                               ../chartimage/page/render.js
//   node build.mjs --out DIR    writes them into DIR instead
//   node build.mjs --check      builds in memory; fails if the committed files differ
// The output depends only on the sources and the locked packages: no
// timestamps, no paths, so two builds give the same bytes.

import * as esbuild from "esbuild";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { gzipSync, gunzipSync, constants as zlibConstants } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const committed = resolve(here, "../mcpserver/ui");
// home is the folder a page or script is committed in.
const home = (name) => ((pages[name] || scripts[name]).dir ? resolve(here, (pages[name] || scripts[name]).dir) : committed);

// Scripts committed as they are built, next to the Go package that embeds
// them: chartimage runs render.js after the chart libraries, in the browser
// that draws charts for the model's images.
const scripts = {
  "render.js": { entry: "src/chartpage.js", dir: "../chartimage/page" },
};

const pages = {
  "cell.html": {
    entry: "src/app.js",
    title: "kernel-mcp cell",
    body: '<div id="root" class="cells"></div>',
    limit: 400 * 1024,
  },
  "web.html": {
    entry: "src/web.js",
    // KaTeX's style sheet, its woff2 fonts inlined (see katexFonts).
    css: "src/web.css",
    title: "kernel-mcp notebook",
    bodyClass: "web",
    body: [
      '<header class="page-head"><h1>kernel-mcp</h1><nav class="session-tabs"></nav></header>',
      "<main>",
      '<div class="page-message" hidden></div>',
      '<div class="session-bar" hidden><h2 class="session-title"></h2>',
      '<button type="button" class="session-interrupt">Interrupt</button>',
      '<a class="download-ipynb" download>notebook.ipynb</a>',
      '<a class="download-py" download>script.py</a></div>',
      '<div class="cells"></div>',
      '<div class="new-cell" hidden>',
      '<textarea class="new-cell-code" spellcheck="false" placeholder="Code to run in this session (Shift+Enter runs)"></textarea>',
      '<button type="button" class="new-cell-run">Run</button>',
      '<div class="new-cell-message" hidden></div>',
      "</div>",
      "</main>",
    ].join(""),
  },
};

// katexFonts keeps only the woff2 source of each of KaTeX's @font-face
// rules, so that the fonts are inlined (as data: URLs) once, in the format
// every browser the views support reads, with no URL left to fetch.
const katexFonts = {
  name: "katex-fonts",
  setup(b) {
    b.onLoad({ filter: /katex[\\/]dist[\\/]katex\.css$/ }, async (args) => {
      const css = await readFile(args.path, "utf8");
      const out = css.replace(/,\s*url\([^)]+\.woff\) format\("woff"\),\s*url\([^)]+\.ttf\) format\("truetype"\)/g, "");
      if (/\.(woff|ttf)\)/.test(out)) throw new Error("katex.css: a font source other than woff2 is left");
      return { contents: out, loader: "css" };
    });
  },
};

// The chart libraries (see src/charts.js): scripts the views fetch from
// their server and run when a chart appears, committed gzipped next to the
// Go package that embeds and serves them. Compared by their content, not
// their bytes: another zlib may compress the same script differently.
const libsDir = resolve(here, "../chartlib");
const libs = {
  "plotly.js.gz": "src/chartlib-plotly.js",
  "vega.js.gz": "src/chartlib-vega.js",
  // Not a chart library: KaTeX for the cell view, loaded when math appears.
  "katex.js.gz": "src/chartlib-katex.js",
  // The ipywidgets frontend, for the web view's live widgets; its style
  // sheet goes in as text, which the bundle puts in a <style>.
  "widgets.js.gz": { entry: "src/chartlib-widgets.js", loader: { ".css": "text" } },
};

async function buildLibs() {
  const out = {};
  for (const [name, lib] of Object.entries(libs)) {
    const { entry, loader } = typeof lib === "string" ? { entry: lib } : lib;
    out[name] = await bundle({ entryPoints: [entry], format: "iife", platform: "browser", outfile: "out.js", ...(loader ? { loader } : {}) });
  }
  return out;
}

const gunzipText = (buf) => gunzipSync(buf).toString("utf8");
const gzip = (text) => gzipSync(Buffer.from(text, "utf8"), { level: zlibConstants.Z_BEST_COMPRESSION });

async function bundle(options) {
  const r = await esbuild.build({
    absWorkingDir: here,
    bundle: true,
    minify: true,
    write: false,
    target: "es2022",
    legalComments: "eof",
    charset: "ascii",
    logLevel: "warning",
    ...options,
  });
  return new TextDecoder().decode(r.outputFiles[0].contents).trimEnd();
}

// inline makes script text safe inside <script>: "</script" would end the
// element early ("<\/" is "</" in JS strings, regexps and templates), and
// "<!--" followed by "<script" would keep it from ending at all.
function inline(js) {
  const out = js.replace(/<\/(script)/gi, "<\\/$1");
  if (/<!--/.test(out) && /<script/i.test(out)) throw new Error("bundle holds both <!-- and <script; it cannot be inlined as is");
  return out;
}

async function styles(entry) {
  const css = await bundle({ entryPoints: [entry], loader: { ".css": "css", ".woff2": "dataurl" }, outfile: "out.css", plugins: [katexFonts] });
  if (/<\/style|<!--/i.test(css)) throw new Error(entry + " holds a sequence that would end the inline <style>");
  return css;
}

async function build() {
  const sheets = {};
  const out = {};
  for (const [name, p] of Object.entries(pages)) {
    const entry = p.css || "src/style.css";
    const css = p.noStyle ? "" : (sheets[entry] ??= await styles(entry));
    const js = await bundle({ entryPoints: [p.entry], format: "iife", platform: "browser", outfile: "out.js" });
    out[name] = [
      "<!doctype html>",
      '<html lang="en"><head><meta charset="utf-8">',
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      "<title>" + p.title + "</title>",
      p.noStyle ? "" : "<style>" + css + "</style>",
      "</head><body" + (p.bodyClass ? ' class="' + p.bodyClass + '"' : "") + ">",
      p.body,
      "<script>" + inline(js) + "</script>",
      "</body></html>",
      "",
    ].join("\n");
    if (p.limit && out[name].length > p.limit) {
      throw new Error(`${name} is ${out[name].length} bytes, over its ${p.limit} byte budget`);
    }
  }
  for (const [name, p] of Object.entries(scripts)) {
    out[name] = (await bundle({ entryPoints: [p.entry], format: "iife", platform: "browser", outfile: "out.js" })) + "\n";
  }
  return out;
}

const args = process.argv.slice(2);
const files = await build();
const libFiles = await buildLibs();
if (args[0] === "--check") {
  let stale = [];
  for (const [name, text] of Object.entries(files)) {
    const old = await readFile(join(home(name), name), "utf8").catch(() => null);
    if (old !== text) stale.push(join(home(name), name));
  }
  for (const [name, text] of Object.entries(libFiles)) {
    const old = await readFile(join(libsDir, name)).then(gunzipText, () => null);
    if (old !== text) stale.push(join(libsDir, name));
  }
  if (stale.length) {
    console.error(`stale: ${stale.join(", ")} differ from a fresh build; run: cd ui && npm run build`);
    process.exit(1);
  }
  console.log("the built views are up to date");
} else {
  const out = args[0] === "--out" && args[1] ? resolve(args[1]) : null;
  for (const [name, text] of Object.entries(files)) {
    const dir = out || home(name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, name), text);
    console.log(`${join(dir, name)}: ${Buffer.byteLength(text)} bytes`);
  }
  for (const [name, text] of Object.entries(libFiles)) {
    const dir = out || libsDir;
    await mkdir(dir, { recursive: true });
    const path = join(dir, name);
    // An unchanged library keeps its committed bytes.
    const old = await readFile(path).catch(() => null);
    if (old && gunzipText(old) === text) {
      console.log(`${path}: unchanged (${Buffer.byteLength(text)} bytes, ${old.length} gzipped)`);
      continue;
    }
    const gz = gzip(text);
    await writeFile(path, gz);
    console.log(`${path}: ${Buffer.byteLength(text)} bytes, ${gz.length} gzipped`);
  }
}
