"""Interactions' side of the stream pipeline: named SSE events with ids (resumable) ending in
`[DONE]`; failure is an `error` event with Google's status name and the message."""

from collections.abc import Sequence

from proxy.errors import ProxyError
from proxy.interactions.translator import InteractionsTranslator
from proxy.server.translator_writer import DONE, Event, TranslatorWriter
from proxy.wire.sse import sse_event


def interaction_events(events: Sequence[Event]) -> bytes:
    """Interactions' SSE framing: the event type and its resumable id on every event."""
    return b"".join(sse_event(e, e["event_type"], event_id=e["event_id"]) for e in events)


class InteractionsWriter(TranslatorWriter):
    t: InteractionsTranslator

    def _frame(self, events: Sequence[Event]) -> bytes:
        return interaction_events(events)

    @property
    def failed(self) -> bool:
        return self.t.interaction["status"] == "failed"

    SUCCESS = ("event_type", frozenset({"interaction.completed"}))

    def finish(self) -> bytes:
        held = self._hold(self.t.finish())  # (apart: typed from its argument, not from the framing's)
        events = interaction_events(held)
        return events if self._end else events + DONE

    def end(self) -> bytes:
        event = self._take_end()
        return interaction_events([event]) + DONE if event else b""

    def fail(self, error: ProxyError) -> bytes:
        if self._take_end() is not None:  # the answer was whole, but storing it failed
            return interaction_events(self.t.revoke(error)) + DONE
        events = self.t.fail(error)
        return interaction_events(events) + DONE if events else b""
