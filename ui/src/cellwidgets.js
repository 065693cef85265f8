// Live widgets in the cell view. The view has no event stream: it reads
// the models its outputs show through the app-only tool view_widgets (the
// models a widget view names come with it: children, layouts, styles),
// then follows their changes by asking again with the version it has,
// the server waiting for a change as view_run waits for output. The
// person's changes go to the kernel through send_widget. When the host or
// the server refuses that (a server that runs no code for its clients),
// the view says that the web view has the live control.
//
// It follows changes while the run goes on and for FOLLOW_MS after the
// last change or the person's last action, so that views left in a long
// conversation do not ask the server forever; the person's next action
// (or a new run) follows again.

import { loadLibrary } from "./charts.js";
import { renderOutput, sanitizeHTML, setWidgetRenderer } from "./render.js";
import { drawWidget } from "./widgets.js";

const WAIT_S = 5;
const FOLLOW_MS = 60000;
const RETRY_MS = 2000;

/**
 * setupCellWidgets makes the cell view draw live widgets. io: {call(name,
 * args) → Promise of the tool result's structuredContent (throws on an
 * error result), session() → the session shown, report(msg)}.
 */
export function setupCellWidgets(io) {
  let state = null; // for the session shown: {session, manager, roots, version, loop, until}

  function forSession(session) {
    if (state && state.session === session) return state;
    if (state) state.loop++;
    let m;
    state = {
      session,
      roots: new Set(),
      version: 0,
      loop: 0,
      running: false,
      until: 0,
      manager: (async () => {
        const lib = await loadLibrary("widgets");
        m = lib.createManager({
          post: async (id, body) => {
            follow(st);
            try {
              await io.call("send_widget", { session_id: session, model_id: id, ...body });
            } catch (err) {
              throw new Error("this view could not change the widget (" + err.message + "); the web view (--ui) has the live control");
            }
          },
          // A reload (after a refused change) reads every root again.
          state: () => io.call("view_widgets", { session_id: session, model_ids: [...st.roots], version: 0 }),
          renderOutput,
          sanitizeHTML,
          onError: io.report,
        });
        return m;
      })(),
    };
    const st = state;
    return st;
  }

  // follow keeps the poll loop going for FOLLOW_MS more.
  function follow(st) {
    st.until = Date.now() + FOLLOW_MS;
    if ((!st.running || st.polling !== st.loop) && st.roots.size) poll(st);
  }

  async function poll(st) {
    const me = st.loop;
    st.running = true;
    st.polling = me;
    const m = await st.manager;
    try {
      while (me === st.loop && state === st && Date.now() < st.until) {
        let v;
        try {
          v = await io.call("view_widgets", { session_id: st.session, model_ids: [...st.roots].slice(-200), version: st.version, wait: WAIT_S });
        } catch (err) {
          io.report("widgets not followed: " + err.message);
          await new Promise((r) => setTimeout(r, RETRY_MS));
          continue;
        }
        if (me !== st.loop || state !== st) return;
        if (typeof v.version === "number") st.version = v.version;
        const models = v.models || [];
        if (models.length) {
          m.apply(models);
          st.until = Math.max(st.until, Date.now() + FOLLOW_MS);
        }
      }
    } finally {
      if (st.polling === me) st.running = false;
    }
  }

  // root reads the models of a widget view new to the view, and follows.
  async function root(session, id) {
    const st = forSession(session);
    const m = await st.manager;
    if (!st.roots.has(id)) {
      st.roots.add(id);
      const v = await io.call("view_widgets", { session_id: session, model_ids: [id], version: 0 });
      if (!st.version && typeof v.version === "number") st.version = v.version;
      m.apply(v.models || []);
    }
    follow(st);
    return m;
  }

  setWidgetRenderer((view, fallback) => drawWidget(view, fallback, (id) => root(io.session(), id)));

  return {
    // follow: a run goes on (or a new one came): changes are followed.
    follow() {
      if (state) follow(state);
    },
    stop() {
      if (state) state.loop++;
    },
  };
}
