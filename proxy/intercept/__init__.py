"""The mitmproxy side: small addons sharing one session store (options, front-end, rewrite, capture, relay)."""
