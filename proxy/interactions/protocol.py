"""Gemini's Interactions API as the front-end registers it (server/protocol.py).

`streams_arguments=False`, deliberately: an Interactions stream shows each function call as one
whole step (the translator joins partialArgs, should Gemini send them), so asking Gemini to stream
arguments would only cost a join and gain the client nothing. Its callers are google-genai's, so
their User-Agent and x-goog-api-client go upstream, as Gemini-native callers' do."""

from proxy.interactions.errors import interactions_error_body, is_interactions_path
from proxy.interactions.routes import TASKS, add_routes
from proxy.server.protocol import ClientProtocol

PROTOCOL = ClientProtocol(name="interactions", add_routes=add_routes, owns=is_interactions_path,
                          error_body=interactions_error_body, limits="gemini", streams_arguments=False,
                          forwards_client_identity=True, tasks=TASKS)
