"""The OpenAI Responses API: HTTP+SSE (routes.py) and WebSocket (websocket.py) transports over
one pipeline (turn.py)."""
