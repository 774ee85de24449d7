"""Gemini-native clients (REST paths, `/v1/gemini`, the object routes) as the front-end registers them
(server/protocol.py).

`streams_arguments=False`: the client's own `toolConfig` decides, as it goes upstream as sent. The
caller's User-Agent and x-goog-api-client go upstream with it (Google counts its SDKs by them)."""

from proxy.gemini.errors import gemini_error_body, is_gemini_path
from proxy.gemini.routes import add_routes
from proxy.server.protocol import ClientProtocol

PROTOCOL = ClientProtocol(name="gemini", add_routes=add_routes, owns=is_gemini_path, error_body=gemini_error_body,
                          limits="gemini", streams_arguments=False, forwards_client_identity=True)
