import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, type CodeLens, type MessageConnection } from 'vscode-languageserver/node';
import WebSocket from 'ws';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../sidecar/server/wsTransport';
import { parseHostPort, tokenMatches } from '../../sidecar/server/ws';
import { buildSidecar, runSidecar, startSidecar, waitForStderr } from './helpers/sidecar';

/** Try to open a socket; resolves with the HTTP status of a refused upgrade, or 101 when it opened. */
function connectStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.on('error', (e) => reject(e));
  });
}

function open(url: string, token: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

describe('agentkeep serve --ws (WebSocket)', function () {
  let tmp: string;
  let agent: string;
  let tokenFile: string;
  const token = 'secret-token-0123456789abcdef';
  let child: ChildProcess;
  let url: string;

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-ws-'));
    agent = path.join(tmp, 'agent');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.writeFile(path.join(agent, 'memories', 'USER.md'), 'Name: Dana');
    tokenFile = path.join(tmp, 'token');
    await fs.writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
  });

  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });

  async function start(): Promise<void> {
    child = startSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--state-dir',
      path.join(tmp, 'state'),
    ]);
    const m = await waitForStderr(child, /agentkeep: listening on (ws:\/\/127\.0\.0\.1:(\d+))\n/);
    assert.notEqual(m[2], '0', 'the real port is printed');
    url = m[1];
  }

  it('refuses connections without or with a wrong token with HTTP 401', async () => {
    await start();
    assert.equal(await connectStatus(url, {}), 401);
    assert.equal(await connectStatus(url, { Authorization: 'Bearer wrong' }), 401);
    assert.equal(await connectStatus(url, { Authorization: `Basic ${token}` }), 401);
    assert.equal(await connectStatus(url, { Authorization: `Bearer ${token}x` }), 401);
    assert.equal(await connectStatus(url, { Authorization: `Bearer ${token}` }), 101);
  });

  it('with the token: one JSON-RPC message per frame; LSP CodeLens, agentkeep/* and notifications work', async () => {
    await start();
    // raw frame: one message in, one message out
    const raw = await open(url, token);
    const reply = new Promise<any>((r) => raw.once('message', (d) => r(JSON.parse(d.toString()))));
    raw.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { processId: 999999999, capabilities: {} },
      }),
    );
    const init = await reply;
    assert.equal(init.id, 1);
    assert.deepEqual(init.result.capabilities.codeLensProvider, { resolveProvider: true });
    // a frame that is not JSON gets a JSON-RPC Parse error (id null), and the socket stays usable
    const parseError = new Promise<any>((r) => raw.once('message', (d) => r(JSON.parse(d.toString()))));
    raw.send('{not json');
    const pe = await parseError;
    assert.equal(pe.id, null);
    assert.equal(pe.error.code, -32700);
    const again = new Promise<any>((r) => raw.once('message', (d) => r(JSON.parse(d.toString()))));
    raw.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'agentkeep/restorePoint.list',
        params: { target: 'dir:' + agent },
      }),
    );
    assert.equal((await again).id, 2);
    raw.close();

    // a second socket with a real JSON-RPC client; the server survived the bogus processId above
    const ws = await open(url, token);
    const conn: MessageConnection = createMessageConnection(
      new WebSocketMessageReader(ws),
      new WebSocketMessageWriter(ws),
    );
    const notes: Array<{ method: string; params: any }> = [];
    conn.onNotification((method: string, params: unknown) => {
      notes.push({ method, params });
    });
    conn.listen();
    // as the VS Code extension initializes (clientCommands: its lens commands); other editors: lsp.test.ts
    await conn.sendRequest('initialize', {
      processId: null,
      capabilities: {},
      initializationOptions: { clientCommands: true },
    });
    await conn.sendNotification('initialized', {});

    const uri = pathToFileURL(path.join(agent, 'README.md')).href;
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: {
        uri,
        languageId: 'markdown',
        version: 1,
        text: '# Setup\n\n```bash\ncurl -fsSL https://example.com/i.sh | bash\n```\n',
      },
    });
    const ranged = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    const lenses = await Promise.all(ranged.map((l) => conn.sendRequest('codeLens/resolve', l) as Promise<CodeLens>));
    assert.deepEqual(
      lenses.map((l) => [l.range.start.line, l.command?.command, l.command?.arguments?.[0].class]),
      [
        [3, 'agentkeep.snapshotAndRun', 'remote-code'],
        [3, 'agentkeep.run', 'remote-code'],
      ],
    );

    const target = `dir:${agent}`;
    assert.deepEqual(await conn.sendRequest('agentkeep/restorePoint.list', { target }), []);
    const rp = (await conn.sendRequest('agentkeep/restorePoint.create', {
      target,
      label: 'over ws',
      progressToken: 'p1',
    })) as any;
    const list = (await conn.sendRequest('agentkeep/restorePoint.list', { target })) as any[];
    assert.deepEqual(
      list.map((p) => p.id),
      [rp.id],
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(
      notes.some((n) => n.method === 'agentkeep/changed' && n.params.target === target),
      `changed notification; got ${JSON.stringify(notes)}`,
    );
    assert.ok(
      notes.some((n) => n.method === 'agentkeep/progress' && n.params.token === 'p1'),
      'progress notification',
    );

    // LSP exit on one socket closes that socket only; the server keeps serving others
    const closed = new Promise((r) => ws.once('close', r));
    await conn.sendRequest('shutdown');
    await conn.sendNotification('exit');
    await closed;
    conn.dispose();
    assert.equal(child.exitCode, null, 'server still running');
    assert.equal(await connectStatus(url, { Authorization: `Bearer ${token}` }), 101);
  });

  it('refuses a missing, empty, too short or world-readable token file with one clear line', async () => {
    let r = await runSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', path.join(tmp, 'none')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^agentkeep: Token file .*none does not exist\. .*\n$/);
    await fs.writeFile(path.join(tmp, 'empty'), '  \n', { mode: 0o600 });
    r = await runSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', path.join(tmp, 'empty')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is empty/);
    await fs.writeFile(path.join(tmp, 'short'), 'abc\n', { mode: 0o600 });
    r = await runSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', path.join(tmp, 'short')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /too short \(3 characters; at least 16 needed\).*openssl rand/);
    await fs.chmod(tokenFile, 0o644);
    r = await runSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', tokenFile]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /readable by other users.*chmod 600/);
    r = await runSidecar(['serve', '--ws', '127.0.0.1:0']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--token-file/);
  });

  // Issue 11 changed this test: a non-loopback address without TLS was a warning, it is refused now.
  it('refuses a non-loopback address without TLS, naming --tls-cert and the SSH tunnel; nothing listens', async () => {
    const r = await runSidecar([
      'serve',
      '--ws',
      '0.0.0.0:0',
      '--token-file',
      tokenFile,
      '--state-dir',
      path.join(tmp, 'state'),
    ]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^agentkeep: Refusing to listen on 0\.0\.0\.0 without TLS: the bearer token and every memory entry would cross the network in clear text\. .*--tls-cert FILE --tls-key FILE.*ssh -N -L 7357:127\.0\.0\.1:7357/,
    );
    assert.doesNotMatch(r.stderr, /listening on/);
  });

  it('parses HOST:PORT and compares tokens', () => {
    assert.deepEqual(parseHostPort('127.0.0.1:7420'), { host: '127.0.0.1', port: 7420 });
    assert.deepEqual(parseHostPort('[::1]:0'), { host: '::1', port: 0 });
    assert.deepEqual(parseHostPort(':8080'), { host: '127.0.0.1', port: 8080 });
    assert.deepEqual(parseHostPort('9000'), { host: '127.0.0.1', port: 9000 });
    assert.throws(
      () => parseHostPort('host'),
      (e: any) => /HOST:PORT/.test(e.hint) && /"host"/.test(e.message),
    );
    assert.throws(
      () => parseHostPort('h:99999'),
      (e: any) => /HOST:PORT/.test(e.hint),
    );
    assert.equal(tokenMatches('Bearer abc', 'abc'), true);
    assert.equal(tokenMatches('bearer  abc ', 'abc'), true);
    assert.equal(tokenMatches('Bearer abd', 'abc'), false);
    assert.equal(tokenMatches(undefined, 'abc'), false);
  });
});
