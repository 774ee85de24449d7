"""Who the proxy is to Google: an API key (the Developer API) or a Google credentials file (a
service account key, or the authorized user `gcloud auth application-default login` writes) whose
OAuth access token google-auth mints and refreshes. Either is one entry of the key pool (key_pool.py).

google-auth is synchronous, so a refresh runs in a thread; it happens about once an hour per
credential, and requests arriving meanwhile wait for that one refresh instead of starting their own.
"""

import asyncio
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from proxy import metrics
from proxy.errors import UpstreamError

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
# A token endpoint answers in well under a second; google-auth's own default (120 s) would hold a
# request and a thread for two minutes when it hangs.
REFRESH_TIMEOUT = 30.0


class Credential(Protocol):
    label: str  # a hash for metrics and logs, never the secret

    async def headers(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class ApiKey:
    key: str = field(repr=False)  # never in a log line, even by accident
    label: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", metrics.key_label(self.key))

    async def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.key}


# google-auth and requests take a quarter of a second to import, hence the imports inside the
# functions below: only a Vertex user's start pays it.


@functools.cache
def _request_type() -> type:
    import google.auth.transport.requests

    class _Request(google.auth.transport.requests.Request):
        def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                     timeout: float | None = REFRESH_TIMEOUT, **kwargs: Any) -> Any:
            return super().__call__(url, method, body, headers, timeout, **kwargs)
    return _Request


class CredentialError(UpstreamError):
    """Google's token endpoint would not give a credential a token (revoked, deleted, unreachable)."""


def _load(path: str, option: str) -> tuple[Any, str | None]:
    """The two kinds of file a Vertex user holds, each with the project it names. Other kinds
    (external accounts run programs or call URLs the file names) are refused: the proxy loads only
    what cannot act on its own."""
    import google.oauth2.credentials
    from google.oauth2 import service_account

    try:
        info = json.loads(Path(path).read_text())
        kind = info.get("type") if isinstance(info, dict) else None
        if kind == "service_account":
            creds = service_account.Credentials.from_service_account_info(info, scopes=[CLOUD_PLATFORM])
            return creds, info.get("project_id")
        if kind == "authorized_user":
            creds = google.oauth2.credentials.Credentials.from_authorized_user_info(info, scopes=[CLOUD_PLATFORM])
            return creds, info.get("quota_project_id")
    except (OSError, ValueError) as e:  # unreadable, not JSON, or a field google-auth needs is missing
        raise ValueError(f"{option} {path}: {e}") from None
    raise ValueError(f"{option} {path}: type {kind!r} is not supported; give a service account key or "
                     "an authorized user's application default credentials")


class GoogleCredential:
    """A Google credentials file and the project its requests bill (Vertex's URL names it)."""

    def __init__(self, path: str, project: str | None = None, option: str = "--vertex-credentials") -> None:
        creds, file_project = _load(path, option)
        self.project = project or file_project
        if not self.project:
            raise ValueError(f"{option} {path}: the file names no project; give {option.removesuffix('credentials')}"
                             "project")
        self.name = Path(path).name
        self.label = metrics.key_label(str(Path(path).resolve()))
        self._creds: Any = creds
        self._lock: asyncio.Lock | None = None

    async def headers(self) -> dict[str, str]:
        if not self._creds.valid:  # google-auth counts a token expiring within minutes as invalid
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if not self._creds.valid:
                    await self._refresh()
        headers: dict[str, str] = {}
        self._creds.apply(headers)  # authorization, and x-goog-user-project when the file names one
        return {k.lower(): v for k, v in headers.items()}

    async def _refresh(self) -> None:
        import google.auth.exceptions

        request = _request_type()()
        try:
            await asyncio.to_thread(self._creds.refresh, request)
        except google.auth.exceptions.GoogleAuthError as e:
            reason = e.args[0] if e.args else str(e)
            raise CredentialError(f"Google's token endpoint gave the upstream credential {self.name} no token: "
                                  f"{str(reason)[:300]}", status=502, type="server_error",
                                  gemini_error={"code": 502, "status": "UNAVAILABLE",
                                                "message": f"The proxy's upstream credential {self.name} was "
                                                           "refused a token."}) from None
        finally:
            request.session.close()
