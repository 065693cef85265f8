// KaTeX for the cell view, loaded when math first appears (app.js, through
// charts.js's loadLibrary): 273 KB of script the view's 400 KB budget has no
// room for. The view asks for MathML output, so no CSS or font comes with
// it: the MCP Apps default CSP (default-src 'none', no font-src) would block
// KaTeX's fonts, data: URLs included. The web view bundles KaTeX itself.
import katex from "katex";

globalThis.__kmKatex = katex;
