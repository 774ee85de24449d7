"""Google's OAuth token endpoint, as strict as the real one about what google-auth sends it.

The grant a service account key file makes (`urn:ietf:params:oauth:grant-type:jwt-bearer`, a JWT
google-auth signs), from files whose `token_uri` points here (google-auth always sends an authorized
user's refresh token to Google itself). A token names its subject (`{subject}-token`), so the
mock's `exhausted-*` quota rule follows the credential; a service account named `revoked-*` is
refused as Google refuses a deleted one. Vertex paths accept only tokens issued here, as Google
accepts only its own.
"""

import base64
import binascii
import json
from typing import Any

from aiohttp import web

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
AUDIENCE = "https://oauth2.googleapis.com/token"  # what a grant's JWT must be addressed to
ISSUED = web.AppKey("issued_tokens", set)
# Google's answer to a token it did not issue (or one that expired).
BAD_TOKEN = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
             "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")


def _refusal(error: str, description: str) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=400)


def _jwt_claims(assertion: str) -> dict[str, Any] | None:
    """The claims of a compact JWT (header.claims.signature), or None when it is not one."""
    parts = assertion.split(".")
    if len(parts) != 3 or not all(parts):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


async def token(request: web.Request) -> web.Response:
    form = await request.post()
    if form.get("grant_type") != JWT_BEARER:
        return _refusal("unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type')}")
    claims = _jwt_claims(str(form.get("assertion", "")))
    if claims is None:
        return _refusal("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                                         "reasonable timeframe.")
    if not claims.get("scope") or not claims.get("iss") or claims.get("aud") != AUDIENCE:
        return _refusal("invalid_grant", "Invalid JWT Signature.")
    subject = str(claims["iss"])
    if subject.startswith("revoked-"):  # a deleted service account, or a deleted key
        return _refusal("invalid_grant", "Invalid grant: account not found")
    issued = f"{subject}-token"
    request.app[ISSUED].add(issued)
    return web.json_response({"access_token": issued, "expires_in": 3599, "token_type": "Bearer"})


def token_problem(request: web.Request) -> str | None:
    """A bearer token the mock did not issue (Vertex checks every token with Google)."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and auth[7:] not in request.app[ISSUED]:
        return BAD_TOKEN
    return None
