// The Vega bundle the views load when a Vega-Lite or Vega chart appears
// (charts.js): vega-embed with Vega, Vega-Lite and the expression
// interpreter, so that no chart needs eval (the views' CSPs forbid it).
import * as vega from "vega";
import embed, { vegaLite } from "vega-embed";
import { expressionInterpreter } from "vega-interpreter";

globalThis.__kmVega = { vega, vegaLite, embed, expressionInterpreter };
