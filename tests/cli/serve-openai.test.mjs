// serve-openai.test.mjs — `qwenchat serve` driven by the official OpenAI JavaScript
// client (tests/fetch-openai.sh), under node's own test runner. tests/cli/serve.sh sets:
//   OPENAI_DIR   the openai package
//   PLAIN_URL    a server on a random-weight model (no key)
//   RIG_URL, RIG_KEY  a server on a model rigged (tests/cli/rig-model.py) to answer
//                "<think>Hello\n\n</think><tool_call>{"name":"get_time","arguments":{}}
//                </tool_call><|im_end|>" greedily with repetition_penalty 10
//   RUN_DIR      `qwenchat run` outputs to compare with: think.out/.err (seed 5,
//                temperature 1, 12 tokens), nothink.out/.err (--no-think, seed 6) and
//                raw.out (--raw, seed 5, temperature 1)
//   FILLER       a user message whose last 64 tokens hold none of the rig's tokens
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const env = process.env;
const { default: OpenAI } = await import(pathToFileURL(join(env.OPENAI_DIR, 'index.mjs')));
const plain = new OpenAI({ baseURL: env.PLAIN_URL, apiKey: 'unused', maxRetries: 0 });
const rig = new OpenAI({ baseURL: env.RIG_URL, apiKey: env.RIG_KEY, maxRetries: 0 });

// `qwenchat run`'s answer (stdout, ended by one newline) and reasoning (stderr between
// "<think>" and "</think>" lines; none when the model wrote no think block).
function runOutput(name) {
  const out = readFileSync(join(env.RUN_DIR, name + '.out'), 'utf8');
  const err = readFileSync(join(env.RUN_DIR, name + '.err'), 'utf8');
  const m = err.match(/^<think>\n([\s\S]*)\n<\/think>\n/);
  return { content: out.replace(/\n$/, ''), reasoning: m ? m[1] : '' };
}

// Streams a request; returns the joined content and reasoning, the chunks and the
// finish_reason.
async function streamed(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let content = '', reasoning = '', finish = null;
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    const c = chunk.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    reasoning += c.delta.reasoning_content ?? '';
    finish = c.finish_reason ?? finish;
  }
  return { content, reasoning, chunks, finish };
}

const cases = [
  { name: 'think', body: { seed: 5, temperature: 1 } },
  { name: 'nothink', body: { seed: 6, chat_template_kwargs: { enable_thinking: false } } },
];

for (const { name, body } of cases) {
  test(`${name}: the answer equals qwenchat run's with the same seed and settings`, async () => {
    const want = runOutput(name);
    const req = { model: 'm', messages: [{ role: 'user', content: 'Hello there' }],
                  max_tokens: 12, ...body };
    const r = await plain.chat.completions.create(req);
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.choices[0].message.content, want.content);
    assert.equal(r.choices[0].message.reasoning_content ?? '', want.reasoning);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    const s = await streamed(plain, req);
    assert.equal(s.content, want.content);
    assert.equal(s.reasoning, want.reasoning);
    assert.equal(s.finish, r.choices[0].finish_reason);
    assert.equal(s.chunks[0].choices[0].delta.role, 'assistant');
    assert.ok(s.chunks.every((c) => c.id === s.chunks[0].id && c.object === 'chat.completion.chunk'));
  });
}

test('n: choices sampled with seeds seed, seed + 1, ..., whole and streamed', async () => {
  const req = { model: 'm', messages: [{ role: 'user', content: 'Hello there' }],
                max_tokens: 12, temperature: 1 };
  const r = await plain.chat.completions.create({ ...req, seed: 5, n: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  let completion = 0;
  for (let j = 0; j < 3; j++) {
    const one = await plain.chat.completions.create({ ...req, seed: 5 + j });
    assert.deepEqual(r.choices[j].message, one.choices[0].message);
    assert.equal(r.choices[j].finish_reason, one.choices[0].finish_reason);
    assert.equal(one.usage.prompt_tokens, r.usage.prompt_tokens); // the prompt counts once
    completion += one.usage.completion_tokens;
  }
  assert.equal(r.usage.completion_tokens, completion);
  assert.equal(new Set(r.choices.map((c) => c.message.content)).size, 3);
  // streamed: each choice's chunks carry its index and add up to its message
  const stream = await plain.chat.completions.create({ ...req, seed: 5, n: 3, stream: true,
                                                       stream_options: { include_usage: true } });
  const got = [{}, {}, {}];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const g = got[c.index];
      g.role ??= c.delta.role;
      g.content = (g.content ?? '') + (c.delta.content ?? '');
      g.reasoning = (g.reasoning ?? '') + (c.delta.reasoning_content ?? '');
      g.finish ??= c.finish_reason;
    }
  }
  for (let j = 0; j < 3; j++) {
    assert.equal(got[j].role, 'assistant');
    assert.equal(got[j].content, r.choices[j].message.content);
    assert.equal(got[j].reasoning, r.choices[j].message.reasoning_content ?? '');
    assert.equal(got[j].finish, r.choices[j].finish_reason);
  }
  assert.deepEqual(usage, r.usage);
  // text completions: prompt i's sample j is choice i * n + j
  const text = { model: 'm', prompt: ['Once', 'Twice'], max_tokens: 6, temperature: 1, seed: 9 };
  const t = await plain.completions.create({ ...text, n: 2 });
  assert.deepEqual(t.choices.map((c) => c.index), [0, 1, 2, 3]);
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 2; j++) {
      const one = await plain.completions.create({ ...text, prompt: text.prompt[i], seed: 9 + j });
      assert.equal(t.choices[i * 2 + j].text, one.choices[0].text);
    }
});

test('models.list names the model', async () => {
  const list = [];
  for await (const m of plain.models.list()) list.push(m);
  assert.equal(list.length, 1);
  assert.equal(list[0].object, 'model');
  assert.equal(typeof list[0].id, 'string');
});

const tools = [{ type: 'function', function: { name: 'get_time', description: 'The time.',
                                                parameters: { type: 'object', properties: {} } } }];
const rigBody = { model: 'rig', messages: [{ role: 'user', content: env.FILLER }], tools,
                  temperature: 0, repetition_penalty: 10 };

test('rigged: reasoning_content and a tool call, whole', async () => {
  const r = await rig.chat.completions.create(rigBody);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.reasoning_content, 'Hello');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_time');
  assert.deepEqual(JSON.parse(call.function.arguments), {});
  assert.equal(r.usage.completion_tokens, 17); // 16 scripted tokens and <|im_end|>
});

test('rigged: n choices, each with its tool call, the call ids distinct', async () => {
  const r = await rig.chat.completions.create({ ...rigBody, n: 2 });
  assert.equal(r.choices.length, 2);
  for (const c of r.choices) {
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.tool_calls[0].function.name, 'get_time');
  }
  assert.notEqual(r.choices[0].message.tool_calls[0].id, r.choices[1].message.tool_calls[0].id);
  assert.equal(r.usage.completion_tokens, 34);
});

test('rigged: the same streamed, tool calls put together by the client', async () => {
  // the client's own accumulator for streamed tool calls
  const runner = rig.chat.completions.stream({ ...rigBody, stream_options: { include_usage: true } });
  let reasoning = '';
  runner.on('chunk', (chunk) => { reasoning += chunk.choices[0]?.delta?.reasoning_content ?? ''; });
  const r = await runner.finalChatCompletion();
  assert.equal(reasoning, 'Hello');
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  assert.equal(c.message.tool_calls[0].function.name, 'get_time');
  assert.equal(c.message.tool_calls[0].function.arguments, '{}');
  assert.equal(r.usage.completion_tokens, 17);
  assert.ok(r.usage.prompt_tokens_details.cached_tokens > 0); // the same prompt again
});

test('rigged: the tool result goes back and the conversation continues', async () => {
  const first = await rig.chat.completions.create(rigBody);
  const m = first.choices[0].message;
  const r = await rig.chat.completions.create({
    ...rigBody, max_tokens: 3,
    messages: [...rigBody.messages, { role: 'assistant', content: m.content, tool_calls: m.tool_calls,
                                      reasoning_content: m.reasoning_content },
               { role: 'tool', tool_call_id: m.tool_calls[0].id, content: '12:00' }],
  });
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  // the whole earlier prompt is reused (the call renders with newlines the rig left out)
  assert.ok(r.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens);
});

// The call a forced answer came back as (finish_reason "stop", content null), or null
// where max_tokens cut it.
function forcedCall(c) {
  if (c.finish_reason === 'length') return null;
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  return c.message.tool_calls[0].function;
}

const weather = { type: 'function', function: { name: 'get_weather', parameters: {
  type: 'object', additionalProperties: false, required: ['city', 'days'],
  properties: { city: { type: 'string', maxLength: 12 },
                days: { type: 'integer', minimum: 1, maximum: 7 } } } } };

// tool_choice naming a function: the answer is held to its parameters and comes back as
// the call's arguments (finish_reason "stop", as OpenAI's and vLLM's)
test('tool_choice names a function: a call with arguments of its parameters', async () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'Weather?' }], max_tokens: 120,
                 temperature: 1, tools: [...tools, weather],
                 tool_choice: { type: 'function', function: { name: 'get_weather' } },
                 chat_template_kwargs: { enable_thinking: false } };
  let called = 0;
  for (let seed = 0; seed < 6; seed++) {
    const c = (await plain.chat.completions.create({ ...body, seed })).choices[0];
    const call = forcedCall(c);
    if (!call) continue;
    assert.equal(call.name, 'get_weather');
    const args = JSON.parse(call.arguments);
    assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
    assert.ok(typeof args.city === 'string' && [...args.city].length <= 12, call.arguments);
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, call.arguments);
    called++;
    if (seed < 2) { // streamed, the client puts the call together
      const runner = plain.chat.completions.stream({ ...body, seed });
      const s = (await runner.finalChatCompletion()).choices[0];
      assert.deepEqual(s.message.tool_calls[0].function, c.message.tool_calls[0].function);
      // ... from pieces sent as they came: the id and name once, first
      const deltas = [];
      for await (const k of await plain.chat.completions.create({ ...body, seed, stream: true })) {
        deltas.push(...(k.choices[0]?.delta?.tool_calls ?? []));
      }
      assert.ok(deltas.length > 1, `the arguments came in ${deltas.length} piece(s)`);
      assert.equal(deltas[0].function.name, 'get_weather');
      assert.ok(deltas[0].id && deltas.slice(1).every((d) => !d.id && !d.function.name));
      assert.equal(deltas.map((d) => d.function.arguments).join(''), call.arguments);
    }
  }
  assert.ok(called >= 1, 'no call ended within max_tokens');
  // "required" with the one tool is the same
  const one = await plain.chat.completions.create({ ...body, seed: 0, tools: [weather],
                                                    tool_choice: 'required' });
  assert.equal(one.choices[0].message.tool_calls[0].function.name, 'get_weather');
  const many = Array.from({ length: 17 }, (_, i) => ({ type: 'function',
                                                       function: { name: `f${i}` } }));
  for (const [change, param] of [
    [{ tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    [{ tool_choice: 'required', tools: many }, 'tool_choice'],
    [{ response_format: { type: 'json_object' } }, 'response_format'],
    [{ tools: [{ type: 'function', function: { name: 'get_weather',
                                               parameters: { type: 'object', not: {} } } }] },
     'tools[0].function.parameters']]) {
    await assert.rejects(plain.chat.completions.create({ ...body, ...change }),
                         (e) => e.status === 400 && e.error?.param === param);
  }
});

// "required" among several tools: a call of one of them, as Qwen3 writes it in a
// <tool_call> block ({"name", "arguments"}), its arguments held to that tool's
// parameters ($refs into their own $defs too)
test('tool_choice "required" with several tools: a call of one of them', async () => {
  const place = { type: 'function', function: { name: 'find_place', parameters: {
    $defs: { Spot: { type: 'object', additionalProperties: false, required: ['kind'],
                     properties: { kind: { enum: ['cafe', 'park'] } } } },
    type: 'object', additionalProperties: false, required: ['spot'],
    properties: { spot: { $ref: '#/$defs/Spot' } } } } };
  const body = { model: 'm', messages: [{ role: 'user', content: 'Plans?' }], max_tokens: 300,
                 temperature: 1, tools: [...tools, weather, place], tool_choice: 'required',
                 chat_template_kwargs: { enable_thinking: false } };
  const names = new Set();
  for (let seed = 0; seed < 8; seed++) {
    const c = (await plain.chat.completions.create({ ...body, seed })).choices[0];
    const call = forcedCall(c);
    if (!call) continue;
    const args = JSON.parse(call.arguments);
    if (call.name === 'get_weather') {
      assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
      assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, call.arguments);
    } else if (call.name === 'find_place') {
      assert.deepEqual(Object.keys(args), ['spot']);
      assert.ok(['cafe', 'park'].includes(args.spot.kind), call.arguments);
    } else {
      assert.equal(call.name, 'get_time');
      assert.deepEqual(args, {});
    }
    names.add(call.name);
    if (seed < 2) { // streamed: the same call
      const runner = plain.chat.completions.stream({ ...body, seed });
      const s = (await runner.finalChatCompletion()).choices[0];
      assert.deepEqual(s.message.tool_calls[0].function, call);
    }
  }
  assert.ok(names.size >= 1, 'no call ended within max_tokens');
  await assert.rejects(plain.chat.completions.create({ ...body, tools: [weather, {
    type: 'function', function: { name: 'bad', parameters: { type: 'string', pattern: '(?=x)' } } }] }),
  (e) => e.status === 400 && e.error?.param === 'tools[1].function.parameters');
});

test('rigged: a stop string ends the text, whole and streamed', async () => {
  const body = { ...rigBody, tools: undefined, stop: ['ll'] };
  const r = await rig.chat.completions.create(body);
  assert.equal(r.choices[0].message.reasoning_content, 'He');
  assert.equal(r.choices[0].message.content, '');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.completion_tokens, 2); // <think> and Hello
  const s = await streamed(rig, body);
  assert.equal(s.reasoning, 'He');
  assert.equal(s.content, '');
  assert.equal(s.finish, 'stop');
});

test('rigged: logprobs are the model\'s own, not the penalised draw\'s', async () => {
  const r = await rig.chat.completions.create({ ...rigBody, tools: undefined, max_tokens: 4,
                                                logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs.content;
  assert.deepEqual(lp.map((e) => e.token), ['<think>', 'Hello', '\n\n', '</think>']);
  // The rig ranks its logits the same at every position: <|im_end|>, then the script in
  // order. The repetition penalty that makes the picks moves the draw, not the
  // logprobs (vLLM's raw_logprobs).
  for (const e of lp) {
    assert.ok(e.logprob <= 0);
    assert.deepEqual(e.top_logprobs.map((t) => t.token), ['<|im_end|>', '<think>', 'Hello']);
    assert.ok(e.top_logprobs[1].logprob < e.top_logprobs[0].logprob);
    assert.ok(e.top_logprobs[2].logprob < e.top_logprobs[1].logprob);
    assert.equal(Buffer.from(e.bytes).toString('utf8'), e.token);
  }
  assert.equal(lp[0].logprob, lp[0].top_logprobs[1].logprob);
  assert.equal(lp[1].logprob, lp[1].top_logprobs[2].logprob);
  assert.ok(lp[2].logprob < lp[2].top_logprobs[2].logprob);
  assert.equal(r.choices[0].stop_reason, null); // the length
});

test('text: a completion equals qwenchat run --raw\'s with the same seed, whole and streamed', async () => {
  const want = readFileSync(join(env.RUN_DIR, 'raw.out'), 'utf8');
  const req = { model: 'm', prompt: 'Hello there', max_tokens: 12, seed: 5, temperature: 1 };
  const r = await plain.completions.create(req);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, want);
  assert.equal(r.choices[0].logprobs, null);
  const stream = await plain.completions.create({ ...req, stream: true });
  let text = '', finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(text, want);
  assert.equal(finish, r.choices[0].finish_reason);
});

test('rigged: logprobs list the token that ends the answer, as usage counts it', async () => {
  const body = { ...rigBody, tools: undefined, logprobs: true, top_logprobs: 1 };
  const r = await rig.chat.completions.create(body);
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  assert.equal(lp.at(-1).token, '<|im_end|>');
  const s = await streamed(rig, { ...body, stream_options: { include_usage: true } });
  const entries = s.chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
  assert.deepEqual(entries.map((e) => e.token), lp.map((e) => e.token));
  // a stop id is the last entry as well
  const t = await rig.chat.completions.create({ ...body, stop_token_ids: [151657] });
  assert.deepEqual(t.choices[0].logprobs.content.map((e) => e.token),
                   ['<think>', 'Hello', '\n\n', '</think>', '<tool_call>']);
});

// logit_bias: added to the logits before the draw; a text completion's logprobs are the
// model's own (raw, as vLLM's), so the bias shows in the picks, not in them
async function tokenIds(text) {
  const res = await fetch(new URL('/tokenize', env.PLAIN_URL),
                          { method: 'POST', body: JSON.stringify({ model: 'm', prompt: text }) });
  return (await res.json()).tokens;
}

test('text: logit_bias forces a token, bans the greedy one, and leaves logprobs raw', async () => {
  const req = { model: 'm', prompt: 'Hello there', max_tokens: 4, temperature: 0, logprobs: 2 };
  const [the] = await tokenIds(' the');
  let r = await plain.completions.create({ ...req, logit_bias: { [the]: 100 } });
  assert.equal(r.choices[0].text, ' the the the the');
  const free = await plain.completions.create(req);
  const first = free.choices[0].logprobs.tokens[0];
  const ids = await tokenIds(first);
  assert.equal(ids.length, 1, `the greedy token ${JSON.stringify(first)} is one id`);
  r = await plain.completions.create({ ...req, logit_bias: { [ids[0]]: -100 } });
  const tops = free.choices[0].logprobs.top_logprobs[0];
  const second = Object.keys(tops).find((t) => t !== first);
  assert.equal(r.choices[0].logprobs.tokens[0], second);
  assert.deepEqual(r.choices[0].logprobs.top_logprobs[0], tops);
  // the same through a stream, and the ids checked against the vocabulary
  const s = await plain.completions.create({ ...req, logprobs: null, stream: true,
                                             logit_bias: { [the]: 100 } });
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, ' the the the the');
  await assert.rejects(plain.completions.create({ ...req, logit_bias: { 151936: 1 } }),
                       (e) => e.status === 400 && e.error?.param === 'logit_bias');
});

test('text: allowed_token_ids are the only tokens drawn; a stop string kept on request', async () => {
  const [the] = await tokenIds(' the');
  const [comma] = await tokenIds(',');
  const req = { model: 'm', prompt: 'Hello there', max_tokens: 12, temperature: 1, seed: 9,
                logprobs: 0 };
  const r = await plain.completions.create({ ...req, allowed_token_ids: [the, comma] });
  const tokens = r.choices[0].logprobs.tokens;
  assert.equal(tokens.length, 12); // the end of text is not among them
  assert.ok(tokens.every((t) => t === ' the' || t === ','), tokens.join('|'));
  assert.ok(tokens.includes(' the') && tokens.includes(','), tokens.join('|'));
  const forced = { ...req, logprobs: null, logit_bias: { [the]: 100 }, stop: [' the the'] };
  assert.equal((await plain.completions.create(forced)).choices[0].text, '');
  const kept = await plain.completions.create({ ...forced, include_stop_str_in_output: true });
  assert.equal(kept.choices[0].text, ' the the');
  assert.equal(kept.choices[0].finish_reason, 'stop');
  const s = await plain.completions.create({ ...forced, include_stop_str_in_output: true,
                                             stream: true });
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, ' the the');
});

test('rigged: logit_bias on <think> keeps the answer from opening with it', async () => {
  const body = { ...rigBody, tools: undefined, max_tokens: 3, logprobs: true };
  const r = await rig.chat.completions.create({ ...body, logit_bias: { 151667: -100 } });
  assert.notEqual(r.choices[0].logprobs.content[0].token, '<think>');
  assert.equal(r.choices[0].message.reasoning_content ?? null, null);
  const free = await rig.chat.completions.create(body);
  assert.equal(free.choices[0].logprobs.content[0].token, '<think>');
});

// response_format json_object: the answer is held to JSON's grammar, token by token
test('json_object: every answer that ends is one JSON object, whole and streamed', async () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'Describe a cat in JSON.' }],
                 max_tokens: 160, temperature: 1, response_format: { type: 'json_object' },
                 chat_template_kwargs: { enable_thinking: false } };
  let ended = 0;
  for (let seed = 0; seed < 12; seed++) {
    const r = await plain.chat.completions.create({ ...body, seed });
    const c = r.choices[0];
    const text = c.message.content;
    assert.ok(/^\s*(\{|$)/.test(text), `seed ${seed}: ${JSON.stringify(text.slice(0, 80))}`);
    assert.ok(!/<think>|<\|im_/.test(text), `seed ${seed}: an added token in the JSON`);
    assert.ok(!/[ \t\r\n]{65}/.test(text.replace(/"(?:[^"\\]|\\.)*("|$)/g, '""')),
              `seed ${seed}: a run of whitespace past 64 bytes`);
    if (c.finish_reason === 'stop') {
      const v = JSON.parse(text);
      assert.equal(typeof v, 'object');
      assert.ok(v !== null && !Array.isArray(v));
      ended++;
    } else {
      assert.equal(c.finish_reason, 'length');
    }
    if (seed < 2) {
      const s = await streamed(plain, { ...body, seed });
      assert.equal(s.content, text);
    }
  }
  assert.ok(ended >= 1, 'no answer ended within max_tokens');
  // without it, the same seeds write no JSON
  const free = await plain.chat.completions.create({ ...body, seed: 0, response_format: undefined });
  assert.ok(!/^\s*\{/.test(free.choices[0].message.content));
});

// response_format json_schema: each answer that ends is a value of the schema; serve.sh
// checks them with Python's jsonschema (schema-answers.json)
test('json_schema: the answers, whole and streamed, for jsonschema to check', async () => {
  const schema = {
    $defs: { Pet: { type: 'object', properties: { name: { type: 'string', maxLength: 10 },
                                                  legs: { type: 'integer', minimum: 0, maximum: 8 } },
                    required: ['name', 'legs'], additionalProperties: false } },
    type: 'object', additionalProperties: false, required: ['owner', 'pets', 'mood', 'score'],
    properties: { owner: { type: 'string', minLength: 1, maxLength: 12 },
                  pets: { type: 'array', items: { $ref: '#/$defs/Pet' }, maxItems: 2 },
                  mood: { enum: ['calm', 'busy', 7] },
                  score: { type: 'number', exclusiveMinimum: -1, maximum: 2.5 },
                  built: { type: 'string', format: 'date' },
                  note: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }] } } };
  const body = { model: 'm', messages: [{ role: 'user', content: 'Describe a home.' }],
                 max_tokens: 200, temperature: 1, chat_template_kwargs: { enable_thinking: false },
                 response_format: { type: 'json_schema',
                                    json_schema: { name: 'home', strict: true, schema } } };
  const answers = [];
  for (let seed = 0; seed < 10; seed++) {
    const r = await plain.chat.completions.create({ ...body, seed });
    const c = r.choices[0];
    if (c.finish_reason === 'stop') answers.push(c.message.content);
    else assert.equal(c.finish_reason, 'length');
    if (seed < 2) assert.equal((await streamed(plain, { ...body, seed })).content, c.message.content);
  }
  assert.ok(answers.length >= 1, 'no answer ended within max_tokens');
  writeFileSync(join(env.RUN_DIR, 'schema-answers.json'), JSON.stringify({ schema, answers }));
});

test('vLLM\'s guided_json and structured_outputs: the answer is one of the enum', async () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'Yes or no?' }], max_tokens: 30,
                 temperature: 1, chat_template_kwargs: { enable_thinking: false } };
  const seen = new Set();
  for (let seed = 0; seed < 6; seed++) {
    const way = seed % 2 ? { guided_json: { enum: ['yes', 'no', 42] } }
                         : { structured_outputs: { json: '{"enum": ["yes", "no", 42]}' } };
    const c = (await plain.chat.completions.create({ ...body, ...way, seed })).choices[0];
    assert.equal(c.finish_reason, 'stop', JSON.stringify(c.message.content));
    const v = JSON.parse(c.message.content);
    assert.ok(['yes', 'no', 42].includes(v), c.message.content);
    seen.add(v);
  }
  assert.ok(seen.size >= 2, 'the same value for every seed');
});

test('rigged: json_object holds the answer, not the reasoning before it', async () => {
  const body = { ...rigBody, tools: undefined, max_tokens: 24,
                 response_format: { type: 'json_object' } };
  const r = await rig.chat.completions.create(body);
  assert.equal(r.choices[0].message.reasoning_content, 'Hello');
  assert.ok(/^\s*\{/.test(r.choices[0].message.content), r.choices[0].message.content);
  const pattern = { type: 'json_schema',
                    json_schema: { name: 'x', schema: { type: 'string', not: { const: 'a' } } } };
  for (const [rf, param] of [[pattern, 'response_format.json_schema.schema'],
                             [{ type: 'json_schema', json_schema: { schema: {} } },
                              'response_format.json_schema.name'],
                             [{ type: 'xml' }, 'response_format']]) {
    await assert.rejects(rig.chat.completions.create({ ...body, response_format: rf }),
                         (e) => e.status === 400 && e.error?.param === param);
  }
  // a text completion is held too, as vLLM's is
  const t = await rig.completions.create({ model: 'rig', prompt: 'x', max_tokens: 24,
                                           response_format: { type: 'json_object' } });
  assert.ok(/^\s*(\{|$)/.test(t.choices[0].text), JSON.stringify(t.choices[0].text));
  assert.ok(!/Hello|<think>/.test(t.choices[0].text)); // the rig's own text, masked
});

// vLLM's stop_token_ids, min_tokens and ignore_eos (request members the client passes on)
test('rigged: stop_token_ids, min_tokens and ignore_eos end the answer as vLLM\'s do', async () => {
  const body = { ...rigBody, tools: undefined };
  // <tool_call> (151657) stops: the text before it, the id counted as the end token is
  let r = await rig.chat.completions.create({ ...body, stop_token_ids: [151657] });
  assert.equal(r.choices[0].message.reasoning_content, 'Hello');
  assert.equal(r.choices[0].message.content, '');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.completion_tokens, 5);
  // min_tokens 20: <|im_end|> cannot come before the 21st token, and then does
  r = await rig.chat.completions.create({ ...body, min_tokens: 20 });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.completion_tokens, 21);
  assert.match(r.choices[0].message.content, /^<tool_call>\n?\{"name"/);
  // a stop string is not looked for in the text of the first min_tokens tokens; a stop
  // id may come as token min_tokens + 1 (the 5th here), not before (the 6th then)
  r = await rig.chat.completions.create({ ...body, min_tokens: 4, stop_token_ids: [151657],
                                          stop: ['ll'] });
  assert.equal(r.choices[0].message.reasoning_content, 'Hello');
  assert.equal(r.usage.completion_tokens, 5);
  r = await rig.chat.completions.create({ ...body, min_tokens: 5, stop_token_ids: [151657] });
  assert.equal(r.usage.completion_tokens, 6);
  assert.ok(r.choices[0].message.content.length > 0);
  assert.ok(!r.choices[0].message.content.includes('<tool_call>'));
  // ignore_eos: <|im_end|> is generated (and read as nothing) up to max_tokens
  const s = await streamed(rig, { ...body, ignore_eos: true, max_tokens: 30,
                                  stream_options: { include_usage: true } });
  assert.equal(s.finish, 'length');
  assert.equal(s.reasoning, 'Hello');
  assert.equal(s.chunks.at(-1).usage.completion_tokens, 30);
  const t = await rig.completions.create({ model: 'rig', prompt: env.FILLER + '<|im_end|>\n',
                                          temperature: 0, repetition_penalty: 10,
                                          ignore_eos: true, max_tokens: 24 });
  assert.equal(t.choices[0].finish_reason, 'length');
  assert.equal(t.usage.completion_tokens, 24);
  // bad values: 400 naming the member
  for (const [extra, param] of [[{ min_tokens: 31, max_tokens: 30 }, 'min_tokens'],
                                [{ stop_token_ids: [1, 151936] }, 'stop_token_ids[1]'],
                                [{ ignore_eos: 'yes' }, 'ignore_eos']]) {
    await assert.rejects(rig.chat.completions.create({ ...body, ...extra }),
                         (e) => e.status === 400 && e.error?.param === param);
  }
});

test('text: the rig\'s script as text, echoed, with logprobs of prompt and answer', async () => {
  // the prompt holds <|im_end|> (a special token read as one) so that the rig does not
  // end at once (tests/cli/rig-model.py)
  const prompt = env.FILLER + '<|im_end|>\n';
  const r = await rig.completions.create({ model: 'rig', prompt, max_tokens: 4,
                                          temperature: 0, repetition_penalty: 10, echo: true,
                                          logprobs: 2 });
  const c = r.choices[0], lp = c.logprobs;
  // <think> is text here: a raw continuation splits nothing off
  assert.equal(c.text, prompt + '<think>Hello\n\n</think>');
  assert.equal(c.finish_reason, 'length');
  assert.equal(lp.tokens.length, r.usage.prompt_tokens + 4);
  assert.equal(lp.tokens.join(''), c.text);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.deepEqual(lp.tokens.slice(-4), ['<think>', 'Hello', '\n\n', '</think>']);
  lp.tokens.forEach((t, i) => assert.equal(c.text.slice(lp.text_offset[i]).startsWith(t), true));
  for (let i = 1; i < lp.tokens.length; i++) {
    const top = lp.top_logprobs[i];
    assert.equal(top[lp.tokens[i]], lp.token_logprobs[i]);
    assert.ok(Object.keys(top).length <= 3); // 2 and the token itself
  }
  // the answer's are the model's own log-probabilities (vLLM's raw logprobs), not those
  // after the repetition penalty that picked the script: unpenalised, <|im_end|> is the
  // likeliest (tests/cli/rig-model.py)
  for (let i = lp.tokens.length - 4; i < lp.tokens.length; i++)
    assert.ok(Math.max(...Object.values(lp.top_logprobs[i])) > lp.token_logprobs[i]);
  const stopped = await rig.completions.create({ model: 'rig', prompt,
                                                temperature: 0, repetition_penalty: 10,
                                                stop: ['ll'] });
  assert.equal(stopped.choices[0].text, '<think>He');
  assert.equal(stopped.choices[0].finish_reason, 'stop');
});

test('text: an answer that ends at once lists its end token, as lm-eval reads it', async () => {
  // the rig's first pick without <|im_end|> in the prompt is <|im_end|> itself
  const r = await rig.completions.create({ model: 'rig', prompt: env.FILLER, max_tokens: 1,
                                          temperature: 0, repetition_penalty: 10, echo: true,
                                          logprobs: 1 });
  const c = r.choices[0], lp = c.logprobs;
  assert.equal(c.text, env.FILLER);
  assert.equal(c.finish_reason, 'stop');
  assert.equal(r.usage.completion_tokens, 1);
  assert.equal(lp.tokens.length, r.usage.prompt_tokens + 1); // lm-eval drops the last one
  assert.equal(lp.tokens[lp.tokens.length - 1], '<|im_end|>');
  assert.ok(lp.token_logprobs[lp.tokens.length - 1] <= 0);
});

test('text: a batch of prompts, a choice each by index', async () => {
  const r = await plain.completions.create({ model: 'm', prompt: ['Hello there', 'The cat'],
                                            max_tokens: 5, seed: 9 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  for (const [i, prompt] of ['Hello there', 'The cat'].entries()) {
    const alone = await plain.completions.create({ model: 'm', prompt, max_tokens: 5, seed: 9 });
    assert.equal(r.choices[i].text, alone.choices[0].text);
  }
  await assert.rejects(plain.completions.create({ model: 'm', prompt: 'x', suffix: 'y' }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'suffix');
});

test('errors come back as the client\'s error classes', async () => {
  await assert.rejects(plain.chat.completions.create({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }),
                       (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
                              e.param === 'messages[0].role');
  const wrong = new OpenAI({ baseURL: env.RIG_URL, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(wrong.chat.completions.create(rigBody),
                       (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});
