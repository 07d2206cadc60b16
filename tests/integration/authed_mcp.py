"""A small MCP server behind OAuth, for `sluice doctor`'s authorization rules (S-5, S-17, S-20).

A 2025-11-25 Streamable HTTP server (JSON answers, sessions, no SSE) on 127.0.0.1 in a daemon
thread, a resource server in front of a `FakeAuthServer`: a request without the bearer token it
was given is answered 401 with a challenge naming its protected resource metadata (RFC 9728); its
one tool, `read_report` (read-only), needs a scope no token has and is refused 403 with an
`insufficient_scope` challenge naming it.

``flaw`` breaks one thing on purpose, as a misbehaving server would:

* ``no-challenge``: the 401 has no ``WWW-Authenticate`` header (S-5);
* ``no-resource-metadata``: the challenge names no ``resource_metadata`` (S-5);
* ``wrong-resource``: the metadata's ``resource`` is another URL (S-5, RFC 9728 section 3.3);
* ``no-metadata``: the metadata is not served (404) (S-5);
* ``no-authorization-servers``: the metadata names no authorization server (S-17);
* ``issuer-mismatch``: the authorization server's metadata names another issuer (S-17, RFC 8414
  section 3.3);
* ``wildcard-scope``: ``scopes_supported`` lists ``*`` (S-20);
* ``unnamed-scope``: the 403 ``insufficient_scope`` challenge names no scope (S-20).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from authserver import FakeAuthServer, LocalServer, QuietHandler

__all__ = ["FLAWS", "AuthedMcpServer"]

FLAWS = (
    "no-challenge",
    "no-resource-metadata",
    "wrong-resource",
    "no-metadata",
    "no-authorization-servers",
    "issuer-mismatch",
    "wildcard-scope",
    "unnamed-scope",
)
VERSIONS = ("2025-11-25", "2025-06-18")
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
TOOL = {
    "name": "read_report",
    "description": "Returns the quarterly report.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True},
}
NEEDED_SCOPE = "reports:read"


class _Handler(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._json(200, {"status": "ok", "version": "1.0.0"})
        elif path == PRM_PATH and owner.flaw != "no-metadata":
            self._json(200, owner.metadata())
        elif path == "/mcp":
            self._json(405, {"error": "no SSE stream"})
        else:
            self._json(404, {"error": "not_found"})

    def do_DELETE(self) -> None:  # noqa: N802 - stdlib name
        self._json(200, {})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        origin = self.headers.get("Origin")
        if origin is not None and not origin.startswith(("http://127.0.0.1", "http://localhost")):
            self._json(403, {"error": "forbidden origin"})
            return
        if self.headers.get("Authorization") != f"Bearer {owner.token}":
            self._json(401, {"error": "invalid_token"}, challenge=owner.challenge())
            return
        version = self.headers.get("MCP-Protocol-Version")
        if version is not None and version not in VERSIONS:
            self._json(400, {"error": "unsupported MCP-Protocol-Version"})
            return
        try:
            msg = json.loads(body)
        except ValueError:
            self._json(400, {"error": "not JSON"})
            return
        if "id" not in msg:  # a notification
            self._json(202, None)
            return
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            result = {
                "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "authed-mcp", "version": "1.0.0"},
            }
            self._rpc(msg["id"], result, session=secrets.token_hex(16))
        elif method == "ping":
            self._rpc(msg["id"], {})
        elif method == "tools/list":
            if params.get("cursor") is not None:
                self._rpc(msg["id"], error={"code": -32602, "message": "invalid cursor"})
            else:
                self._rpc(msg["id"], {"tools": [TOOL]})
        elif method == "tools/call" and params.get("name") == TOOL["name"]:
            scope = "" if owner.flaw == "unnamed-scope" else f', scope="{NEEDED_SCOPE}"'
            challenge = f'Bearer realm="mcp", error="insufficient_scope"{scope}'
            self._json(403, {"error": "insufficient_scope"}, challenge=challenge)
        elif method == "tools/call":
            self._rpc(msg["id"], error={"code": -32602, "message": "unknown tool"})
        else:
            self._rpc(msg["id"], error={"code": -32601, "message": "method not found"})

    def _rpc(self, id_: Any, result: Any = None, *, error: Any = None, session: str | None = None) -> None:
        answer = {"jsonrpc": "2.0", "id": id_}
        if error is not None:
            answer["error"] = error
        else:
            answer["result"] = result
        self._json(200, answer, session=session)

    def _json(self, status: int, doc: Any, *, challenge: str | None = None, session: str | None = None) -> None:
        body = b"" if doc is None else json.dumps(doc).encode("utf-8")
        self.send_response(status)
        if doc is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if challenge is not None:
            self.send_header("WWW-Authenticate", challenge)
        if session is not None:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(body)


class AuthedMcpServer:
    """Use as a context manager: ``with AuthedMcpServer(flaw=None) as srv: srv.url, srv.token``."""

    def __init__(self, flaw: str | None = None) -> None:
        assert flaw is None or flaw in FLAWS, flaw
        self.flaw = flaw
        self.token = "authed-mcp-" + secrets.token_hex(16)
        mismatch = "https://elsewhere.example" if flaw == "issuer-mismatch" else None
        self.auth = FakeAuthServer(metadata_issuer=mismatch)
        self._local: LocalServer | None = None

    def __enter__(self) -> AuthedMcpServer:
        self.auth.start()
        self._local = LocalServer(_Handler, self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._local is not None:
            self._local.stop()
        self.auth.stop()

    @property
    def origin(self) -> str:
        assert self._local is not None, "enter first"
        return f"http://127.0.0.1:{self._local.port}"

    @property
    def url(self) -> str:
        return self.origin + "/mcp"

    def challenge(self) -> str | None:
        if self.flaw == "no-challenge":
            return None
        if self.flaw == "no-resource-metadata":
            return 'Bearer realm="mcp"'
        return f'Bearer realm="mcp", resource_metadata="{self.origin}{PRM_PATH}"'

    def metadata(self) -> dict[str, Any]:
        scopes = ["mcp:tools", NEEDED_SCOPE] + (["*"] if self.flaw == "wildcard-scope" else [])
        return {
            "resource": "https://elsewhere.example/mcp" if self.flaw == "wrong-resource" else self.url,
            "authorization_servers": [] if self.flaw == "no-authorization-servers" else [self.auth.issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
        }
