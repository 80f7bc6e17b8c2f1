/**
 * JSON-RPC 2.0 conformance (issue 13 #8) of both transports, on a real spawned sidecar: stdio
 * (Content-Length framed bodies written by hand) and a real WebSocket (one text frame per message).
 * Parse error -32700 and Invalid Request -32600 with id null, an empty batch, batches answered as
 * one array, notifications in a batch unanswered, an all-notification batch answered with nothing.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { checkMessage } from '../../sidecar/server/jsonrpc';
import { buildSidecar, startSidecar, waitForStderr } from './helpers/sidecar';

/** A raw JSON-RPC channel: send one body, read the next message (undefined after `ms` of silence). */
interface Channel {
  send(body: string): void;
  next(ms?: number): Promise<any>;
  close(): Promise<void>;
}

/** Collects parsed messages and hands them out in order. */
class Inbox {
  private readonly items: any[] = [];
  private waiter?: (v: any) => void;
  push(v: any): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(v);
    } else this.items.push(v);
  }
  next(ms = 10000): Promise<any> {
    if (this.items.length) return Promise.resolve(this.items.shift());
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, ms);
      this.waiter = (v) => {
        clearTimeout(t);
        resolve(v);
      };
    });
  }
}

/** `agentkeep serve --stdio`, spoken to with hand-written Content-Length frames. */
function stdioChannel(child: ChildProcess): Channel {
  const inbox = new Inbox();
  let buf = Buffer.alloc(0);
  child.stdout!.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/content-length:\s*(\d+)/i.exec(buf.subarray(0, end).toString())?.[1]);
      if (buf.length < end + 4 + len) return;
      inbox.push(JSON.parse(buf.subarray(end + 4, end + 4 + len).toString('utf8')));
      buf = buf.subarray(end + 4 + len);
    }
  });
  return {
    send: (body) => child.stdin!.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
    next: (ms) => inbox.next(ms),
    close: async () => {
      child.stdin!.end();
      if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

/** One raw WebSocket to `agentkeep serve --ws`. */
async function wsChannel(url: string, token: string): Promise<Channel> {
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const inbox = new Inbox();
  ws.on('message', (d) => inbox.push(JSON.parse(d.toString())));
  return {
    send: (body) => ws.send(body),
    next: (ms) => inbox.next(ms),
    close: async () => {
      ws.close();
      await new Promise((r) => ws.once('close', r));
    },
  };
}

const req = (id: unknown, method: string, params?: unknown): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});
const note = (method: string, params: unknown = {}): Record<string, unknown> => ({ jsonrpc: '2.0', method, params });

function assertInvalid(m: any, id: unknown, re: RegExp): void {
  assert.ok(m, 'an answer arrived');
  assert.ok(!Array.isArray(m), `one response, not an array: ${JSON.stringify(m)}`);
  assert.equal(m.jsonrpc, '2.0');
  assert.equal(m.id, id);
  assert.equal(m.error?.code, -32600, JSON.stringify(m));
  assert.match(m.error.message, re);
  assert.equal(m.error.data.code, 'invalid_request');
  assert.ok(m.error.data.hint);
}

/** The cases, run on each transport. */
function conformance(open: () => Promise<{ ch: Channel; target: string }>): void {
  let ch: Channel;
  let target: string;
  beforeEach(async () => {
    ({ ch, target } = await open());
  });
  afterEach(async () => {
    await ch.close();
  });

  it('valid JSON that is not a request gets -32600 with id null; an empty batch gets one -32600', async () => {
    ch.send('42');
    assertInvalid(await ch.next(), null, /is an object, this is a number \(42\)/);
    ch.send('{"hello":"world"}');
    assertInvalid(await ch.next(), null, /"jsonrpc": "2\.0" member is missing/);
    ch.send('[]');
    assertInvalid(await ch.next(), null, /batch is empty/);
    ch.send('"initialize"');
    assertInvalid(await ch.next(), null, /this is a string/);
    ch.send('null');
    assertInvalid(await ch.next(), null, /this is null/);
    // a request whose id is valid but whose method is not: the error carries the id
    ch.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 5 }));
    assertInvalid(await ch.next(), 3, /"method" must be a string/);
    ch.send(JSON.stringify({ jsonrpc: '1.0', id: 'x', method: 'initialize' }));
    assertInvalid(await ch.next(), 'x', /"jsonrpc" must be exactly "2\.0"/);
    ch.send(JSON.stringify({ jsonrpc: '2.0', id: { no: 1 }, method: 'initialize' }));
    assertInvalid(await ch.next(), null, /"id" must be a string, a number or null/);
    ch.send(JSON.stringify(req(4, 'initialize', 'not structured')));
    assertInvalid(await ch.next(), 4, /"params" must be an object or an array/);
  });

  it('a body that is not JSON gets a Parse error -32700 with id null, and the connection stays usable', async () => {
    ch.send('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]');
    const pe = await ch.next();
    assert.equal(pe.id, null);
    assert.equal(pe.error.code, -32700);
    assert.match(pe.error.message, /^Parse error: /);
    assert.equal(pe.error.data.code, 'parse_error');
    ch.send(JSON.stringify(req(1, 'initialize', { processId: null, capabilities: {} })));
    const init = await ch.next();
    assert.equal(init.id, 1);
    assert.ok(init.result.capabilities);
  });

  it('a batch is answered with one array in batch order; its notifications get no response', async () => {
    ch.send(
      JSON.stringify([
        req(1, 'initialize', { processId: null, capabilities: {} }),
        note('initialized'),
        req('b', 'no/such/method', {}),
        5,
        req(2, 'agentkeep/restorePoint.list', { target }),
        [],
      ]),
    );
    const answer = await ch.next();
    assert.ok(Array.isArray(answer), JSON.stringify(answer));
    assert.deepEqual(
      answer.map((r: any) => r.id),
      [1, 'b', null, 2, null],
    );
    assert.ok(answer[0].result.capabilities.codeLensProvider);
    assert.equal(answer[1].error.code, -32601);
    assert.equal(answer[2].error.code, -32600);
    assert.deepEqual(answer[3].result, []);
    assert.match(answer[4].error.message, /batches do not nest/);
    // a batch with an error from the core keeps the core's code and data
    ch.send(
      JSON.stringify([
        req(10, 'agentkeep/restorePoint.list', { target: 'bogus:/x' }),
        req(11, 'agentkeep/restorePoint.list', { target }),
      ]),
    );
    const two = await ch.next();
    assert.deepEqual(
      two.map((r: any) => [r.id, r.error?.code ?? 'ok']),
      [
        [10, -33001],
        [11, 'ok'],
      ],
    );
    assert.equal(two[0].error.data.code, 'bad_target');
  });

  it('an all-notification batch gets nothing back; batch ids do not collide with other requests', async () => {
    ch.send(JSON.stringify(req(1, 'initialize', { processId: null, capabilities: {} })));
    assert.equal((await ch.next()).id, 1);
    ch.send(JSON.stringify([note('initialized'), note('workspace/didChangeConfiguration', { settings: {} })]));
    // the next message is the answer to the next request, not something for the batch
    ch.send(JSON.stringify(req(7, 'agentkeep/restorePoint.list', { target })));
    const next = await ch.next();
    assert.ok(!Array.isArray(next));
    assert.equal(next.id, 7);
    assert.equal(await ch.next(300), undefined, 'nothing else arrives');
    // the same id in a batch and alone, in flight together: both answered, each once
    ch.send(JSON.stringify([req(8, 'agentkeep/restorePoint.list', { target })]));
    ch.send(JSON.stringify(req(8, 'agentkeep/restorePoint.list', { target: 'bogus:/y' })));
    const got = [await ch.next(), await ch.next()];
    const batch = got.find((m) => Array.isArray(m))!;
    const single = got.find((m) => !Array.isArray(m))!;
    assert.deepEqual(
      batch.map((r: any) => [r.id, r.result]),
      [[8, []]],
    );
    assert.equal(single.id, 8);
    assert.equal(single.error.code, -33001);
    assert.equal(await ch.next(300), undefined, 'nothing else arrives');
  });

  it('a request with id null is answered with id null', async () => {
    ch.send(JSON.stringify(req(null, 'agentkeep/restorePoint.list', { target })));
    const r = await ch.next();
    assert.equal(r.id, null);
    assert.deepEqual(r.result, []);
  });
}

describe('JSON-RPC 2.0 conformance: agentkeep serve --stdio', function () {
  this.timeout(60000);
  let tmp: string;
  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-jsonrpc-stdio-'));
    await fs.mkdir(path.join(tmp, 'agent'));
  });
  afterEach(async () => {
    // this hook runs before conformance()'s own afterEach closes the server, and a server that just
    // started may still be making its hook hand-off folder (<state>/hooks/handoff): retry on ENOTEMPTY
    await fs.rm(tmp, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  });
  conformance(async () => {
    const child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
    return { ch: stdioChannel(child), target: `dir:${path.join(tmp, 'agent')}` };
  });

  it('closing stdin without shutdown ends the server with exit code 1; after shutdown with 0', async () => {
    for (const [shutdown, code] of [
      [false, 1],
      [true, 0],
    ] as const) {
      const child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
      const ch = stdioChannel(child);
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      ch.send(JSON.stringify(req(1, 'initialize', { processId: null, capabilities: {} })));
      assert.equal((await ch.next()).id, 1);
      if (shutdown) {
        ch.send(JSON.stringify([req(2, 'shutdown')]));
        assert.deepEqual(
          (await ch.next()).map((r: any) => r.id),
          [2],
        );
      }
      child.stdin!.end();
      assert.equal(await exited, code);
    }
  });
});

describe('JSON-RPC 2.0 conformance: agentkeep serve --ws', function () {
  this.timeout(60000);
  let tmp: string;
  let child: ChildProcess;
  let url: string;
  const token = 'secret-token-0123456789abcdef';
  before(async function () {
    this.timeout(120000);
    await buildSidecar();
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-jsonrpc-ws-'));
    await fs.mkdir(path.join(tmp, 'agent'));
    await fs.writeFile(path.join(tmp, 'token'), `${token}\n`, { mode: 0o600 });
    child = startSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      path.join(tmp, 'token'),
      '--state-dir',
      path.join(tmp, 'state'),
    ]);
    url = (await waitForStderr(child, /agentkeep: listening on (ws:\/\/127\.0\.0\.1:\d+)\n/))[1];
  });
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });
  conformance(async () => ({ ch: await wsChannel(url, token), target: `dir:${path.join(tmp, 'agent')}` }));

  it('a binary frame gets a Parse error naming text frames', async () => {
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
    await new Promise((r) => ws.once('open', r));
    const reply = new Promise<any>((r) => ws.once('message', (d) => r(JSON.parse(d.toString()))));
    ws.send(Buffer.from(JSON.stringify(req(1, 'initialize', {}))), { binary: true });
    const pe = await reply;
    assert.equal(pe.error.code, -32700);
    assert.equal(pe.id, null);
    assert.match(pe.error.message, /text frames/);
    ws.close();
  });
});

describe('JSON-RPC 2.0 message check (checkMessage)', () => {
  it('tells requests, notifications, responses and invalid values apart', () => {
    assert.equal(checkMessage({ jsonrpc: '2.0', id: 1, method: 'a' }).kind, 'request');
    assert.equal(checkMessage({ jsonrpc: '2.0', id: null, method: 'a', params: [] }).kind, 'request');
    assert.equal(checkMessage({ jsonrpc: '2.0', method: 'a', params: {} }).kind, 'notification');
    assert.equal(checkMessage({ jsonrpc: '2.0', id: 1, result: null }).kind, 'response');
    assert.equal(checkMessage({ jsonrpc: '2.0', id: null, error: { code: 1, message: 'x' } }).kind, 'response');
    assert.equal(checkMessage({ jsonrpc: '2.0', id: 1, result: 1, error: {} }).kind, 'invalid');
    assert.equal(checkMessage({ jsonrpc: '2.0', id: 1 }).kind, 'invalid');
    assert.equal(checkMessage({ jsonrpc: '2.0', method: 'a', params: null }).kind, 'invalid');
    assert.deepEqual(checkMessage([1], true), {
      kind: 'invalid',
      id: null,
      reason: 'a batch element is itself an array (batches do not nest)',
    });
  });
});
