"""OpenAI Chat Completions as the front-end registers it (server/protocol.py)."""

from proxy.chat.routes import add_routes
from proxy.errors import openai_error_body
from proxy.server.protocol import ClientProtocol, openai_paths

PROTOCOL = ClientProtocol(name="chat", add_routes=add_routes, owns=openai_paths("/v1/chat/completions"),
                          error_body=openai_error_body, limits="openai", streams_arguments=True)
