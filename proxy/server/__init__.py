"""The front-end's kit: what every client protocol's handlers stand on — the request context
(`context.py`), authentication and scoping (`auth.py`, `object_owners.py`), errors in the caller's
protocol (`errors.py`), the stream relay (`stream.py`), fair share, limits and background runs.
The application that composes the protocols over this kit is one floor up, in `proxy/front/`."""
