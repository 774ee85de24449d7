"""A log that cannot flood: the same message repeated is logged a few times per window, then
counted, and the count is reported with the next one let through.

At the fd limit asyncio logs every failed accept, aiohttp every refused request: 78 MB in 30 s
before this filter. Records are keyed by logger and message template (not the arguments), so
"client X went away" for a thousand clients is one key.
"""

import logging
import time

BURST = 5          # records of one key let through per window
WINDOW = 10.0      # seconds
MAX_KEYS = 4096    # keys remembered (a flood of distinct templates is itself bounded)
# Loggers never limited: the access log is one line per request by contract (journal/access_log.py),
# all of them with one template; a request refused before it reaches the app has no line there.
UNLIMITED = frozenset({"gtp.access"})


class RepeatFilter(logging.Filter):
    def __init__(self, burst: int = BURST, window: float = WINDOW, clock=time.monotonic) -> None:
        super().__init__()
        self.burst, self.window, self.clock = burst, window, clock
        self._seen: dict[tuple[str, str], list[float]] = {}  # key -> [window start, count, suppressed]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name in UNLIMITED:
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        state = self._seen.get(key)
        if state is None or now - state[0] >= self.window:
            suppressed = int(state[2]) if state else 0
            if len(self._seen) >= MAX_KEYS:
                self._seen.clear()
            self._seen[key] = [now, 1, 0]
            if suppressed:
                record.msg = f"{record.msg} (and {suppressed} more like it in the last {self.window:g}s)"
            return True
        state[1] += 1
        if state[1] <= self.burst:
            return True
        state[2] += 1
        return False


def install(logger: logging.Logger | None = None) -> None:
    """Put one RepeatFilter on every handler of `logger` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RepeatFilter) for f in handler.filters):
            handler.addFilter(RepeatFilter())
