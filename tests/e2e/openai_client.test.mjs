// End-to-end: the official `openai` npm client against a real `ladder serve`.
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

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--port', '0', '-m', model, '--tenants', tenants], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error('ladder serve did not report its port')), 30000);
    child.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on http:\/\/([\d.]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, base: `http://${m[1]}:${m[2]}` });
      }
    });
    child.on('exit', (code) => reject(new Error(`ladder serve exited early with ${code}`)));
  });
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
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

const { child, base } = await startServer();
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
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids, ['stories260K']);
  });

  await check('completions, non-streaming, golden greedy text', async () => {
    const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 64, temperature: 0 });
    assert.equal(r.choices[0].text, GOLDEN);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.prompt_tokens, 5);
    assert.equal(r.usage.completion_tokens, 64);
    assert.ok(r.ladder.ttft_ms >= 0);
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
    await assert.rejects(client.completions.create({ model: 'stories260K', prompt: 'x', n: 2 }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'n');
  });

  await check('aborting a stream frees its KV blocks', async () => {
    const stream = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 100, stream: true });
    for await (const _chunk of stream) {
      stream.controller.abort();
      break;
    }
    let used = NaN;
    for (let i = 0; i < 100; i++) {
      used = await metric(base, 'ladder_kv_blocks_used');
      if (used === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(used, 0);
  });
} finally {
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await exited;
  if (code !== 0) {
    failed++;
    console.log(`FAIL ladder serve exited with ${code} after SIGTERM`);
  } else {
    console.log('ok   SIGTERM: drained and exited 0');
  }
}
process.exit(failed === 0 ? 0 : 1);
