// The official TypeScript MCP SDK's OAuth client against a kernel-mcp with
// --auth oauth: the SDK discovers the authorization server from the 401,
// registers (Dynamic Client Registration), and hands this script the
// authorization URL; the script plays the person's browser (cookies, the
// provider's login form, kernel-mcp's consent page), gives the SDK the code,
// reconnects with the token and runs code.
//
// Usage: node oauth-client.mjs MCP_URL USER PASSWORD CODE
// Prints {"text": ...} with the result of run_code.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [mcpURL, user, password, code] = process.argv.slice(2);
const redirect = 'http://127.0.0.1:1/callback';

// The browser: cookies by host (name and value only), redirects followed
// by hand until the one to the client's redirect URI.
const jar = new Map();
function cookieHeader(url) {
  const c = jar.get(url.host);
  return c ? [...c].map(([k, v]) => `${k}=${v}`).join('; ') : '';
}
function keepCookies(url, res) {
  for (const sc of res.headers.getSetCookie()) {
    const [pair] = sc.split(';');
    const i = pair.indexOf('=');
    if (!jar.has(url.host)) jar.set(url.host, new Map());
    jar.get(url.host).set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
  }
}
const unescape = (s) => s.replace(/&amp;/g, '&').replace(/&#34;|&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
// forms returns the page's forms: action and named inputs.
function forms(base, html) {
  const out = [];
  for (const m of html.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/gi)) {
    const fields = new URLSearchParams();
    for (const input of m[2].matchAll(/<input[^>]*>/gi)) {
      const name = /name="([^"]*)"/i.exec(input[0]);
      const value = /value="([^"]*)"/i.exec(input[0]);
      if (name) fields.set(unescape(name[1]), value ? unescape(value[1]) : '');
    }
    out.push({ action: new URL(unescape(m[1]), base), fields });
  }
  return out;
}
async function browse(start) {
  let url = new URL(start);
  let init = {};
  for (let step = 0; step < 20; step++) {
    const headers = { cookie: cookieHeader(url), ...(init.headers || {}) };
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    keepCookies(url, res);
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location'), url);
      if (next.href.startsWith(redirect)) return next.searchParams;
      url = next;
      init = {};
      continue;
    }
    const html = await res.text();
    const page = forms(url, html);
    const login = page.find((f) => f.fields.has('password'));
    const consent = page.find((f) => f.fields.has('consent_token'));
    const other = page.find((f) => f.fields.has('prompt'));
    const f = login || consent || other;
    if (!f) throw new Error(`the sign-in stopped at ${url} (${res.status}): ${html.slice(0, 400)}`);
    if (login) {
      f.fields.set('username', user);
      f.fields.set('login', user);
      f.fields.set('password', password);
    }
    if (consent) f.fields.set('decision', 'allow');
    url = f.action;
    init = { method: 'POST', body: f.fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  }
  throw new Error('too many steps in the sign-in');
}

let info, tokens, verifier, back;
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK client', redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
    };
  },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  async redirectToAuthorization(url) { back = await browse(url.href); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

const client = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
let transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !back) throw e;
  if (back.get('error')) throw new Error(`sign-in refused: ${back.get('error')}: ${back.get('error_description')}`);
  await transport.finishAuth(back.get('code'));
  transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  await client.connect(transport);
}
const res = await client.callTool({ name: 'run_code', arguments: { code } });
console.log(JSON.stringify({ text: res.content.filter((c) => c.type === 'text').map((c) => c.text).join('') }));
await client.close();
