// Kernel output that tries to run script must reach the page inert: no
// <script>, no on* handler, no javascript: URL, in HTML, markdown and SVG.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadRenderer, deep, deepAll, deepHTML } from "./dom.mjs";

const { window, render } = await loadRenderer();

const hostile = [
  { "text/html": '<script>window.pwned = "script"</script><b>bold</b>' },
  { "text/html": '<img src="x" onerror="window.pwned = \'onerror\'"><p onclick="window.pwned=1">p</p>' },
  { "text/html": '<a href="javascript:window.pwned=\'link\'">click</a><a href=" JaVaScRiPt:window.pwned=2">x</a>' },
  { "text/html": '<iframe src="javascript:window.pwned=3"></iframe><object data="javascript:1"></object><embed src="x">' },
  { "text/html": '<svg><script>window.pwned="inline svg"</script><a xlink:href="javascript:window.pwned=4"><text>t</text></a></svg>' },
  { "text/html": '<form action="javascript:window.pwned=5"><input onfocus="window.pwned=6" autofocus></form>' },
  { "text/html": '<math><mtext><table><mglyph><style><img src=x onerror="window.pwned=7">' },
  { "text/markdown": '# t\n\n<script>window.pwned="md"</script>\n\n[x](javascript:window.pwned=8) <img src=x onerror="window.pwned=9">' },
  {
    "image/svg+xml":
      '<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=10"><script>window.pwned="svg"</script>' +
      '<a href="javascript:window.pwned=11"><circle r="5" onmouseover="window.pwned=12"/></a>' +
      '<foreignObject><img src="x" onerror="window.pwned=13"/></foreignObject></svg>',
  },
];

function cellWith(data) {
  return {
    session_id: "s",
    run_id: "r1",
    index: 0,
    code: "x",
    language: "python",
    status: "ok",
    outputs: [{ output_type: "display_data", data, metadata: {} }],
  };
}

// inspect fails on anything that could run script in the rendered tree.
function inspect(root, what) {
  const html = deepHTML(root);
  assert.doesNotMatch(html, /<script/i, what + ": <script> survived");
  assert.doesNotMatch(html, /javascript:/i, what + ": javascript: URL survived");
  for (const e of deepAll(root, "*")) {
    for (const a of e.attributes) assert.ok(!/^on/i.test(a.name), `${what}: ${e.tagName} kept ${a.name}`);
  }
  for (const tag of ["iframe", "object", "embed", "form", "input"]) {
    assert.equal(deep(root, tag), null, `${what}: <${tag}> survived`);
  }
}

// fire dispatches the events hostile handlers wait for, so one that slipped
// through would set window.pwned.
function fire(root) {
  for (const e of [root, ...deepAll(root, "*")]) {
    for (const type of ["error", "load", "click", "mouseover", "focus"]) e.dispatchEvent(new window.Event(type));
  }
}

for (const data of hostile) {
  const what = Object.keys(data)[0] + " " + JSON.stringify(Object.values(data)[0]).slice(0, 50);
  test("sanitizes " + what, () => {
    const v = new render.CellView();
    v.set(cellWith(data));
    window.document.body.append(v.root);
    inspect(v.root, what);
    if (data["image/svg+xml"]) {
      const img = v.root.querySelector("img.mime-svg");
      assert.ok(img, "the SVG is shown as an image");
      const b64 = img.getAttribute("src").replace(/^data:image\/svg\+xml;base64,/, "");
      const svg = Buffer.from(b64, "base64").toString("utf8");
      assert.match(svg, /<circle/, "the drawing itself is kept");
      assert.doesNotMatch(svg, /<script|javascript:|\son[a-z]+=/i, "the SVG inside the image is clean: " + svg);
    }
    fire(v.root);
    assert.equal(window.pwned, undefined, "hostile code ran: " + window.pwned);
    v.root.remove();
  });
}

test("the harmless part of sanitized HTML is kept", () => {
  const v = new render.CellView();
  v.set(cellWith({ "text/html": '<table class="dataframe"><tr><th>a</th><td>1</td></tr></table><script>window.pwned=1</script>' }));
  assert.equal(deep(v.root, "td").textContent, "1");
  const a = new render.CellView();
  a.set(cellWith({ "text/html": '<a href="https://example.org/">x</a>' }));
  assert.equal(deep(a.root, "a").getAttribute("rel"), "noopener noreferrer");
});

test("streams and tracebacks are text: their HTML is escaped", () => {
  const v = new render.CellView();
  v.set({
    ...cellWith({}),
    outputs: [
      { output_type: "stream", name: "stdout", text: '<img src=x onerror="window.pwned=20">\n' },
      { output_type: "error", ename: "E", evalue: "<script>", traceback: ["\u001b[31m<script>window.pwned=21</script>\u001b[0m"] },
      { output_type: "execute_result", data: { "text/plain": "<b onclick=1>x</b>" }, metadata: {} },
    ],
  });
  inspect(v.root, "text outputs");
  assert.equal(v.root.querySelector("img"), null);
  assert.match(v.root.querySelector(".output-stream").textContent, /<img src=x onerror=/);
  assert.ok(v.root.querySelector(".output-error .ansi-red-fg"), "ANSI colour became a class");
});
