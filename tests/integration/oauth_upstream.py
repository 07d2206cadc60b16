"""An OAuth-protected MCP server, for sluice's upstream OAuth tests: the Python SDK's own
authorization support (``mcp`` 2.3.0: ``MCPServer(auth_server_provider=..., auth=AuthSettings(...))``
mounts the authorization server's endpoints (RFC 8414 metadata, ``/authorize``, ``/token``,
``/register``, ``/revoke``), the protected resource metadata (RFC 9728) and the bearer check on
``/mcp``). Only the provider (where clients, codes and tokens are kept) is written here: in memory,
and ``/authorize`` approves at once (no user to ask), redirecting with a code.

    python oauth_upstream.py STATE_FILE [--token-lifetime SECONDS]

prints ``http://127.0.0.1:PORT/mcp`` on its first line once it listens. Tools: ``whoami`` (the
client id and scopes of the token it was called with). Test hooks, outside MCP:

* ``POST /admin/revoke``: revokes every access and refresh token (the account was cut off);
* STATE_FILE is rewritten after every change: counts of authorizations, code and refresh grants,
  and every token issued, so that a test can look for them where they must not be.
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

SCOPE = "notes:read"


class Provider:
    """Clients, codes and tokens in memory; every change is written to the state file."""

    def __init__(self, state_file: Path, lifetime: int) -> None:
        self.state_file = state_file
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats: dict[str, Any] = {"authorizations": 0, "code_grants": 0, "refresh_grants": 0,
                                      "registrations": 0, "client_ids": [], "issued": [], "scopes": []}
        self.save()

    def save(self) -> None:
        self.state_file.write_text(json.dumps(self.stats))

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1
        self.stats["client_ids"].append(client_info.client_id)
        self.save()

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 120,
            client_id=client.client_id or "", code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject="alice",
        )
        self.stats["authorizations"] += 1
        self.stats["scopes"].append(params.scopes)
        self.save()
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.lifetime, resource=resource, subject="alice")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource,
                                             subject="alice")
        self.stats["issued"] += [access, refresh]
        self.save()
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.lifetime,
                          refresh_token=refresh, scope=" ".join(scopes))

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(code.code, None)
        self.stats["code_grants"] += 1
        return self._issue(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.stats["refresh_grants"] += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def revoke_all(self) -> None:
        self.access.clear()
        self.refresh.clear()
        self.stats["revoked"] = True
        self.save()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("state_file", type=Path)
    parser.add_argument("--token-lifetime", type=int, default=3600)
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider(args.state_file, args.token_lifetime)
    server = MCPServer(
        "oauth-notes",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE],
                                                                  default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[SCOPE],
        ),
    )

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The client id and scopes of the caller's token."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return json.dumps({"client_id": token.client_id if token else None,
                           "scopes": token.scopes if token else None})

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def revoke(_request: Request) -> JSONResponse:
        provider.revoke_all()
        return JSONResponse({"revoked": True})

    app = server.streamable_http_app()
    print(f"{base}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
