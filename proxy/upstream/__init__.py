"""Whatever answers the front-end's Gemini requests: one HTTP engine (http.py) with one folder per
peer over it (gemini/, interactions/, openai/), and the peer-agnostic wrappers (fallback, forced
choice, observed, routes, text calls). (Relay mode's upstream is in proxy/intercept/relay.py.)"""
