"""`/inspect`: the journal as a page (static/) and a small JSON API (routes.py) the page, the
`gemini-tool-proxy inspect` command and scripts read; behind the front-end's client keys."""
