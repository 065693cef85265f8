// The plotly.js bundle the views load when a Plotly figure appears
// (charts.js): served by the server, never part of a view's first load.
import Plotly from "plotly.js-dist-min";

globalThis.__kmPlotly = Plotly;
