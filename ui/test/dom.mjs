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
