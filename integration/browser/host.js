// A minimal MCP Apps host for the browser tests: the official TypeScript
// client speaks streamable HTTP to kernel-mcp on this page's own origin,
// and ext-apps' AppBridge connects each tool call's view (the ui://
// resource its tool links) in a sandboxed iframe. The driver calls
// window.runTool(name, args) and then inspects the iframe's frame.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const hostInfo = { name: "kernel-mcp-test-host", version: "1" };
const client = new Client(hostInfo, {
  capabilities: {
    extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } },
  },
});

// calls logs every tools/call the page makes, and who made it: "host" for
// the driver's runTool, "view" for a call the view made through the bridge.
window.calls = [];
let tools = null;
let viewCount = 0;
const bridges = {};

// setTheme changes a view's host context, as a host does when the person
// switches between light and dark.
window.setTheme = (frame, theme) => bridges[frame].setHostContext({ theme });

const ready = (async () => {
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.origin)));
  tools = (await client.listTools()).tools;
  document.getElementById("status").textContent = "connected";
})();
window.hostReady = ready.then(() => true, (e) => { throw new Error("host: connecting: " + e); });
window.listTools = async () => { await ready; return tools; };
// callTool calls a tool as the model would, with no view.
window.callTool = async (name, args) => { await ready; return client.callTool({ name, arguments: args }); };

// viewCSP is the Content-Security-Policy a host puts on a view, from its
// resource's _meta.ui.csp; without one, the restrictive default the MCP
// Apps spec (2026-01-26, "Host Behavior") says hosts MUST use. The view
// is held to it by a <meta http-equiv> at the top of its document, as
// hosts that serve views through srcdoc do.
function viewCSP(csp) {
  const res = (csp?.resourceDomains || []).join(" ");
  const connect = (csp?.connectDomains || []).join(" ");
  const frames = (csp?.frameDomains || []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${res}`,
    `style-src 'self' 'unsafe-inline' ${res}`,
    `img-src 'self' data: ${res}`,
    `font-src 'self' ${res}`,
    `media-src 'self' data: ${res}`,
    `connect-src ${connect || "'none'"}`,
    `frame-src ${frames || "'none'"}`,
    `base-uri ${(csp?.baseUriDomains || []).join(" ") || "'self'"}`,
  ].map((d) => d.trim()).join("; ");
}
window.viewCSPs = [];
window.viewSizes = []; // the views' HTML, in bytes, as the host reads them

function withCSP(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  const m = /<head[^>]*>/i.exec(html);
  return m ? html.slice(0, m.index + m[0].length) + meta + html.slice(m.index + m[0].length) : meta + html;
}

function resourceURI(tool) {
  const meta = tool?._meta || {};
  return meta.ui?.resourceUri || meta["ui/resourceUri"] || "";
}

// runTool calls a tool the way a chat host would and shows its view.
// It resolves once the tool result has been handed to the view, with
// {frame: the iframe's name, result, uri}.
window.runTool = async (name, args) => {
  await ready;
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} in tools/list`);
  const uri = resourceURI(tool);
  if (!uri) throw new Error(`tool ${name} links no view (_meta.ui.resourceUri)`);
  const res = await client.readResource({ uri });
  const content = res.contents.find((c) => c.uri === uri) || res.contents[0];
  if (!content || typeof content.text !== "string") throw new Error(`resource ${uri}: no text`);
  if (content.mimeType !== "text/html;profile=mcp-app") throw new Error(`resource ${uri}: MIME type ${content.mimeType}`);

  const frameName = `view-${++viewCount}`;
  const iframe = document.createElement("iframe");
  iframe.name = frameName;
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.height = "40px"; // the view reports its size, see onsizechange
  document.getElementById("views").appendChild(iframe);

  const bridge = new AppBridge(client, hostInfo,
    { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { theme: "light", displayMode: "inline", locale: "en-US" } });
  let initialized;
  const init = new Promise((r) => { initialized = r; });
  bridges[frameName] = bridge;
  bridge.oninitialized = () => initialized();
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${Math.ceil(height)}px`; };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // Forward the view's tool calls to the server, and log them.
  bridge.oncalltool = async (params) => {
    const call = { by: "view", frame: frameName, name: params.name, args: params.arguments, at: Date.now() };
    window.calls.push(call);
    try {
      const r = await client.callTool(params);
      call.isError = !!r.isError;
      call.text = (r.content || []).map((c) => c.text || "").join("\n").slice(0, 300);
      return r;
    } catch (e) {
      call.error = String(e);
      throw e;
    }
  };
  const policy = viewCSP(content._meta?.ui?.csp);
  window.viewCSPs.push({ frame: frameName, policy });
  window.viewSizes.push(new TextEncoder().encode(content.text).length);
  iframe.srcdoc = withCSP(content.text, policy);

  await init;
  await bridge.sendToolInput({ arguments: args });
  window.calls.push({ by: "host", frame: frameName, name, args, at: Date.now() });
  const result = await client.callTool({ name, arguments: args });
  await bridge.sendToolResult(result);
  return { frame: frameName, uri, result };
};
