// Math (KaTeX), HTML confined to a shadow root, and displays updated in
// place by update_display_data.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadRenderer, deep, deepAll } from "./dom.mjs";
import katex from "katex";

const { window, render } = await loadRenderer();
const { CellView, OutputList } = render;

const display = (text, id) => ({ output_type: "display_data", data: { "text/plain": text }, metadata: {}, transient: { display_id: id } });
const update = (text, id) => ({ output_type: "update_display_data", data: { "text/plain": text }, metadata: {}, transient: { display_id: id } });
const latex = (tex) => ({ output_type: "display_data", data: { "text/latex": tex, "text/plain": "x" }, metadata: {} });
const md = (text) => ({ output_type: "display_data", data: { "text/markdown": text }, metadata: {} });

let early;
test("without KaTeX (the cell view), math shows as its source", () => {
  const el = render.renderOutput(latex("$\\frac{1}{2}$"));
  assert.equal(el.querySelector(".mime-latex").textContent, "$\\frac{1}{2}$");
  assert.ok(el.querySelector(".mime-latex.math-source"));
  assert.equal(el.querySelector(".katex"), null);
  const m = render.renderOutput(md("so $x^2$ it is"));
  assert.equal(m.textContent.trim(), "so $x^2$ it is");
  early = [el, m];
});

test("with KaTeX, text/latex and markdown math are typeset; no $ source is left", () => {
  render.setMath(katex);
  // What was drawn before KaTeX came is typeset when the view asks.
  for (const e of early) {
    render.typeset(e);
    assert.equal(e.querySelectorAll(".katex").length, 1);
    assert.ok(!e.textContent.includes("$"));
    render.typeset(e);
    assert.equal(e.querySelectorAll(".katex").length, 1, "typeset twice, rendered once");
  }
  assert.equal(early[0].querySelector(".math-source"), null);
  const l = render.renderOutput(latex("$\\alpha^2 + \\sum_i x_i$"));
  assert.ok(l.querySelector(".katex"), "a .katex element");
  assert.ok(!l.textContent.includes("$"), "no $ left: " + l.textContent);
  const sympy = render.renderOutput(latex("$\\displaystyle \\int_0^1 x\\,dx$"));
  assert.ok(sympy.querySelector(".katex"));
  const env = render.renderOutput(latex("\\begin{equation}E = mc^2\\end{equation}"));
  assert.ok(env.querySelector(".katex-display"), "an environment is display math");
  const m = render.renderOutput(md("Let $\\alpha^2 + \\sum_i x_i$ be.\n\n$$\\int_0^1 f$$\n\nIt costs $5 and $6, and `$x$` is code."));
  assert.equal(m.querySelectorAll(".katex").length, 2, m.innerHTML.slice(0, 200));
  assert.ok(m.querySelector(".katex-display"), "$$ is display math");
  assert.match(m.textContent, /costs \$5 and \$6/, "prices stay text");
  assert.equal(m.querySelector("code").textContent, "$x$", "code keeps its dollars");
  const bad = render.renderOutput(latex("$\\frac{1}{$"));
  assert.ok(bad.querySelector(".katex-error, .katex"), "an error is shown in place, not thrown");
});

test("KaTeX trusts nothing: no link or class from the TeX, no macro bomb", () => {
  const l = render.renderOutput(latex("$\\href{javascript:window.pwned=1}{x} \\url{javascript:alert(1)} \\htmlClass{cell}{y}$"));
  assert.equal(l.querySelector("a"), null);
  assert.doesNotMatch(l.innerHTML, /<a |class="cell"/);
  const t0 = Date.now();
  render.renderOutput(latex("$\\def\\a{\\b\\b}\\def\\b{\\c\\c}\\def\\c{\\d\\d}\\def\\d{\\e\\e}\\def\\e{\\f\\f}\\def\\f{xxxxxxxxxx}\\a\\a\\a\\a\\a\\a$"));
  assert.ok(Date.now() - t0 < 5000, "the macro expansion is bounded");
  assert.equal(window.pwned, undefined);
});

test("HTML keeps its <style>, in a shadow root of its own; markdown's <style> goes", () => {
  const h = render.renderOutput({ output_type: "display_data", data: { "text/html": '<style type="text/css">#T_x td { background-color: #ff0000 } button, .cell { display: none }</style><table id="T_x"><tr><td>1</td></tr></table>' } });
  const host = h.querySelector(".mime-html");
  assert.ok(host.shadowRoot, "a shadow root");
  const styles = deepAll(host, "style");
  assert.ok(styles.some((s) => s.textContent.includes("#T_x td")), "the output's style is kept inside");
  assert.equal(h.querySelectorAll("style").length, 0, "no style in the page's own tree");
  assert.equal(deep(host, "td").textContent, "1");
  const imp = render.renderOutput({ output_type: "display_data", data: { "text/html": '<style>@import url("https://example.org/x.css"); p{color:red}</style><p>p</p>' } });
  assert.doesNotMatch(deepAll(imp, "style").map((s) => s.textContent).join(""), /@import/);
  const prop = render.renderOutput({ output_type: "display_data", data: { "text/html": '<style>@property --fg { syntax: "<color>"; inherits: false; initial-value: red } p{color:red}</style><p>p</p>' } });
  assert.doesNotMatch(deepAll(prop, "style").map((s) => s.textContent).join(""), /@property/);
  // A "<" in the style sheet's text (scikit-learn's has one) keeps it.
  const sk = render.renderOutput({ output_type: "display_data", data: { "text/html": '<style>.x::after { content: "<b>"; } .x { color: red }</style><body><p class="x">y</p>' } });
  assert.ok(deepAll(sk, "style").some((s) => s.textContent.includes(".x { color: red }")), "the sheet with a < is kept");
  assert.equal(deep(sk, "p.x").textContent, "y");
  const m = render.renderOutput(md("hi\n\n<style>button{display:none}</style>"));
  assert.equal(deepAll(m, "style").length, 0);
});

test("update_display_data replaces the display it names, in place, in the list and the DOM", () => {
  const l = new OutputList();
  l.add([display("v0", "d1"), { output_type: "stream", name: "stdout", text: "after\n" }]);
  for (let i = 1; i <= 20; i++) l.add([update("v" + i, "d1")]);
  assert.equal(l.items.length, 2);
  assert.equal(l.items[0].data["text/plain"], "v20");
  assert.equal(l.items[0].output_type, "display_data");
  l.add([update("nobody", "d2")]);
  assert.equal(l.items.length, 2, "an update naming no display is dropped");

  const v = new CellView();
  v.set({ session_id: "s", run_id: "r1", index: -1, code: "x", status: "running", outputs: [display("v0", "h"), { output_type: "stream", name: "stdout", text: "tail\n" }] });
  const tail = v.outBox.children[1];
  for (let i = 1; i < 20; i++) v.append([update("v" + i, "h")]);
  assert.equal(v.outBox.children.length, 2, "one display and the stream, nothing appended");
  assert.equal(v.outBox.children[0].textContent, "v19");
  assert.equal(v.outBox.children[1], tail, "the outputs after it are not redrawn");
  // Two displays of one id are both updated, as in JupyterLab.
  v.append([display("w0", "h")]);
  v.append([update("w1", "h")]);
  assert.deepEqual([...v.outBox.children].map((c) => c.textContent), ["w1", "tail\n", "w1"]);
});

test("clear_output(wait=True) keeps the outputs until the next one: never an empty cell", () => {
  const v = new CellView();
  v.set({ session_id: "s", run_id: "r1", index: -1, code: "x", status: "running", outputs: [{ output_type: "stream", name: "stdout", text: "0\n" }] });
  const seen = [];
  const obs = new window.MutationObserver(() => seen.push(v.outBox.children.length));
  obs.observe(v.outBox, { childList: true });
  for (let i = 1; i < 5; i++) {
    v.append([{ output_type: "clear_output", metadata: { wait: true } }]);
    assert.equal(v.outBox.textContent, `${i - 1}\n`, "the clear waits");
    v.append([{ output_type: "stream", name: "stdout", text: `${i}\n` }]);
  }
  assert.equal(v.outBox.textContent, "4\n");
  assert.equal(v.outBox.children.length, 1);
  obs.disconnect();
});

test("MathML output (the cell view's, which loads no font): a math element, no KaTeX HTML", () => {
  render.setMath(katex, "mathml");
  try {
    const el = render.renderOutput(latex("$\\alpha^2 + \\sum_i x_i$"));
    assert.ok(el.querySelector(".katex math"), "KaTeX's MathML");
    assert.equal(el.querySelector(".katex-html"), null, "no HTML that needs KaTeX's fonts");
    assert.equal(el.querySelector(".math-source"), null);
    const m = render.renderOutput(md("inline $x^2$ and $$\\int_0^1 x\\,dx$$"));
    assert.equal(m.querySelectorAll("math").length, 2);
    assert.ok(m.querySelector("math[display=block]"), "$$ is display math");
    assert.ok(!m.textContent.includes("$"), m.textContent);
  } finally {
    render.setMath(katex);
  }
});
