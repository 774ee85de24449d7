// The official @anthropic-ai/sdk (Node) against the proxy's Anthropic Messages API: a tool loop sync,
// the same streamed (its MessageStream accumulating input_json_delta), and an error the SDK raises.
// One JSON line per step; tests/test_node_anthropic_sdk.py checks them.
import Anthropic from '@anthropic-ai/sdk';

const [baseURL, model] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: 'node-anthropic-key', maxRetries: 0 });
const out = (step, data) => console.log(JSON.stringify({ step, data }));
const WEATHER = {
  name: 'get_weather', description: 'Get the current weather',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};
const ASK = "What's the weather in Paris? (get_weather)";

const first = await client.messages.create({ model, max_tokens: 1024, tools: [WEATHER],
  thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: ASK }] });
out('first', first);
const use = first.content.find((b) => b.type === 'tool_use');
const second = await client.messages.create({ model, max_tokens: 1024, tools: [WEATHER], messages: [
  { role: 'user', content: ASK }, { role: 'assistant', content: first.content },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 21 C' }] }] });
out('second', second);

const stream = client.messages.stream({ model, max_tokens: 1024, tools: [WEATHER],
  messages: [{ role: 'user', content: ASK }] });
const events = [];
stream.on('streamEvent', (e) => events.push(e));
out('streamed', await stream.finalMessage());
out('events', events);

try {
  await client.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi [[mock:error 429]]' }] });
  out('error', null);
} catch (e) {
  out('error', { name: e.constructor.name, status: e.status, body: e.error });
}
