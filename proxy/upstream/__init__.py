"""Whatever answers the front-end's Gemini requests: Gemini over HTTP, the forced-choice wrapper.
(Relay mode's upstream is in proxy/intercept/relay.py.)"""
