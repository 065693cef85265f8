// dom sets up a jsdom window as the globals render.js expects, then loads
// render.js. Event handler attributes run in this window (runScripts), so
// a sanitizer miss shows as a flag on window.
import { JSDOM } from "jsdom";

export async function loadRenderer() {
  const dom = new JSDOM("<!doctype html><html><body></body></html>", { runScripts: "dangerously", pretendToBeVisual: true });
  const w = dom.window;
  for (const k of ["window", "document", "Node", "Element", "HTMLElement", "DocumentFragment", "NodeFilter", "DOMParser", "TextEncoder"]) {
    if (k === "TextEncoder" && globalThis.TextEncoder) continue;
    globalThis[k] = w[k];
  }
  const render = await import("../src/render.js");
  return { dom, window: w, render };
}

/** deepAll lists the elements under root matching sel, shadow roots included. */
export function deepAll(root, sel) {
  const found = [...root.querySelectorAll(sel)];
  const hosts = [...(root.shadowRoot ? [root] : []), ...root.querySelectorAll("*")].filter((e) => e.shadowRoot);
  for (const e of hosts) found.push(...deepAll(e.shadowRoot, sel));
  return found;
}

/** deep is the first of deepAll(root, sel), or null. */
export function deep(root, sel) {
  return deepAll(root, sel)[0] || null;
}

/** deepHTML is root's markup with its shadow roots' markup after it. */
export function deepHTML(root) {
  const hosts = [...(root.shadowRoot ? [root] : []), ...deepAll(root, "*")].filter((e) => e.shadowRoot);
  return root.innerHTML + hosts.map((e) => e.shadowRoot.innerHTML).join("");
}
