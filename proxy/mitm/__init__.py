"""The mitmproxy side: the addon that rewrites intercepted Gemini traffic and hosts the front-end."""
