"""The official Python MCP SDK's OAuth client against kernel-mcp --auth oauth.

The SDK discovers the authorization server from the 401, registers (Dynamic
Client Registration), checks the authorization response's iss, and asks this
script to take the person through the sign-in: the script plays the browser
(cookies, the provider's login form, kernel-mcp's consent page) and hands the
code back. Then it runs code.

Usage: python oauth_client.py MCP_URL USER PASSWORD CODE
Prints {"text": ...} with the result of run_code.
"""

import asyncio
import html
import json
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

REDIRECT = "http://127.0.0.1:1/callback"
MCP_URL, USER, PASSWORD, CODE = sys.argv[1:5]


class Memory:
    """Token storage for one run."""

    def __init__(self):
        self.tokens = None
        self.info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info):
        self.info = info


FORM = re.compile(r'<form[^>]*action="([^"]*)"[^>]*>(.*?)</form>', re.S | re.I)
INPUT = re.compile(r"<input[^>]*>", re.I)


def forms(base, page):
    """The page's forms: absolute action and named fields."""
    out = []
    for action, body in FORM.findall(page):
        fields = {}
        for tag in INPUT.findall(body):
            name = re.search(r'name="([^"]*)"', tag)
            value = re.search(r'value="([^"]*)"', tag)
            if name:
                fields[html.unescape(name.group(1))] = html.unescape(value.group(1)) if value else ""
        out.append((urljoin(base, html.unescape(action)), fields))
    return out


async def browse(url):
    """Follows the sign-in to the redirect to the client; returns its query."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
        method, data = "GET", None
        for _ in range(20):
            resp = await browser.request(method, url, data=data)
            if resp.is_redirect:
                nxt = urljoin(url, resp.headers["location"])
                if nxt.startswith(REDIRECT):
                    return {k: v[0] for k, v in parse_qs(urlparse(nxt).query).items()}
                url, method, data = nxt, "GET", None
                continue
            found = forms(str(resp.url), resp.text)
            pick = (
                next((f for f in found if "password" in f[1]), None)
                or next((f for f in found if "consent_token" in f[1]), None)
                or next((f for f in found if "prompt" in f[1]), None)
            )
            if pick is None:
                raise RuntimeError(f"the sign-in stopped at {url} ({resp.status_code}): {resp.text[:300]}")
            url, fields = pick
            if "password" in fields:
                fields.update(username=USER, login=USER, password=PASSWORD)
            if "consent_token" in fields:
                fields["decision"] = "allow"
            method, data = "POST", fields
    raise RuntimeError("too many steps in the sign-in")


back = {}


async def redirect_handler(url):
    back.update(await browse(url))


async def callback_handler():
    if "error" in back:
        raise RuntimeError(f"sign-in refused: {back['error']}: {back.get('error_description')}")
    return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))


async def main():
    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK client",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http)) as client:
            res = await client.call_tool("run_code", {"code": CODE})
            text = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")
            print(json.dumps({"text": text}))


asyncio.run(main())
