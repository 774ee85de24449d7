"""Gemini model names: the one grammar every model name passes before it becomes part of a URL.

A client names the model, and the model name becomes a path segment of the upstream URL that
carries the operator's key: `../`, `%2e%2e/`, `?` or `#` in it must never reach the URL builder.
Gemini's model ids are letters, digits, `-`, `.` and `_` (e.g. `gemini-2.5-flash-preview-05-20`,
`gemma-3-27b-it`), optionally behind `models/` or `tunedModels/`, as Gemini's resource names are.

A name shaped like a credential (`AIza…`, `sk-…`, `ya29.…`, a JWT, a random token, a configured key:
the redactor's judgement, redact.Redactor.secret_in) is refused before the grammar, and not echoed: a
client that swapped two environment variables would otherwise have its key written into the metrics,
the spans and the logs (and into the refusal itself).
"""

import re

from proxy import redact
from proxy.errors import ProxyError

MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
COLLECTIONS = ("models", "tunedModels")


def credential_like(name: str) -> bool:
    """Whether a model name looks like a key or a token (the process's redactor knows the configured keys)."""
    return redact.process().secret_in(name)


def credential_refusal(param: str = "model") -> ProxyError:
    """The 400 for a model name that looks like a credential: it names the field, never the value."""
    return ProxyError(f"Invalid value for '{param}': it looks like an API key or a token, not a model id, so it is "
                      "neither used nor repeated here. Send the key as the API key (Authorization, x-api-key or "
                      "x-goog-api-key) and a model id such as 'gemini-2.5-flash' here.", param=param,
                      code="invalid_model")


def model_resource(name: str, param: str = "model") -> tuple[str, str]:
    """`(collection, id)` of a model name (`models` unless `tunedModels/` prefixes it); anything
    outside the grammar is a 400 naming `param`, a credential's shape one that does not echo it."""
    if credential_like(name):
        raise credential_refusal(param)
    collection, sep, model_id = name.partition("/")
    if not sep:
        collection, model_id = "models", name
    if collection in COLLECTIONS and MODEL_ID.fullmatch(model_id):
        return collection, model_id
    shown = name if len(name) <= 80 else name[:80] + "..."
    raise ProxyError(f"Invalid model name {shown!r}: a Gemini model id is 1 to 128 letters, digits, '-', '.' or '_', "
                     "optionally prefixed with 'models/' or 'tunedModels/'.", param=param, code="invalid_model")


def check_model_name(name: str, param: str = "model") -> str:
    """The model name without a `models/` prefix (a tuned model keeps `tunedModels/`), once it
    passed the grammar."""
    collection, model_id = model_resource(name, param)
    return model_id if collection == "models" else f"{collection}/{model_id}"
