"""The session core the front-end, the store and the addons share: a session's tool context, its
rounds of captured calls, and how outputs pair with calls. Pure; no protocol, no I/O."""
