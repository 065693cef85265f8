// A small MCP Apps view client: the part of @modelcontextprotocol/ext-apps'
// App that the cell view uses, speaking the same JSON-RPC over postMessage
// (spec 2026-01-26). The SDK's App bundles the whole MCP client and zod
// (about 390 KB minified), which alone would break the view's 400 KB budget;
// the protocol the view needs is a handful of messages. test/bridge.test.mjs
// checks this class against the SDK's own host side, AppBridge.

export const PROTOCOL_VERSION = "2026-01-26";

/**
 * windowTransport talks to the host window: it posts to target and accepts
 * only JSON-RPC messages whose source is target.
 */
export function windowTransport(target = window.parent) {
  return {
    start(onmessage) {
      this.listener = (ev) => {
        if (ev.source !== target) return;
        const m = ev.data;
        if (m && typeof m === "object" && m.jsonrpc === "2.0") onmessage(m);
      };
      window.addEventListener("message", this.listener);
    },
    send(m) {
      target.postMessage(m, "*");
    },
    close() {
      window.removeEventListener("message", this.listener);
    },
  };
}

/**
 * App is the view's side of the host connection. Set the on* handlers
 * before connect(): the host may send the tool result right after the
 * handshake.
 */
export class App {
  constructor(appInfo, appCapabilities = {}, options = {}) {
    this.appInfo = appInfo;
    this.appCapabilities = appCapabilities;
    this.options = { autoResize: true, requestTimeoutMs: 60000, ...options };
    this.nextId = 1;
    this.pending = new Map();
    this.hostContext = undefined;
    this.hostCapabilities = undefined;
    this.hostInfo = undefined;
    this.ontoolinput = undefined;
    this.ontoolresult = undefined;
    this.ontoolcancelled = undefined;
    this.onhostcontextchanged = undefined;
    this.onteardown = undefined;
  }

  /** connect performs ui/initialize and starts reporting the view's size. */
  async connect(transport = windowTransport()) {
    this.transport = transport;
    transport.start((m) => this.receive(m));
    const r = await this.request("ui/initialize", {
      appInfo: this.appInfo,
      appCapabilities: this.appCapabilities,
      protocolVersion: PROTOCOL_VERSION,
    });
    this.hostCapabilities = r.hostCapabilities;
    this.hostInfo = r.hostInfo;
    this.hostContext = r.hostContext || {};
    this.notify("ui/notifications/initialized");
    if (this.options.autoResize && typeof ResizeObserver !== "undefined") this.setupSizeChangedNotifications();
  }

  getHostContext() {
    return this.hostContext;
  }

  /** callServerTool calls a tool on the MCP server through the host. */
  callServerTool(params) {
    return this.request("tools/call", params);
  }

  /**
   * readServerResource reads a resource of the MCP server through the host
   * (hosts that declare serverResources forward resources/read).
   */
  readServerResource(params) {
    return this.request("resources/read", params);
  }

  sendSizeChanged(params) {
    this.notify("ui/notifications/size-changed", params);
  }

  /** setupSizeChangedNotifications reports the document's height as it changes. */
  setupSizeChangedNotifications() {
    let w = 0;
    let h = 0;
    let queued = false;
    const measure = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        const de = document.documentElement;
        const saved = de.style.height;
        de.style.height = "max-content";
        const nh = Math.ceil(de.getBoundingClientRect().height);
        de.style.height = saved;
        const nw = Math.ceil(window.innerWidth);
        if (nw !== w || nh !== h) {
          w = nw;
          h = nh;
          this.sendSizeChanged({ width: nw, height: nh });
        }
      });
    };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(document.documentElement);
    ro.observe(document.body);
    return () => ro.disconnect();
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(method + ": no answer from the host"));
      }, this.options.requestTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.transport.send({ jsonrpc: "2.0", id, method, params: params || {} });
    });
  }

  notify(method, params) {
    const m = { jsonrpc: "2.0", method };
    if (params) m.params = params;
    this.transport.send(m);
  }

  receive(m) {
    if (m.method === undefined) {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error) p.reject(new Error(m.error.message || "host error " + m.error.code));
      else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined) {
      this.answer(m);
      return;
    }
    const params = m.params || {};
    switch (m.method) {
      case "ui/notifications/tool-input":
        this.ontoolinput?.(params);
        break;
      case "ui/notifications/tool-result":
        this.ontoolresult?.(params);
        break;
      case "ui/notifications/tool-cancelled":
        this.ontoolcancelled?.(params);
        break;
      case "ui/notifications/host-context-changed":
        this.hostContext = { ...this.hostContext, ...params };
        this.onhostcontextchanged?.(params);
        break;
    }
  }

  async answer(m) {
    const reply = { jsonrpc: "2.0", id: m.id };
    try {
      if (m.method === "ping") reply.result = {};
      else if (m.method === "ui/resource-teardown") reply.result = (await this.onteardown?.(m.params || {})) || {};
      else reply.error = { code: -32601, message: "Method not found: " + m.method };
    } catch (err) {
      reply.error = { code: -32603, message: String((err && err.message) || err) };
    }
    this.transport.send(reply);
  }
}
