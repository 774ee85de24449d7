"""The wire: typed models of every protocol's bodies (pydantic; no logic beyond shape), and the few
pure readers of raw wire that floors above all share — where a client presents its key
(`client_key.py`), Gemini's streamed chunks merged into one answer (`merge_chunks.py`), SSE framing
(`sse.py`), model names in URLs (`model_name.py`)."""
