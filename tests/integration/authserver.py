"""A fake OAuth 2.1 authorization server for sluice's auth tests.

It only does what a resource server needs from an authorization server: it publishes its metadata
(RFC 8414 at ``/.well-known/oauth-authorization-server`` and OpenID Connect discovery at
``/.well-known/openid-configuration``) and its signing keys (``/jwks``), and it mints access tokens
(JWTs) the tests hand to sluice, good ones and every kind of bad one.

* stdlib ``http.server`` in a daemon thread on 127.0.0.1, ephemeral port;
* one RSA 2048 key (RS256) and one EC P-256 key (ES256), made with ``cryptography`` at start;
* counts every request per path (``fetches("/jwks")``), so a test can see how often sluice fetched
  the JWKS;
* ``rotate()`` adds a new RSA key to the JWKS (the old keys stay unless told otherwise);
* ``metadata_issuer=...`` makes the metadata documents name another issuer than the URL they are
  fetched from (RFC 8414 section 3.3 says a client must then not use them).

Tokens are made with PyJWT (``jwt.encode``) except the two PyJWT refuses to make: ``alg: none``
and HS256 keyed with the RSA public key's PEM (the RS/HS key-confusion attack), which are
assembled by hand here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

__all__ = ["FakeAuthServer", "LocalServer", "QuietHandler", "SigningKey", "b64url"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _uint(n: int, size: int | None = None) -> str:
    length = size if size is not None else max(1, (n.bit_length() + 7) // 8)
    return b64url(n.to_bytes(length, "big"))


def _json_segment(obj: dict[str, Any]) -> str:
    return b64url(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


class SigningKey:
    """A private key, its `kid` and its public JWK."""

    def __init__(self, kind: str, kid: str) -> None:
        self.kind = kind
        self.kid = kid
        if kind == "RSA":
            self.alg = "RS256"
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif kind == "EC":
            self.alg = "ES256"
            self.private = ec.generate_private_key(ec.SECP256R1())
        else:
            raise ValueError(kind)
        self.public = self.private.public_key()

    def jwk(self) -> dict[str, Any]:
        if self.kind == "RSA":
            nums = self.public.public_numbers()
            return {"kty": "RSA", "kid": self.kid, "alg": self.alg, "use": "sig", "n": _uint(nums.n), "e": _uint(nums.e)}
        nums = self.public.public_numbers()
        return {
            "kty": "EC",
            "kid": self.kid,
            "alg": self.alg,
            "use": "sig",
            "crv": "P-256",
            "x": _uint(nums.x, 32),
            "y": _uint(nums.y, 32),
        }

    def public_pem(self) -> bytes:
        return self.public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, no request log; ``self.server.owner`` is what the ``LocalServer`` serves for."""

    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


class _Handler(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        owner._count(path)
        doc = owner._document(path)
        if doc is None:
            self._send(404, {"error": "not_found"})
        else:
            self._send(200, doc)

    def _send(self, status: int, doc: dict[str, Any]) -> None:
        body = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: Any


class LocalServer:
    """An HTTP server on 127.0.0.1 (an ephemeral port) in a daemon thread, for ``owner``."""

    def __init__(self, handler: type[QuietHandler], owner: Any) -> None:
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.owner = owner
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class FakeAuthServer:
    """Start with ``FakeAuthServer().start()`` (or as a context manager); ``stop()`` at the end."""

    JWKS_PATH = "/jwks"
    RFC8414_PATH = "/.well-known/oauth-authorization-server"
    OIDC_PATH = "/.well-known/openid-configuration"

    def __init__(self, *, metadata_issuer: str | None = None) -> None:
        self.rsa = SigningKey("RSA", "rsa-" + secrets.token_hex(4))
        self.ec = SigningKey("EC", "ec-" + secrets.token_hex(4))
        self.keys: list[SigningKey] = [self.rsa, self.ec]
        self._metadata_issuer = metadata_issuer
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._last: dict[str, float] = {}
        self._local: LocalServer | None = None
        self.port: int | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeAuthServer:
        self._local = LocalServer(_Handler, self)
        self.port = self._local.port
        return self

    def stop(self) -> None:
        if self._local is not None:
            self._local.stop()
        self._local = None

    def __enter__(self) -> FakeAuthServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- what it serves -------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        assert self.port is not None, "start() first"
        return f"http://127.0.0.1:{self.port}"

    @property
    def jwks_url(self) -> str:
        return self.issuer + self.JWKS_PATH

    def metadata(self) -> dict[str, Any]:
        issuer = self._metadata_issuer if self._metadata_issuer is not None else self.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "jwks_uri": self.jwks_url,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["mcp:tools", "echo:call"],
            # OpenID discovery wants these; harmless in the RFC 8414 document.
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        }

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            return {"keys": [k.jwk() for k in self.keys]}

    def _document(self, path: str) -> dict[str, Any] | None:
        if path in (self.RFC8414_PATH, self.OIDC_PATH):
            return self.metadata()
        if path == self.JWKS_PATH:
            return self.jwks()
        return None

    def _count(self, path: str) -> None:
        with self._lock:
            self._counts[path] += 1
            self._last[path] = time.monotonic()

    def last_fetch(self, path: str = JWKS_PATH) -> float | None:
        """`time.monotonic()` of the last request for `path`, or None."""
        with self._lock:
            return self._last.get(path)

    def fetches(self, path: str = JWKS_PATH) -> int:
        with self._lock:
            return self._counts[path]

    def all_fetches(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def rotate(self, *, keep_old: bool = True) -> SigningKey:
        """Publish a new RSA key (a kid sluice has not seen). Returns it."""
        key = SigningKey("RSA", "rotated-" + secrets.token_hex(4))
        with self._lock:
            self.keys = [*self.keys, key] if keep_old else [key]
        return key

    # --- tokens ---------------------------------------------------------------------------------

    def claims(self, audience: str | list[str], *, subject: str = "user-1", scope: str | None = "mcp:tools",
               lifetime: int = 600, **overrides: Any) -> dict[str, Any]:
        """Good claims; `overrides` replace or (value None) remove claims."""
        now = int(time.time())
        c: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "nbf": now - 5,
            "exp": now + lifetime,
            "jti": secrets.token_hex(8),
        }
        if scope is not None:
            c["scope"] = scope
        for k, v in overrides.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        return c

    def sign(self, claims: dict[str, Any], key: SigningKey | None = None, *, kid: str | None = None,
             alg: str | None = None) -> str:
        key = key or self.rsa
        return jwt.encode(claims, key.private, algorithm=alg or key.alg, headers={"kid": kid or key.kid})

    def valid_rs256(self, audience: str | list[str], **kw: Any) -> str:
        return self.sign(self.claims(audience, **kw), self.rsa)

    def valid_es256(self, audience: str | list[str], **kw: Any) -> str:
        return self.sign(self.claims(audience, **kw), self.ec)

    def expired(self, audience: str) -> str:
        now = int(time.time())
        return self.sign(self.claims(audience, iat=now - 7200, nbf=now - 7200, exp=now - 3600))

    def not_yet_valid(self, audience: str) -> str:
        now = int(time.time())
        return self.sign(self.claims(audience, nbf=now + 3600, exp=now + 7200))

    def without_exp(self, audience: str) -> str:
        return self.sign(self.claims(audience, exp=None))

    def wrong_aud(self, audience: str) -> str:
        return self.sign(self.claims("https://another-resource.example.com/mcp"))

    def wrong_iss(self, audience: str) -> str:
        return self.sign(self.claims(audience, iss="https://evil.example.com"))

    def unknown_kid(self, audience: str) -> str:
        return self.sign(self.claims(audience), self.rsa, kid="unknown-" + secrets.token_hex(4))

    def foreign_key(self, audience: str) -> str:
        """Signed by a key the AS never published, under the published RSA kid (bad signature)."""
        stranger = SigningKey("RSA", self.rsa.kid)
        return self.sign(self.claims(audience), stranger)

    def alg_kid_mismatch(self, audience: str) -> str:
        """ES256, signed with the EC key, but naming the RSA key's kid."""
        return self.sign(self.claims(audience), self.ec, kid=self.rsa.kid)

    def alg_none(self, audience: str) -> str:
        header = {"alg": "none", "typ": "JWT", "kid": self.rsa.kid}
        return f"{_json_segment(header)}.{_json_segment(self.claims(audience))}."

    def hs256_with_rsa_public_pem(self, audience: str) -> str:
        """HMAC-SHA256 keyed with the RSA public key's PEM: a verifier that takes the key from
        the JWKS and the algorithm from the token would accept it."""
        header = {"alg": "HS256", "typ": "JWT", "kid": self.rsa.kid}
        signing_input = f"{_json_segment(header)}.{_json_segment(self.claims(audience))}"
        mac = hmac.new(self.rsa.public_pem(), signing_input.encode("ascii"), hashlib.sha256).digest()
        return f"{signing_input}.{b64url(mac)}"

    BAD_KINDS = ("expired", "not_yet_valid", "no_exp", "wrong_aud", "wrong_iss", "unknown_kid", "foreign_key",
                 "alg_kid_mismatch", "alg_none", "hs256_key_confusion", "not_a_jwt")

    def bad_token(self, kind: str, audience: str) -> str:
        """One kind of token sluice must refuse (401 invalid_token)."""
        makers = {
            "expired": self.expired,
            "not_yet_valid": self.not_yet_valid,
            "no_exp": self.without_exp,
            "wrong_aud": self.wrong_aud,
            "wrong_iss": self.wrong_iss,
            "unknown_kid": self.unknown_kid,
            "foreign_key": self.foreign_key,
            "alg_kid_mismatch": self.alg_kid_mismatch,
            "alg_none": self.alg_none,
            "hs256_key_confusion": self.hs256_with_rsa_public_pem,
            "not_a_jwt": lambda _aud: "not-a-jwt-" + secrets.token_hex(12),
        }
        return makers[kind](audience)

    def bad_tokens(self, audience: str) -> dict[str, str]:
        """Every kind of bad token, by name."""
        return {kind: self.bad_token(kind, audience) for kind in self.BAD_KINDS}


if __name__ == "__main__":
    # Self-check: serve, fetch the documents, verify one token of each good kind with PyJWT.
    import urllib.request

    with FakeAuthServer() as a:
        for p in (a.RFC8414_PATH, a.OIDC_PATH, a.JWKS_PATH):
            with urllib.request.urlopen(a.issuer + p, timeout=5) as r:  # noqa: S310 - loopback
                print(p, r.status, json.loads(r.read())["issuer" if p != a.JWKS_PATH else "keys"] and "ok")
        aud = "http://127.0.0.1:1/mcp"
        published = {k["kid"]: jwt.PyJWK(k) for k in a.jwks()["keys"]}
        for tok, key in ((a.valid_rs256(aud), a.rsa), (a.valid_es256(aud), a.ec)):
            # Verified with the key as published in the JWKS, not the local object.
            print(jwt.decode(tok, published[key.kid], algorithms=[key.alg], audience=aud, issuer=a.issuer)["sub"])
        print(a.all_fetches())
