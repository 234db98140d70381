"""A stub OpenID Connect provider on 127.0.0.1 for the console's sign-in test: discovery, a
JWKS with one RSA key, an authorization endpoint that signs its one user in at once and sends
the browser back with a code, and a token endpoint that checks the PKCE verifier against the
S256 challenge (RFC 7636 §4.6) before it answers RS256 id and access tokens.

RSA is written out here (key generation, PKCS #1 v1.5 signatures with SHA-256) so the tests
need no cryptography package: this key signs test tokens only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KID = "stub-1"
# DER of the DigestInfo prefix for SHA-256 (RFC 8017 §9.2, note 1).
SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _probable_prime(bits: int) -> int:
    small = [p for p in range(3, 2000, 2) if all(p % q for q in range(3, int(p**0.5) + 1, 2))]
    while True:
        n = secrets.randbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if any(n % p == 0 for p in small):
            continue
        d, r = n - 1, 0
        while d % 2 == 0:
            d, r = d // 2, r + 1
        for _ in range(40):  # Miller-Rabin: a composite survives with odds below 4^-40
            x = pow(secrets.randbelow(n - 3) + 2, d, n)
            if x in (1, n - 1):
                continue
            for _ in range(r - 1):
                x = pow(x, 2, n)
                if x == n - 1:
                    break
            else:
                break
        else:
            return n


@dataclass
class RsaKey:
    n: int
    e: int
    d: int

    @classmethod
    def generate(cls, bits: int = 2048) -> "RsaKey":
        e = 65537
        while True:
            p, q = _probable_prime(bits // 2), _probable_prime(bits // 2)
            phi = (p - 1) * (q - 1)
            if p != q and phi % e and (p * q).bit_length() == bits:
                return cls(p * q, e, pow(e, -1, phi))

    def jwk(self) -> dict[str, str]:
        size = (self.n.bit_length() + 7) // 8
        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KID,
                "n": b64url(self.n.to_bytes(size, "big")), "e": b64url(self.e.to_bytes(3, "big"))}

    def sign_jwt(self, claims: dict[str, Any]) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": KID}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        size = (self.n.bit_length() + 7) // 8
        digest = SHA256_PREFIX + hashlib.sha256(signing_input.encode()).digest()
        encoded = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
        signature = pow(int.from_bytes(encoded, "big"), self.d, self.n)
        return f"{signing_input}.{b64url(signature.to_bytes(size, 'big'))}"


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str


@dataclass
class StubIdp:
    """The provider; `issuer` is its URL once started. `redirect_uri` must be set to the one
    redirect URI it accepts; `tenant` is the tenant_id claim of its user's tokens."""

    client_id: str
    tenant: str
    audience: str
    redirect_uri: str = ""
    key: RsaKey = field(default_factory=RsaKey.generate)
    issuer: str = ""
    grants: dict[str, Grant] = field(default_factory=dict)
    # What the token endpoint decided, in order: "issued" or the OAuth error it answered.
    token_answers: list[str] = field(default_factory=list)
    authorize_queries: list[dict[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> "StubIdp":
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
                raw = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/.well-known/openid-configuration":
                    self._send(200, {"issuer": idp.issuer, "jwks_uri": f"{idp.issuer}/jwks",
                                     "authorization_endpoint": f"{idp.issuer}/authorize",
                                     "token_endpoint": f"{idp.issuer}/token",
                                     "code_challenge_methods_supported": ["S256"]})
                elif url.path == "/jwks":
                    self._send(200, {"keys": [idp.key.jwk()]})
                elif url.path == "/authorize":
                    self._authorize(dict(urllib.parse.parse_qsl(url.query)))
                else:
                    self._send(404, {"error": "not_found"})

            def _authorize(self, q: dict[str, str]) -> None:
                idp.authorize_queries.append(q)
                if q.get("client_id") != idp.client_id or q.get("redirect_uri") != idp.redirect_uri:
                    # Never redirect to an unregistered URI (RFC 6749 §4.1.2.1).
                    self._send(400, {"error": "invalid_request"})
                    return
                back = urllib.parse.urlsplit(q["redirect_uri"])
                if (q.get("response_type") != "code" or q.get("code_challenge_method") != "S256"
                        or not q.get("code_challenge") or not q.get("state")):
                    answer = {"error": "invalid_request", "state": q.get("state", "")}
                else:
                    code = secrets.token_urlsafe(24)
                    idp.grants[code] = Grant(q["client_id"], q["redirect_uri"], q["code_challenge"])
                    answer = {"code": code, "state": q["state"]}
                location = back._replace(query=urllib.parse.urlencode(answer)).geturl()
                self._send(302, None, {"Location": location})

            def do_POST(self) -> None:
                if urllib.parse.urlsplit(self.path).path != "/token":
                    self._send(404, {"error": "not_found"})
                    return
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                cors = {"Access-Control-Allow-Origin": self.headers.get("Origin", "*")}
                grant = idp.grants.pop(form.get("code", ""), None)  # a code is used once
                verifier = form.get("code_verifier", "")
                if form.get("grant_type") != "authorization_code" or grant is None:
                    error = "invalid_grant"
                elif form.get("client_id") != grant.client_id or form.get("redirect_uri") != grant.redirect_uri:
                    error = "invalid_grant"
                elif b64url(hashlib.sha256(verifier.encode()).digest()) != grant.challenge:
                    error = "invalid_grant: the code_verifier does not match the challenge"
                else:
                    error = ""
                idp.token_answers.append(error or "issued")
                if error:
                    self._send(400, {"error": "invalid_grant", "error_description": error}, cors)
                    return
                now = int(time.time())
                claims = {"iss": idp.issuer, "sub": "user-1", "tenant_id": idp.tenant, "iat": now,
                          "exp": now + 600}
                access = idp.key.sign_jwt({**claims, "client_id": idp.audience, "token_use": "access"})
                id_token = idp.key.sign_jwt({**claims, "aud": idp.client_id, "token_use": "id"})
                self._send(200, {"access_token": access, "id_token": id_token, "token_type": "Bearer",
                                 "expires_in": 600}, cors)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
