// The widgets bundle the web view loads when an output shows an ipywidget
// (application/vnd.jupyter.widget-view+json): ipywidgets 8's own frontend
// (@jupyter-widgets/base 6, controls 5) under a widget manager whose comms
// talk to the web view's server instead of a kernel: the models come from
// GET /ui/api/sessions/{id}/widgets, the kernel's changes from the event
// stream (widget_update), and the person's changes go out as POSTs to
// /ui/api/sessions/{id}/widgets/{model}. web.js drives it (see widgets.js).
//
// Widget state comes from the kernel and is untrusted:
// - only the modules bundled here are known (@jupyter-widgets/base,
//   controls, output): no widget code is ever fetched (no CDN loader);
//   another module's widget shows a note;
// - HTML and HTMLMath widgets, and descriptions with description_allow_html,
//   go through the view's DOMPurify (render.js sanitizeHTML) instead of
//   being set as innerHTML as they come;
// - an Output widget's outputs are drawn by the view's own renderer
//   (render.js renderOutput), sanitized like any output.
// Nothing here needs eval.

import * as base from "@jupyter-widgets/base";
import * as controls from "@jupyter-widgets/controls";
import { ManagerBase } from "@jupyter-widgets/base-manager";
import { Widget } from "@lumino/widgets";
import css from "@jupyter-widgets/controls/css/widgets.built.css";

const OUTPUT_MODULE = "@jupyter-widgets/output";
const OUTPUT_VERSION = "1.0.0";

// The view's renderer and sanitizer, given by createManager.
let hooks = { renderOutput: null, sanitizeHTML: (s) => "" };

// HTML and HTMLMath: the value sanitized, never set as it comes.
class HTMLView extends controls.HTMLView {
  update() {
    this.content.innerHTML = hooks.sanitizeHTML(String(this.model.get("value") ?? ""));
    return base.DOMWidgetView.prototype.update.call(this);
  }
}
class HTMLMathView extends controls.HTMLMathView {
  update() {
    this.content.innerHTML = hooks.sanitizeHTML(String(this.model.get("value") ?? ""));
    return base.DOMWidgetView.prototype.update.call(this);
  }
}

// The Output widget: its outputs (as the server's widget tracker captured
// them) drawn by the view's renderer.
class OutputModel extends base.DOMWidgetModel {
  defaults() {
    return {
      ...super.defaults(),
      _model_name: "OutputModel",
      _view_name: "OutputView",
      _model_module: OUTPUT_MODULE,
      _view_module: OUTPUT_MODULE,
      _model_module_version: OUTPUT_VERSION,
      _view_module_version: OUTPUT_VERSION,
      msg_id: "",
      outputs: [],
    };
  }
}
class OutputView extends base.DOMWidgetView {
  render() {
    this.el.classList.add("jupyter-widgets-output-area", "widget-output");
    this.listenTo(this.model, "change:outputs", () => this.draw());
    this.draw();
  }
  draw() {
    const outs = this.model.get("outputs");
    const els = [];
    for (const o of Array.isArray(outs) ? outs : []) {
      if (!o || o.output_type === "clear_output") continue;
      try {
        els.push(hooks.renderOutput(o));
      } catch (err) {
        els.push(Object.assign(document.createElement("pre"), { textContent: "[output not shown: " + err.message + "]" }));
      }
    }
    this.el.replaceChildren(...els);
  }
}

const MODULES = {
  "@jupyter-widgets/base": base,
  "@jupyter-widgets/controls": { ...controls, HTMLView, HTMLMathView },
  [OUTPUT_MODULE]: { OutputModel, OutputView },
};

function base64ToView(s) {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return new DataView(b.buffer);
}

function bufferToBase64(buf) {
  const b = ArrayBuffer.isView(buf) ? new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) : new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

// How long after the page sent a key the kernel's values for it are not
// applied: the echoes of a slider dragged are older than where it is now.
const ECHO_QUIET_MS = 1000;

// A comm that goes through the server: send POSTs the update (one at a
// time: the model queues changes until the last is answered), and
// deliver hands the model what the event stream brought.
class Comm {
  constructor(id, manager) {
    this.comm_id = id;
    this.target_name = "jupyter.widget";
    this.manager = manager;
    this.sentAt = new Map();
    this.onMsg = null;
    this.onClose = null;
    this.seq = 0;
  }
  open() {
    return "";
  }
  close() {
    return "";
  }
  on_msg(cb) {
    this.onMsg = cb;
  }
  on_close(cb) {
    this.onClose = cb;
  }
  send(data, callbacks, metadata, buffers) {
    const id = this.comm_id + ":" + ++this.seq;
    const idle = () => {
      const cb = callbacks && callbacks.iopub && callbacks.iopub.status;
      if (cb) cb({ content: { execution_state: "idle" }, parent_header: { msg_id: id } });
    };
    if (data && data.method === "custom" && data.content && typeof data.content === "object") {
      // A widget's own message: a button's click ({"event": "click"}).
      this.manager
        .post(this.comm_id, { method: "custom", content: data.content, buffers: (buffers || []).map(bufferToBase64) })
        .catch((err) => this.manager.report(err.message))
        .finally(idle);
      return id;
    }
    if (!data || data.method !== "update" || !data.state) {
      this.manager.report("this widget's message (" + (data && data.method) + ") is not sent from the view");
      setTimeout(idle, 0);
      return id;
    }
    const now = Date.now();
    for (const k of Object.keys(data.state)) this.sentAt.set(k, now);
    this.manager
      .post(this.comm_id, {
        state: data.state,
        buffer_paths: data.buffer_paths || [],
        buffers: (buffers || []).map(bufferToBase64),
      })
      .then(
        () => {
          const t = Date.now();
          for (const k of Object.keys(data.state)) this.sentAt.set(k, t);
        },
        (err) => {
          // Refused (read-only, a model gone): the widget goes back to
          // the kernel's state.
          for (const k of Object.keys(data.state)) this.sentAt.delete(k);
          this.manager.report(err.message);
          return this.manager.reload();
        },
      )
      .catch(() => {})
      .finally(idle);
    return id;
  }
  // deliver applies a model's state as the server has it.
  deliver(m) {
    if (m.gone) {
      if (this.onClose) this.onClose({ content: { comm_id: this.comm_id, data: {} } });
      return;
    }
    const { state, buffers } = stateOf(m);
    const now = Date.now();
    for (const k of Object.keys(state)) {
      if (now - (this.sentAt.get(k) || 0) < ECHO_QUIET_MS) delete state[k];
    }
    if (!Object.keys(state).length || !this.onMsg) return;
    this.onMsg({ content: { comm_id: this.comm_id, data: { method: "update", state, buffer_paths: m.buffer_paths || [] } }, buffers });
  }
}

// stateOf is a model's state with an Output widget's outputs as the
// server's tracker has them, and its buffers decoded.
function stateOf(m) {
  const state = { ...(m.state || {}) };
  if (m.outputs_changed) state.outputs = m.outputs || [];
  return { state, buffers: (m.buffers || []).map(base64ToView) };
}

class Manager extends ManagerBase {
  constructor(o) {
    super();
    this.o = o;
    this.comms = new Map();
    this.waiters = new Map();
    this.failed = new Map(); // model id → why it could not be made
  }
  report(msg) {
    if (this.o.onError) this.o.onError(msg);
  }
  post(id, body) {
    return this.o.post(id, body);
  }
  // reload applies the state of every model as the server has it.
  async reload() {
    const r = await this.o.state();
    this.apply(r.models || []);
  }
  async loadClass(className, moduleName) {
    const mod = MODULES[moduleName];
    if (!mod) throw new Error("the widget module " + moduleName + " is not available in the web view (only @jupyter-widgets/base, controls and output are)");
    const cls = mod[className];
    if (!cls) throw new Error("no class " + className + " in " + moduleName);
    return cls;
  }
  async _get_comm_info() {
    return {};
  }
  async _create_comm(target, id) {
    return this.comm(id);
  }
  comm(id) {
    let c = this.comms.get(id);
    if (!c) {
      c = new Comm(id, this);
      this.comms.set(id, c);
    }
    return c;
  }
  // create_view neutralizes ipywidgets' error view (a model or view class
  // not found): on a click it sets as innerHTML a message holding the
  // module and class names the kernel sent. The message is shown as text.
  async create_view(model, options) {
    const view = await super.create_view(model, options);
    if (view instanceof base.ErrorWidgetView) {
      view.el.onclick = view.el.ondblclick = null;
      let msg = "";
      try {
        msg = view.generateErrorMessage().msg;
      } catch {
        msg = "this widget could not be made";
      }
      const note = document.createElement("div");
      note.className = "widget-note";
      note.textContent = "[widget not shown live: " + msg + "]";
      view.el.replaceChildren(note);
    }
    return view;
  }
  inline_sanitize(s) {
    return hooks.sanitizeHTML(String(s ?? ""));
  }
  // apply creates the models it does not hold and updates the others;
  // every model is registered before any state is deserialized, so that
  // a box can name children listed after it.
  apply(models) {
    const made = [];
    for (const m of models) {
      if (!m || !m.model_id) continue;
      if (this.has_model(m.model_id)) {
        this.comm(m.model_id).deliver(m);
        continue;
      }
      if (m.gone) continue;
      const { state, buffers } = stateOf(m);
      base.put_buffers(state, m.buffer_paths || [], buffers);
      const p = this.new_model(
        {
          model_name: state._model_name,
          model_module: state._model_module,
          model_module_version: state._model_module_version,
          model_id: m.model_id,
          comm: this.comm(m.model_id),
        },
        state,
      );
      // A model that cannot be made (a module not bundled) is shown as a
      // note where its view is.
      p.catch((err) => {
        this.failed.set(m.model_id, err.message);
        this.wake(m.model_id);
      });
      made.push(m.model_id);
    }
    made.forEach((id) => this.wake(id));
  }
  wake(id) {
    const w = this.waiters.get(id);
    if (w) {
      this.waiters.delete(id);
      w.forEach((f) => f());
    }
  }
  // whenModel resolves to the model id names, waiting up to ms for it to
  // arrive (a view's output comes before its models' coalesced events).
  async whenModel(id, ms) {
    if (this.failed.has(id)) throw new Error(this.failed.get(id));
    if (!this.has_model(id)) {
      const arrived = await new Promise((resolve) => {
        const list = this.waiters.get(id) || [];
        list.push(() => resolve(true));
        this.waiters.set(id, list);
        setTimeout(() => resolve(false), ms);
      });
      if (this.failed.has(id)) throw new Error(this.failed.get(id));
      if (!arrived && !this.has_model(id)) return null;
    }
    return this.get_model(id);
  }
  // show draws the view of model id into host.
  async show(id, host, ms) {
    const model = await this.whenModel(id, ms);
    if (!model) return false;
    const view = await this.create_view(model);
    for (let i = 0; !host.isConnected && i < 100; i++) await new Promise((r) => setTimeout(r, 20));
    if (host.isConnected) Widget.attach(view.luminoWidget, host);
    else host.append(view.el);
    return true;
  }
}

let styled = false;

/**
 * createManager returns a widget manager for one session. o: {post(id,
 * body) → Promise, state() → Promise of the widgets endpoint's answer,
 * renderOutput(o) → Element, sanitizeHTML(s) → string, onError(msg)}.
 */
function createManager(o) {
  hooks = { renderOutput: o.renderOutput, sanitizeHTML: o.sanitizeHTML };
  if (!styled) {
    const s = document.createElement("style");
    s.textContent = css;
    document.head.append(s);
    styled = true;
  }
  return new Manager(o);
}

globalThis.__kmWidgets = { createManager };
