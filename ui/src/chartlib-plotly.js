// The plotly.js bundle the views load when a Plotly figure appears
// (charts.js): served by the server, never part of a view's first load.
// The strict build: its WebGL traces (scattergl, which Plotly Express picks
// past 1,000 points, splom, parcoords) use shaders compiled ahead of time
// instead of code made with Function, which neither view's CSP allows.
import Plotly from "plotly.js-strict-dist-min";

globalThis.__kmPlotly = Plotly;
