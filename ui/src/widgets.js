// Live widgets in the web view: an output that shows an ipywidget
// (application/vnd.jupyter.widget-view+json) is drawn by ipywidgets' own
// frontend, loaded the first time one appears (/ui/charts/widgets.js, see
// chartlib-widgets.js), with one widget manager per session fed by the
// server: the models' state from GET .../widgets, the kernel's changes from
// the event stream's widget_update events, and the person's changes sent
// back as POST .../widgets/{model}. Until the bundle and the model are
// there (or when the model is gone: a recorded cell of a kernel since
// restarted) the output's text/plain stands for the widget.

import { loadLibrary } from "./charts.js";
import { renderOutput, sanitizeHTML, setWidgetRenderer } from "./render.js";

// How long a view waits for its model: the output can come before the
// model's (coalesced) widget_update.
const MODEL_WAIT_MS = 3000;

/**
 * drawWidget returns the element that shows widget view view: fallback()
 * (the output's text) until manager(modelID) (a Promise of a manager from
 * chartlib-widgets.js) has the model and draws it in its place.
 */
export function drawWidget(view, fallback, manager) {
  const host = document.createElement("div");
  host.className = "widget-host";
  const still = fallback();
  host.append(still);
  const id = view && typeof view === "object" ? view.model_id : null;
  if (typeof id !== "string" || !id) return host;
  manager(id)
    .then((m) => {
      const area = document.createElement("div");
      area.className = "widget-area";
      return m.show(id, area, MODEL_WAIT_MS).then((shown) => {
        if (shown) {
          still.replaceWith(area);
          host.dataset.widget = "live";
        } else host.dataset.widget = "gone";
      });
    })
    .catch((err) => {
      host.dataset.widget = "error";
      const note = document.createElement("div");
      note.className = "widget-note";
      note.textContent = "[widget not shown live: " + err.message + "]";
      host.append(note);
    });
  return host;
}

/**
 * setupWidgets makes the view draw live widgets. io: {current() → the
 * session shown, getJSON(path) → Promise, postJSON(path, body) → Promise,
 * sessionPath(id, rest), report(msg)}.
 */
export function setupWidgets(io) {
  const managers = new Map(); // session id → Promise<manager>

  function manager(session) {
    if (!managers.has(session)) {
      const p = (async () => {
        const lib = await loadLibrary("widgets");
        const m = lib.createManager({
          post: (id, body) => io.postJSON(io.sessionPath(session, "/widgets/" + encodeURIComponent(id)), body),
          state: () => io.getJSON(io.sessionPath(session, "/widgets")),
          renderOutput,
          sanitizeHTML,
          onError: io.report,
        });
        await m.reload();
        return m;
      })();
      managers.set(session, p);
      p.catch(() => managers.delete(session));
    }
    return managers.get(session);
  }

  setWidgetRenderer((view, fallback) => drawWidget(view, fallback, (id) => manager(io.current())));

  return {
    // onEvent takes the events that concern widgets.
    onEvent(e) {
      if (e.kind === "missed") {
        // Whatever changed meanwhile: the managers' state is read again.
        for (const [session, p] of managers) {
          p.then((m) => m.reload()).catch(() => {});
        }
        return;
      }
      if (["kernel_started", "kernel_restarted", "kernel_stopped", "kernel_died", "session_deleted"].includes(e.kind)) {
        // The kernel's models are gone: a new manager for what comes.
        managers.delete(e.session_id);
        return;
      }
      if (e.kind === "widget_update" && e.widget && managers.has(e.session_id)) {
        managers.get(e.session_id).then((m) => m.apply([e.widget]), () => {});
      }
    },
  };
}
