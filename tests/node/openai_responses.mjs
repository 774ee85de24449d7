// The official openai Node SDK against the proxy's Responses API: a sync tool call, a stream, a
// tool loop over the Responses WebSocket (ResponsesWS, store false, continued from the socket's
// cache), and a compaction round trip. Prints one JSON line per step; the Python test
// (tests/test_node_openai_sdk.py) validates every body and event against the openai Python SDK's
// models and the Open Responses schema.
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'node-sdk-key', maxRetries: 0 });
const out = (step, data) => console.log(JSON.stringify({ step, data }));
const WEATHER = {
  type: 'function', name: 'get_weather', description: 'Get the current weather',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};
const PROMPT = "What's the weather in Paris? (get_weather)";
const ENDS = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);

const sync = await client.responses.create({ model, tools: [WEATHER], input: PROMPT });
out('sync', sync);

const stream = await client.responses.create({ model, input: 'Count from 1 to 5.', stream: true });
const streamed = [];
for await (const event of stream) streamed.push(event);
out('stream', streamed);

const ws = new ResponsesWS(client);
const socketEvents = [];
let waiting = null;
ws.on('event', (event) => {
  socketEvents.push(event);
  if (ENDS.has(event.type) && waiting) { const w = waiting; waiting = null; w(event); }
});
ws.on('error', () => {});  // error events are kept in socketEvents and checked by the test
const turn = (body) => new Promise((resolve) => { waiting = resolve; ws.send({ type: 'response.create', ...body }); });
const first = await turn({ model, store: false, tools: [WEATHER], input: PROMPT });
const call = first.response.output.find((o) => o.type === 'function_call');
await turn({ model, store: false, tools: [WEATHER], previous_response_id: first.response.id,
             input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 C' }] });
ws.close();
out('websocket', socketEvents);

const history = [{ type: 'message', role: 'user', content: PROMPT }, ...sync.output];
const syncCall = sync.output.find((o) => o.type === 'function_call');
history.push({ type: 'function_call_output', call_id: syncCall.call_id, output: 'Sunny, 21 C' });
const answer = await client.responses.create({ model, tools: [WEATHER], input: history });
history.push(...answer.output, { type: 'message', role: 'user', content: 'And in Rome? (get_weather)' });
const again = await client.responses.create({ model, tools: [WEATHER], input: history });
history.push(...again.output);
const compacted = await client.responses.compact({ model, input: history });
out('compact', compacted);
const lastCall = again.output.find((o) => o.type === 'function_call');
const after = await client.responses.create({ model, tools: [WEATHER], input: [
  ...compacted.output, { type: 'function_call_output', call_id: lastCall.call_id, output: 'Rainy, 12 C' }] });
out('after_compact', after);
