"""The options' defaults, owned here (no imports): proxy/options.py builds the command line from them
without loading the modules that use them, so `gemini-tool-proxy --help` loads neither aiohttp nor
pydantic. Each module that used to own a default imports it from here under its old name."""

DEFAULT_PORT = 8741
DEFAULT_HOSTS = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "*cloudcode-pa*.googleapis.com",
                 "aiplatform.googleapis.com", "*-aiplatform.googleapis.com")

# upstream/gemini/client.py
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_CONNECT_TIMEOUT = 10.0
# Idle time allowed between meaningful data of a stream (and before its first byte): thinking
# models pause before their first token, rarely for more than a minute.
DEFAULT_READ_TIMEOUT = 120.0
# The whole exchange, retries included: a long agent turn streams for minutes, never for this long.
DEFAULT_TOTAL_TIMEOUT = 900.0
DEFAULT_POOL_TIMEOUT = 5.0  # upstream/http.py: seconds a request waits for a free upstream connection
DEFAULT_MAX_RETRIES = 3  # upstream/http.py
FORCED_CHOICE_POLICIES = ("retry", "error", "allow")  # upstream/forced_choice.py's POLICIES

# server/site.py
DEFAULT_CLIENT_TIMEOUT = 60.0   # headers, then body, each; and the longest a stream may wait on a reader
DEFAULT_SHUTDOWN_TIMEOUT = 10.0  # SIGTERM to exit, every open stream ended with its failure event
DEFAULT_BACKGROUND_LEASE = 30.0  # a background interaction's runner silent this long is gone (background.py)
DEFAULT_BACKGROUND_PER_KEY = 100  # background runs one client key may have in flight (fair_share.py)

CLIENT_KEYS_ENV = "GTP_API_KEYS"  # server/auth.py's KEYS_ENV
CARRIER_KEYS_ENV = "GTP_CARRIER_KEYS"  # signatures/carrier_keys.py's KEYS_ENV
CARRIER_KEYS_FILE = "carrier-keys"  # beside the CA key, in the same private directory

# store/memory.py
STORE_MAX_BYTES = 256 * 1024 * 1024      # the whole store
STORE_SESSION_BYTES = 128 * 1024 * 1024  # one session: a long agent conversation with some images
STORE_TTL_SECONDS = 6 * 3600  # long enough for a working day's agent session to pause and resume

JOURNAL_MAX_BYTES = 64 * 1024 * 1024  # journal/ring.py's DEFAULT_MAX_BYTES
RELAY_TIMEOUT = 120.0  # intercept/relay.py: seconds the front-end waits for the relay app's request to arrive
DEFAULT_PLACEHOLDER = "Tool call completed"  # session/placeholders.py

# dialects/: the text dialects' names (dialects/__init__.py's DIALECTS, checked equal by its tests) and
# the models that get one by default (dialects/tool_modes.py)
DIALECT_NAMES = ("gemma4", "functiongemma", "gemma3", "hermes", "qwen3coder", "llama3", "mistral", "harmony",
                 "pythonic")
DEFAULT_TOOL_MODES = [("gemma-4*", "gemma4"), ("gemma-3*", "gemma3"), ("*functiongemma*", "functiongemma")]
