"""The composition root: `app.py` builds the aiohttp application from the client protocols' folders,
the front-end's kit (`proxy/server/`) and an upstream; the CLI and the mitmproxy addon run it.
Nothing below imports this folder (tests/test_import_graph.py)."""
