"""A trace collector for the tests: OTLP/HTTP (protobuf) on a loopback port, decoded with
opentelemetry-proto, as an OpenTelemetry Collector's otlphttp receiver accepts it."""

import asyncio
import threading

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.servers import loopback_site


def value(v: AnyValue):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


class Collector:
    """Spans received, as dicts: name, kind, trace_id/span_id/parent (hex), attributes, events."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.raw: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner, self.url = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _start(self):
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        return await loopback_site(app)

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.raw.append(body)
        req = ExportTraceServiceRequest.FromString(body)
        for rs in req.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    self.spans.append({
                        "name": s.name, "kind": s.kind, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(), "resource": resource,
                        "attributes": {a.key: value(a.value) for a in s.attributes},
                        "events": [{"name": e.name, "attributes": {a.key: value(a.value) for a in e.attributes}}
                                   for e in s.events], "status": s.status.code})
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
