"""The OpenAI Responses API as the front-end registers it (server/protocol.py)."""

from proxy.errors import openai_error_body
from proxy.responses.routes import TASKS, add_routes
from proxy.server.protocol import ClientProtocol, openai_paths

PROTOCOL = ClientProtocol(name="responses", add_routes=add_routes, owns=openai_paths("/v1/responses", "/responses"),
                          error_body=openai_error_body, limits="openai", streams_arguments=True, tasks=TASKS)
