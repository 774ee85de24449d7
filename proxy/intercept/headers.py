"""mitmproxy's header and body accessors, each in one pass over the header fields (issue 62).

`headers.get(name)` in mitmproxy goes through Mapping.get, MultiDict.__getitem__ and get_all, which
convert the name and lower-case every field's name on each call; `headers.pop` scans the fields three
times; `Message.set_content` and `get_content` look the content encoding up (and set_content the
transfer encoding and the content length) the same way. An owned flow made about a dozen such lookups
across the addon's hooks: some 30 % of the addon's own time per flow. These do what those do, with
the same results (names are given lower-case, as bytes), reading `headers.fields` once each; an
encoded body takes mitmproxy's own path.
"""

from mitmproxy import http


def get(headers: http.Headers, name: bytes) -> str | None:
    """headers.get(name): the values of `name` (lower-case bytes) folded with ", ", or None."""
    values = [v for k, v in headers.fields if k.lower() == name]
    if not values:
        return None
    return ", ".join([v.decode("utf-8", "surrogateescape") for v in values])


def pop(headers: http.Headers, name: bytes) -> str | None:
    """headers.pop(name, None): the folded values, every field of that name removed; None (and the
    headers untouched) when there is none."""
    fields = headers.fields
    values = [v for k, v in fields if k.lower() == name]
    if not values:
        return None
    headers.fields = tuple(f for f in fields if f[0].lower() != name)
    return ", ".join([v.decode("utf-8", "surrogateescape") for v in values])


def content(message: http.Message) -> bytes | None:
    """message.get_content(strict=False): the raw body when no content encoding is set, else
    mitmproxy's decoding (the raw body when it fails)."""
    raw = message.raw_content
    if raw is None:
        return None
    return message.get_content(strict=False) if get(message.headers, b"content-encoding") else raw


def set_content(message: http.Message, value: bytes) -> None:
    """message.set_content(value) for a body without content encoding (else mitmproxy's, which
    encodes it): the body, and its content-length unless a transfer encoding is set, set in place
    of the first content-length field (the others removed) or added last, as set_content does."""
    fields = message.headers.fields
    encodings, encoded, chunked = 0, False, False
    for k, v in fields:
        lower = k.lower()
        if lower == b"content-encoding":
            encodings += 1
            encoded = encoded or bool(v)
        elif lower == b"transfer-encoding":
            chunked = True
    if encoded or encodings > 1:  # (two empty ones fold to ", ": mitmproxy's path too)
        message.set_content(value)
        return
    message.raw_content = value
    if chunked:
        return
    length = str(len(value)).encode()
    kept: list[tuple[bytes, bytes]] = []
    done = False
    for field in fields:
        if field[0].lower() == b"content-length":
            if not done:
                kept.append((field[0], length))
                done = True
        else:
            kept.append(field)
    if not done:
        kept.append((b"content-length", length))
    message.headers.fields = tuple(kept)
