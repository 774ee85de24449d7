"""Anthropic Messages as the front-end registers it (server/protocol.py). Its SDKs read the request id
from `request-id`, so x-request-id is sent there too."""

from proxy.anthropic.errors import anthropic_error_body, is_anthropic_path
from proxy.anthropic.routes import add_routes
from proxy.server.protocol import ClientProtocol

PROTOCOL = ClientProtocol(name="anthropic", add_routes=add_routes, owns=is_anthropic_path,
                          error_body=anthropic_error_body, limits="anthropic", streams_arguments=True,
                          request_id_header="request-id")
