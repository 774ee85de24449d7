// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against the proxy's Chat Completions: a
// stream (streamText) and a sync answer (generateText) that each call several tools at once, then
// the next turn with the calls' results. The tools have no `execute`, so the calls come back here.
// The provider validates every stream chunk with its own zod schema: a chunk it refuses becomes an
// `error` part (kept, with its message). Prints one JSON line per stream part and per step; the
// Python test (tests/test_ai_sdk_chat.py) checks them against the raw chunks the SDK read.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, streamText, tool } from 'ai';

const [baseURL, modelId, prompt] = process.argv.slice(2);
const provider = createOpenAICompatible({ baseURL, name: 'proxy', apiKey: 'ai-sdk-key', includeUsage: true });
const model = provider.chatModel(modelId);
const out = (step, data) => console.log(JSON.stringify({ step, data }));
const city = jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
const tools = {
  get_weather: tool({ description: 'Current weather for a city', inputSchema: city }),
  get_time: tool({ description: 'Local time in a city', inputSchema: city }),
  get_population: tool({ description: 'Population of a city', inputSchema: city }),
};
const message = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : JSON.stringify(e));

const stream = streamText({ model, tools, prompt, includeRawChunks: true, maxRetries: 0,
                            onError: ({ error }) => out('on_error', message(error)) });
for await (const part of stream.fullStream) {
  switch (part.type) {
    case 'raw': out('raw', part.rawValue); break;
    case 'error': out('part', { type: 'error', error: message(part.error) }); break;
    case 'tool-call':
      out('part', { type: part.type, toolCallId: part.toolCallId, toolName: part.toolName, input: part.input,
                    invalid: part.invalid ?? false, error: part.error ? message(part.error) : null });
      break;
    case 'tool-error': out('part', { type: part.type, toolCallId: part.toolCallId, error: message(part.error) }); break;
    case 'tool-input-start': out('part', { type: part.type, id: part.id, toolName: part.toolName }); break;
    case 'tool-input-delta': out('part', { type: part.type, id: part.id, delta: part.delta }); break;
    case 'tool-input-end': out('part', { type: part.type, id: part.id }); break;
    case 'finish-step': out('part', { type: part.type, finishReason: part.finishReason }); break;
    case 'finish': out('part', { type: part.type, finishReason: part.finishReason }); break;
    default: out('part', { type: part.type });
  }
}
out('stream_finish', await stream.finishReason);

const sync = await generateText({ model, tools, prompt, maxRetries: 0 });
out('sync', { finishReason: sync.finishReason,
              toolCalls: sync.toolCalls.map((c) => ({ toolCallId: c.toolCallId, toolName: c.toolName, input: c.input,
                                                      invalid: c.invalid ?? false })) });

// The next turn: the streamed calls' results go back under the ids the SDK read.
const calls = await stream.toolCalls;
const messages = [{ role: 'user', content: prompt }, ...(await stream.response).messages,
  { role: 'tool', content: calls.map((c) => ({ type: 'tool-result', toolCallId: c.toolCallId, toolName: c.toolName,
                                               output: { type: 'text', value: `${c.toolName} says fine` } })) }];
const next = await generateText({ model, tools, messages, maxRetries: 0 });
out('next', { finishReason: next.finishReason, text: next.text, toolCalls: next.toolCalls.length });
