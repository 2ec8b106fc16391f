// End-to-end: the official `openai` npm client against a real `ladder serve`,
// or (LADDER_E2E_TARGET=route) `ladder route` with a prefill and a decode worker.
// Run by the ctest suite `server` (tests/server/e2e_test.cc), or by hand:
//   LADDER_BIN=build/src/cli/ladder LADDER_MODEL=../shared/models/stories260K.gguf node openai_client.test.mjs
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';

const GOLDEN =
  ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ' +
  'ball. She wanted to play with it, but it was too high.\nLily\'s mom said';

const bin = process.env.LADDER_BIN;
const model = process.env.LADDER_MODEL;
assert.ok(bin, 'LADDER_BIN must name the ladder binary');
assert.ok(model, 'LADDER_MODEL must name stories260K.gguf');

const dir = mkdtempSync(join(tmpdir(), 'ladder-e2e-'));
const tenants = join(dir, 'tenants.toml');
writeFileSync(tenants, '[[tenant]]\nname = "e2e"\napi_keys = ["sk-e2e"]\n');

// LADDER_E2E_TARGET=route: the same suite through `ladder route` in front of
// a prefill and a decode worker (three processes); default: `ladder serve`.
const target = process.env.LADDER_E2E_TARGET ?? 'serve';
assert.ok(['serve', 'route'].includes(target), `LADDER_E2E_TARGET ${target}`);

function spawnLadder(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`ladder ${args[0]} did not report its port`)), 30000);
    child.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on http:\/\/([\d.]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, base: `http://${m[1]}:${m[2]}` });
      }
    });
    child.on('exit', (code) => reject(new Error(`ladder ${args[0]} exited early with ${code}`)));
  });
}

// The process clients talk to, and the ones that hold KV (their /metrics say
// how many blocks are in use).
async function startServer() {
  // --tool-preamble off: the tools preamble would not fit stories260K's 128-token context.
  const common = ['--port', '0', '-m', model, '--tenants', tenants];
  const serveArgs = [...common, '--tool-preamble', 'off'];
  if (target === 'serve') {
    const s = await spawnLadder(['serve', ...serveArgs]);
    return { children: [s.child], base: s.base, kvBases: [s.base] };
  }
  const prefill = await spawnLadder(['serve', ...serveArgs, '--role', 'prefill', '--threads', '1']);
  const decode = await spawnLadder(['serve', ...serveArgs, '--role', 'decode', '--threads', '1', '--kv-host', '127.0.0.1', '--kv-port', '0']);
  const router = await spawnLadder(['route', ...common, '--prefill', prefill.base, '--decode', decode.base]);
  return { children: [router.child, prefill.child, decode.child], base: router.base, kvBases: [prefill.base, decode.base] };
}

async function waitReady(base) {
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.status === 200) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server never became ready');
}

async function metric(base, name) {
  // /metrics follows the API key, like the API.
  const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: 'Bearer sk-e2e' } })).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

const { children, base, kvBases } = await startServer();
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

try {
  await waitReady(base);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-e2e', maxRetries: 0 });

  await check('models.list', async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      ids.push(m.id);
      assert.equal(m.max_model_len, 128);  // what long-context workloads size prompts by
    }
    assert.deepEqual(ids, ['stories260K']);
  });

  await check('models.retrieve', async () => {
    const m = await client.models.retrieve('stories260K');
    assert.equal(m.id, 'stories260K');
    assert.ok(m.created > 1_600_000_000, `created ${m.created}`);
    await assert.rejects(client.models.retrieve('gpt-4o'), (e) => e.status === 404);
  });

  await check('completions, non-streaming, golden greedy text', async () => {
    const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 64, temperature: 0 });
    assert.equal(r.choices[0].text, GOLDEN);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.prompt_tokens, 5);
    assert.equal(r.usage.completion_tokens, 64);
    assert.ok(r.ladder.ttft_ms >= 0);
    assert.match(r.system_fingerprint, /^fp_[0-9a-f]{16}$/);
  });

  await check('completions, streaming with usage, golden greedy text', async () => {
    const stream = await client.completions.create({
      model: 'stories260K', prompt: 'Once upon a time', max_tokens: 64, temperature: 0,
      stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.choices.length > 0) {
        text += chunk.choices[0].text;
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, GOLDEN);
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 64);
  });

  await check('chat, non-streaming', async () => {
    const r = await client.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about Lily.' }],
      max_completion_tokens: 20, temperature: 0, seed: 7,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 20);
  });

  await check('chat, streaming with usage, same text as non-streaming', async () => {
    const req = { model: 'stories260K', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 24, temperature: 0 };
    const whole = await client.chat.completions.create(req);
    const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let role = null;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.choices.length > 0) {
        role = chunk.choices[0].delta.role ?? role;
        text += chunk.choices[0].delta.content ?? '';
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(role, 'assistant');
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  });

  await check('errors surface as the client library\'s typed errors', async () => {
    const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(bad.completions.create({ model: 'stories260K', prompt: 'x' }), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    await assert.rejects(client.completions.create({ model: 'gpt-nope', prompt: 'x' }), (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
    await assert.rejects(client.completions.create({ model: 'stories260K', prompt: 'x', n: 99 }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'n');
    await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'x' }], prediction: { type: 'content', content: 'x' } }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'prediction');
  });

  // A JSON Schema the test checks by hand (stories260K never writes JSON on its own).
  const personSchema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 150 }, pet: { enum: ['cat', 'dog', 'fish'] } },
    required: ['name', 'age', 'pet'], additionalProperties: false,
  };
  function checkPerson(v) {
    assert.deepEqual(Object.keys(v).sort(), ['age', 'name', 'pet']);
    assert.equal(typeof v.name, 'string');
    assert.ok([...v.name].length <= 12);
    assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 150);
    assert.ok(['cat', 'dog', 'fish'].includes(v.pet));
  }

  await check('strict json_schema output parses and validates, streamed and not', async () => {
    for (const seed of [1, 2, 3]) {
      const req = {
        model: 'stories260K', messages: [{ role: 'user', content: 'Describe a person.' }], seed, temperature: 1,
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personSchema } },
      };
      const r = await client.chat.completions.create(req);
      assert.equal(r.choices[0].finish_reason, 'stop');
      checkPerson(JSON.parse(r.choices[0].message.content));
      let text = '';
      for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
        if (chunk.choices.length > 0) text += chunk.choices[0].delta.content ?? '';
      }
      assert.equal(text, r.choices[0].message.content);
    }
  });

  await check('JSON mode output is a JSON object', async () => {
    // Token 128 is "}" in stories260K: a push so its objects close in the context.
    let closed = 0;
    for (const seed of [0, 1, 2, 3]) {
      const r = await client.completions.create({
        model: 'stories260K', prompt: 'Once upon a time', max_tokens: 120, seed, temperature: 0.7,
        logit_bias: { 128: 8 }, response_format: { type: 'json_object' },
      });
      const text = r.choices[0].text;
      assert.equal(text[0], '{');
      if (r.choices[0].finish_reason === 'stop') {
        closed++;
        const v = JSON.parse(text);
        assert.equal(typeof v, 'object');
        assert.ok(v !== null && !Array.isArray(v));
      }
    }
    assert.ok(closed >= 2, `only ${closed} of 4 JSON objects closed`);
  });

  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 8 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'] } } }];
  function checkCall(name, args) {
    assert.equal(name, 'get_weather');
    const a = JSON.parse(args);
    assert.equal(typeof a.city, 'string');
    assert.ok(['c', 'f'].includes(a.unit));
  }

  await check('forced tool calls come back as tool_calls, streamed and not', async () => {
    const req = {
      model: 'stories260K', messages: [{ role: 'user', content: 'Weather?' }], temperature: 0, tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
    };
    const r = await client.chat.completions.create(req);
    const calls = r.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.ok(calls[0].id.startsWith('call_'));
    checkCall(calls[0].function.name, calls[0].function.arguments);
    // "tool_calls", or "length" when the context (128) cut the closing tag.
    assert.ok(['tool_calls', 'length'].includes(r.choices[0].finish_reason));
    let name = '';
    let args = '';
    for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
        if (d.function?.name) name = d.function.name;
        args += d.function?.arguments ?? '';
      }
    }
    checkCall(name, args);
    assert.equal(args, calls[0].function.arguments);
  });

  await check('completions with several prompts: n choices per prompt, in prompt order', async () => {
    const prompts = ['Once upon a time', 'The little dog'];
    const req = { model: 'stories260K', max_tokens: 12, temperature: 0 };
    const both = await client.completions.create({ ...req, prompt: prompts, n: 2 });
    assert.deepEqual(both.choices.map((c) => c.index), [0, 1, 2, 3]);
    let promptTokens = 0;
    for (const [i, p] of prompts.entries()) {
      const alone = await client.completions.create({ ...req, prompt: p });
      assert.equal(both.choices[2 * i].text, alone.choices[0].text);
      assert.equal(both.choices[2 * i + 1].text, alone.choices[0].text);  // greedy: n alike
      promptTokens += alone.usage.prompt_tokens;
    }
    assert.equal(both.usage.prompt_tokens, promptTokens);
    assert.equal(both.usage.completion_tokens, 4 * 12);
  });

  await check('echo: each choice begins with its prompt, streamed and not', async () => {
    const req = { model: 'stories260K', prompt: ['Once upon a time', 'The little dog'], max_tokens: 8, temperature: 0 };
    const plain = await client.completions.create(req);
    const echoed = await client.completions.create({ ...req, echo: true });
    for (const i of [0, 1]) assert.equal(echoed.choices[i].text, req.prompt[i] + plain.choices[i].text);
    const texts = ['', ''];
    for await (const chunk of await client.completions.create({ ...req, echo: true, stream: true })) {
      for (const c of chunk.choices) texts[c.index] += c.text;
    }
    assert.deepEqual(texts, echoed.choices.map((c) => c.text));
    // With logprobs, each choice's begin with its prompt's tokens (the first, which nothing predicts, null).
    const scored = await client.completions.create({ ...req, echo: true, logprobs: 1, max_tokens: 2 });
    for (const c of scored.choices) {
      assert.equal(c.logprobs.token_logprobs[0], null);
      assert.ok(c.logprobs.token_logprobs.slice(1).every((lp) => lp <= 0));
      assert.ok(c.logprobs.tokens.length > 2);
    }
  });

  await check('/tokenize, /detokenize and /version in vLLM and llama.cpp shapes', async () => {
    const headers = { Authorization: 'Bearer sk-e2e', 'Content-Type': 'application/json' };
    const call = async (path, body) => {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      assert.equal(r.status, 200, `${path}: ${r.status}`);
      return r.json();
    };
    const prompt = 'Once upon a time';
    const t = await call('/tokenize', { model: 'stories260K', prompt });
    assert.equal(t.count, t.tokens.length);
    const done = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 1 });
    assert.equal(done.usage.prompt_tokens, t.count);
    assert.equal((await call('/detokenize', { tokens: t.tokens })).prompt, prompt);
    const llama = await call('/tokenize', { content: prompt, with_pieces: true });
    assert.deepEqual(llama.tokens.map((p) => p.id), t.tokens.slice(1));
    const messages = [{ role: 'user', content: 'Hi' }];
    const chatIds = await call('/tokenize', { messages });
    const chat = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 1 });
    assert.equal(chat.usage.prompt_tokens, chatIds.count);
    const unauthorized = await fetch(`${base}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt }) });
    assert.equal(unauthorized.status, 401);
    const version = await (await fetch(`${base}/version`)).json();
    assert.ok(version.version.length > 0);
  });

  await check('vLLM extensions through the SDK: guided_choice, continue_final_message, prompt_logprobs, min_tokens', async () => {
    const choices = ['yes', 'no'];
    const guided = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, guided_choice: choices });
    assert.ok(choices.includes(guided.choices[0].message.content), guided.choices[0].message.content);
    const prefill = [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Once upon a' }];
    const continued = await client.chat.completions.create({ model: 'stories260K', messages: prefill, max_tokens: 4, continue_final_message: true, add_generation_prompt: false });
    const closed = await client.chat.completions.create({ model: 'stories260K', messages: prefill, max_tokens: 4, continue_final_message: false });
    assert.ok(continued.usage.prompt_tokens < closed.usage.prompt_tokens);
    const scored = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 1, prompt_logprobs: 1 });
    assert.equal(scored.choices[0].prompt_logprobs.length, scored.usage.prompt_tokens);
    assert.equal(scored.choices[0].prompt_logprobs[0], null);
    const long = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 6, min_tokens: 6, stop_token_ids: [2], temperature: 0 });
    assert.equal(long.usage.completion_tokens, 6);
    await assert.rejects(client.completions.create({ model: 'stories260K', prompt: 'x', max_tokens: 2, min_tokens: 3 }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'min_tokens');
  });

  await check('Responses API: create, stream, previous_response_id, retrieve, delete', async () => {
    const input = 'Once upon a time';
    const r = await client.responses.create({ model: 'stories260K', input, max_output_tokens: 12, temperature: 0 });
    assert.equal(r.object, 'response');
    const chat = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: input }], max_tokens: 12, temperature: 0 });
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    let text = '';
    let final = null;
    const stream = await client.responses.create({ model: 'stories260K', input, max_output_tokens: 12, temperature: 0, stream: true });
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
    }
    assert.equal(text, r.output_text);
    assert.ok(final && final.id.startsWith('resp_'));
    // The streamed response is kept too (by the router, behind ladder route): continue from it.
    const next = await client.responses.create({ model: 'stories260K', input: 'And then?', previous_response_id: final.id, max_output_tokens: 4 });
    assert.ok(next.usage.input_tokens > r.usage.input_tokens + 4, `${next.usage.input_tokens}`);
    assert.equal((await client.responses.retrieve(r.id)).id, r.id);
    await client.responses.del(r.id);
    await assert.rejects(client.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError);
  });

  await check('logit_bias changes the output as asked', async () => {
    const plain = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, return_token_ids: true });
    const first = plain.choices[0].token_ids[0];
    const banned = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, return_token_ids: true, logit_bias: { [first]: -100 } });
    assert.ok(!banned.choices[0].token_ids.includes(first));
    assert.notEqual(banned.choices[0].text, plain.choices[0].text);
  });

  await check('n=2 returns two choices', async () => {
    const r = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 12, seed: 5, temperature: 1 });
    assert.equal(r.choices.length, 2);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    assert.notEqual(r.choices[0].message.content, r.choices[1].message.content);
  });

  await check('/metrics counts every output token, streamed with and without include_usage', async () => {
    // Earlier requests settle once their delivery ended, a moment after the
    // client has read them: start from a quiet server.
    for (let i = 0; i < 200 && (await metric(base, 'ladder_live_requests')) !== 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const before = await metric(base, 'ladder_completion_tokens_total');
    const req = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 10, temperature: 0, ignore_eos: true };
    const whole = await client.completions.create(req);
    assert.equal(whole.usage.completion_tokens, 10);
    let usage = null;
    for await (const chunk of await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } })) {
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(usage.completion_tokens, 10);
    let pieces = 0;
    for await (const chunk of await client.completions.create({ ...req, stream: true })) {
      if (chunk.choices.length > 0 && chunk.choices[0].text) pieces++;
    }
    assert.ok(pieces >= 1);
    let after = NaN;
    for (let i = 0; i < 50; i++) {  // the last request settles once its stream was delivered
      after = await metric(base, 'ladder_completion_tokens_total');
      if (after - before === 30) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(after - before, 30);
  });

  await check('embeddings have the model\'s width and unit length', async () => {
    const models = await (await fetch(`${kvBases.at(-1)}/v1/models`, { headers: { Authorization: 'Bearer sk-e2e' } })).json();
    const width = models.data[0].ladder.embedding_width;
    const r = await client.embeddings.create({ model: 'stories260K', input: ['Once upon a time', 'a cat'] });
    assert.equal(r.data.length, 2);
    for (const d of r.data) {
      assert.equal(d.embedding.length, width);
      const norm = Math.sqrt(d.embedding.reduce((s, x) => s + x * x, 0));
      assert.ok(Math.abs(norm - 1) < 1e-3, `norm ${norm}`);
    }
    assert.ok(r.usage.prompt_tokens > 0);
    assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
  });

  await check('aborting a stream frees its KV blocks', async () => {
    const stream = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 100, stream: true });
    for await (const _chunk of stream) {
      stream.controller.abort();
      break;
    }
    for (const kvBase of kvBases) {
      let used = NaN;
      for (let i = 0; i < 100; i++) {
        used = await metric(kvBase, 'ladder_kv_blocks_used');
        if (used === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(used, 0, `${kvBase} holds KV blocks`);
    }
    // A router holds no KV and says so by leaving the gauges out.
    if (target === 'route') assert.ok(Number.isNaN(await metric(base, 'ladder_kv_blocks_used')));
  });
} finally {
  // The front first (a router drains before its workers go), then the workers.
  for (const child of children) {
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) {
      failed++;
      console.log(`FAIL ladder exited with ${code} after SIGTERM`);
    } else {
      console.log('ok   SIGTERM: drained and exited 0');
    }
  }
}
process.exit(failed === 0 ? 0 : 1);
