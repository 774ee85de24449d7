"""`Rewrite`: apply the bound session's tool context to an owned request (tool_context.py) and make
its answer readable for the capture (identity encoding). Unchanged requests keep the app's bytes.
A model name shaped like a credential (an app's swapped variables) is refused, in Gemini's shape and
without echoing it: it is neither sent on nor recorded (the journal scrubs it from the flow's URL).

A history of text turns (text_history.py) goes out as the app's bytes, spliced after the request's
other members as rewritten; those depend only on their own text, the session's stored tools, the
model and gtp_merge_tools, so they are worked out once per distinct (text, tools, model, merge) and
reused (issue 62: a session's 20 tools were applied and serialized again on every request). A flow
that needs nothing is remembered as such too: its app's bytes go out without a comparison."""

import contextlib
import logging

from cachetools import LRUCache
from mitmproxy import http

from proxy import fast_json, redact
from proxy.errors import ProxyError
from proxy.intercept import headers, text_history
from proxy.intercept.flow_selection import META, REFUSED, FlowState, GeminiRequest, select
from proxy.intercept.options import Options
from proxy.intercept.refusal import gemini_error_response
from proxy.journal import exchange
from proxy.session.app_tools import note_repairs
from proxy.session.placeholders import placeholder_count
from proxy.session.session_tools import ToolContext
from proxy.session.tool_context import apply_session_tools, apply_tool_context
from proxy.store.base import SessionStore
from proxy.wire.model_name import credential_like, credential_refusal

log = logging.getLogger(__name__)

# (the other members' text, the session's stored tools, model, merge) -> those members rewritten (as
# text_history.tail() gives them: a body is then one copy of them), or None when they stay as sent.
# Bounded by the texts' length.
REWRITTEN_CACHE_BYTES = 4 * 1024 * 1024
_Key = tuple[bytes, bytes | None, str, bool]
_rewritten_rests: LRUCache[_Key, tuple[int, bytes | None, frozenset[str] | None]] = LRUCache(REWRITTEN_CACHE_BYTES,
                                                                      getsizeof=lambda v: v[0])


class Rewrite:
    def __init__(self, store: SessionStore, options: Options) -> None:
        self.store, self.options = store, options

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response or META in flow.metadata:
            return  # answered already, or the relay took it
        o = self.options.flow
        req = select(flow, o.intercept_hosts, o.session_header, o.default_session, o.placeholder)
        if req is None:
            return
        if req.model and credential_like(req.model):
            ex = exchange.CURRENT.get()
            if ex is not None:
                ex.secrets = (*ex.secrets, req.model)
            e = credential_refusal()
            flow.response = gemini_error_response(e)
            flow.metadata[REFUSED] = FlowState(req.target, redact.REDACTED, req.session)
            exchange.failed(e)
            return
        contents = req.inner.get("contents")
        needed = placeholder_count(contents, o.placeholder) if isinstance(contents, list) else 0
        try:
            tool_ctx = await self.store.get_tool_context(req.session, rounds=needed) if req.session else None
        except ProxyError as e:  # the shared store is unreachable: the app hears it, nothing is sent half-done
            flow.response = gemini_error_response(e, model=req.model)
            flow.metadata[REFUSED] = FlowState(req.target, req.model, req.session)  # (the journal's)
            exchange.failed(e)
            return
        try:
            body = self._rewritten(req, tool_ctx, needed)
        except ProxyError as e:
            log.warning("refused intercepted request for session %s: %s", req.session, e.message)
            flow.response = gemini_error_response(e, "FAILED_PRECONDITION", req.model)
            flow.metadata[REFUSED] = FlowState(req.target, req.model, req.session)
            exchange.failed(e)
            return
        if body is not None:
            headers.set_content(flow.request, body)
        if req.target.stream:
            flow.request.headers["accept-encoding"] = "identity"  # the tap must see plain bytes
        flow.metadata[META] = FlowState(req.target, req.model, req.session)

    def _rewritten(self, req: GeminiRequest, tool_ctx: ToolContext | None, placeholders: int) -> bytes | None:
        """The body to send, or None when the app's bytes go out exactly as sent; `placeholders`: the
        placeholder turns in its contents (counted for the store)."""
        o = self.options.flow
        if req.contents_raw is not None:  # text turns only: they stay the app's bytes (text_history.py)
            after = self._rest(req, tool_ctx)
            if after is None:
                return None
            request = text_history.joined(req.contents_raw, after)
            if req.target.kind != "cloudcode":
                return request
            return text_history.join(fast_json.dumps({k: v for k, v in req.body.items() if k != "request"}), request,
                                     "request")
        rewritten = apply_tool_context(req.inner, tool_ctx, req.model, merge=o.merge_tools, placeholder=o.placeholder,
                                       result_parts=self.options.rules.result_parts(req.model),
                                       placeholders=placeholders)
        if rewritten == req.inner and not req.marked:
            return None
        return fast_json.dumps({**req.body, "request": rewritten} if req.target.kind == "cloudcode" else rewritten)

    def _rest(self, req: GeminiRequest, tool_ctx: ToolContext | None) -> bytes | None:
        """The members other than the contents as they go out (as text_history.tail() gives them), or
        None when they stay as sent."""
        merge = self.options.flow.merge_tools
        key = None
        if req.rest_raw is not None and (tool_ctx is None or tool_ctx.version is not None):
            key = (req.rest_raw, tool_ctx.version if tool_ctx is not None else None, req.model, merge)
            found = _rewritten_rests.get(key)
            if found is not None:
                _, rest, dropped = found
                if dropped is not None and exchange.recording():  # the notes apply_session_tools makes
                    note_repairs(req.inner.get("tools") or [], dropped=dropped)
                return rest
        rewritten = apply_session_tools(req.inner, tool_ctx, merge=merge, model=req.model)
        rest = None if rewritten == req.inner else text_history.tail(fast_json.dumps(rewritten))
        if key is not None:
            # apply_session_tools notes the app's tools' repairs but for those the session's replace; none
            # when the session's tools replace all of them
            dropped: frozenset[str] | None = frozenset()
            if tool_ctx is not None and tool_ctx.declarations:
                dropped = frozenset(d["name"] for d in tool_ctx.declarations) if merge else None
            with contextlib.suppress(ValueError):  # larger than the whole cache: worked out again next time
                _rewritten_rests[key] = (len(key[0]) + len(key[1] or b"") + len(rest or b""), rest, dropped)
        return rest
