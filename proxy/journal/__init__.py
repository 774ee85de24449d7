"""What the proxy did, per exchange: the client's request, what went to Gemini (each attempt, with
the key's `k-` label), what came back, what the client got, and the proxy's decisions on the way
(schema repairs, signatures restored, history repairs, text-call parses, warnings, the error).

- `exchange.py`: one exchange being recorded (a context variable; `note()` is free when none is);
- `kept.py`: a finished exchange sealed into the one tuple the journal keeps, and read back;
- `redact.py`: secrets out before anything is kept;
- `ring.py`: the journal itself, bounded by bytes, scoped by client key, with live subscribers;
- `shared.py`: with a Redis store, every instance's journal read from any of them;
- `tracing.py`: the same exchange as OpenTelemetry spans (GenAI semantic conventions);
- `access_log.py`: one line per request.
"""
