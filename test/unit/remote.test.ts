/**
 * The remote sidecar (issue 11 item 4), with real parts: `agentkeep serve --ws` as a real process
 * with TLS from a self-signed certificate made by openssl here, the editor's link (extension/remote.ts:
 * URL rules, pinning, token, reconnect) as the client, a raw TLS listener to prove a pin mismatch
 * sends nothing, and a real restart of the server on the same port.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { createMessageConnection, type MessageConnection } from 'vscode-languageserver/node';
import WebSocket from 'ws';
import {
  backoffMs,
  connectRemote,
  MIN_REMOTE_TOKEN_CHARS,
  normaliseFingerprint,
  parseRemoteUrl,
  RemoteLink,
  type LinkState,
  type RemoteError,
} from '../../extension/remote';
import { MIN_TOKEN_CHARS, TLS_DIR, tlsOpensslCommand, tlsPairHint } from '../../sidecar/server/ws';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../sidecar/server/wsTransport';
import { buildSidecar, runSidecar, startSidecar, waitForStderr } from './helpers/sidecar';

/** A self-signed certificate for 127.0.0.1 made with `openssl req -x509`, written to dir. */
function makeCert(dir: string, name: string): { cert: string; key: string; fingerprint: string } {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key, fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

/** HTTP status of a WebSocket upgrade (101 when it opened). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, rejectUnauthorized: false });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.on('error', reject);
  });
}

function rpc(ws: WebSocket): MessageConnection {
  const c = createMessageConnection(new WebSocketMessageReader(ws), new WebSocketMessageWriter(ws));
  c.listen();
  return c;
}

describe('remote sidecar: serve --ws with TLS, origins, and the editor link', function () {
  this.timeout(60000);
  let tmp: string;
  let tokenFile: string;
  const token = 'remote-token-0123456789abcdef';
  let children: ChildProcess[] = [];

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-remote-'));
    tokenFile = path.join(tmp, 'token');
    await fs.writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    children = [];
  });

  afterEach(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await new Promise((r) => c.once('exit', r));
      }
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });

  async function serve(extra: string[], listen = '127.0.0.1:0'): Promise<{ url: string; stderr: string }> {
    const child = startSidecar([
      'serve',
      '--ws',
      listen,
      '--token-file',
      tokenFile,
      '--state-dir',
      path.join(tmp, 'state'),
      ...extra,
    ]);
    children.push(child);
    const m = await waitForStderr(child, /agentkeep: listening on (wss?:\/\/[^\s]+)\n/);
    return { url: m[1], stderr: m.input ?? '' };
  }

  it('serves wss:// with --tls-cert/--tls-key, prints the fingerprint; the pinned link works, JSON-RPC included', async () => {
    const c = makeCert(tmp, 'sidecar');
    const { url, stderr } = await serve(['--tls-cert', c.cert, '--tls-key', c.key]);
    assert.match(url, /^wss:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(
      stderr.includes(`TLS certificate SHA-256 fingerprint ${c.fingerprint}`),
      `fingerprint printed; got ${stderr}`,
    );
    // the pin in any usual spelling (openssl's output, lower case, no colons)
    for (const pin of [c.fingerprint, c.fingerprint.toLowerCase(), `sha256 Fingerprint=${c.fingerprint}`]) {
      const ws = await connectRemote({ url, fingerprint: pin, token });
      const conn = rpc(ws);
      const init = (await conn.sendRequest('initialize', { processId: null, capabilities: {} })) as any;
      assert.equal(init.serverInfo.name, 'agentkeep');
      const agent = path.join(tmp, 'agent');
      await fs.mkdir(agent, { recursive: true });
      assert.deepEqual(await conn.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` }), []);
      conn.dispose();
      ws.close();
    }
    // without a pin the self-signed certificate is untrusted: refused, with the fingerprint to pin
    await assert.rejects(connectRemote({ url, token }), (e: RemoteError) => {
      assert.equal(e.code, 'sidecar_tls');
      assert.match(e.message, /not trusted .*nothing was sent/);
      assert.ok(e.message.includes(c.fingerprint), e.message);
      assert.match(e.hint ?? '', new RegExp(`agentkeep\\.sidecar\\.fingerprint to ${c.fingerprint}`));
      return true;
    });
    // a wrong token over TLS: 401, named
    await assert.rejects(
      connectRemote({ url, fingerprint: c.fingerprint, token: 'wrong-token-0123456789' }),
      (e: RemoteError) =>
        e.code === 'sidecar_unauthorized' &&
        /HTTP 401/.test(e.message) &&
        /Set Remote Sidecar Token/.test(e.hint ?? ''),
    );
  });

  it('a pinned fingerprint that does not match is refused with the fingerprint seen, and nothing is sent', async () => {
    const real = makeCert(tmp, 'real');
    const other = makeCert(tmp, 'other');
    // a raw TLS listener with the "real" certificate records every byte a client sends after the handshake
    const received: Buffer[] = [];
    const server = tls.createServer({ cert: await fs.readFile(real.cert), key: await fs.readFile(real.key) }, (s) =>
      s.on('data', (d) => received.push(d)).on('error', () => undefined),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      await assert.rejects(
        connectRemote({ url: `wss://127.0.0.1:${port}`, fingerprint: other.fingerprint, token }),
        (e: RemoteError) => {
          assert.equal(e.code, 'sidecar_tls');
          assert.ok(
            e.message.includes(`has SHA-256 fingerprint ${real.fingerprint}, not the pinned ${other.fingerprint}`),
            e.message,
          );
          assert.match(e.message, /nothing was sent/);
          assert.match(e.hint ?? '', new RegExp(`set agentkeep\\.sidecar\\.fingerprint to ${real.fingerprint}`));
          return true;
        },
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(Buffer.concat(received).length, 0, 'no byte (no HTTP upgrade, no token) reached the server');
      // the same listener with the right pin does get the upgrade request (so the check above can fail)
      await connectRemote({
        url: `wss://127.0.0.1:${port}`,
        fingerprint: real.fingerprint,
        token,
        connectTimeoutMs: 500,
      }).catch(() => undefined);
      assert.match(Buffer.concat(received).toString(), /^GET \/ HTTP\/1\.1[\s\S]*Authorization: Bearer remote-token/);
    } finally {
      server.close();
    }
  });

  it('refuses a non-loopback listen address without TLS, and serves it with TLS', async () => {
    const r = await runSidecar(['serve', '--ws', '0.0.0.0:0', '--token-file', tokenFile]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Refusing to listen on 0\.0\.0\.0 without TLS.*--tls-cert FILE --tls-key FILE/);
    const c = makeCert(tmp, 'any');
    const { url } = await serve(['--tls-cert', c.cert, '--tls-key', c.key], '0.0.0.0:0');
    assert.match(url, /^wss:\/\/0\.0\.0\.0:\d+$/);
    // half a pair, a wrong key, a file that is not PEM: one clear line each, nothing listens
    let bad = await runSidecar(['serve', '--ws', '127.0.0.1:0', '--token-file', tokenFile, '--tls-cert', c.cert]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--tls-cert needs --tls-key/);
    const o = makeCert(tmp, 'o');
    bad = await runSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--tls-cert',
      c.cert,
      '--tls-key',
      o.key,
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /The key .*o\.key does not belong to the certificate .*any\.crt/);
    bad = await runSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--tls-cert',
      tokenFile,
      '--tls-key',
      c.key,
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /is not a PEM certificate.*openssl req -x509/);
    // the files given exist (one is the token file): the openssl line writes new files, never over them
    assert.ok(!bad.stderr.includes(`-out ${tokenFile}`) && !bad.stderr.includes(`-keyout ${c.key}`), bad.stderr);
    assert.match(
      bad.stderr,
      /mkdir -p ~\/\.config\/agentkeep\/tls && openssl req -x509 .* -keyout ~\/\.config\/agentkeep\/tls\/key\.pem -out ~\/\.config\/agentkeep\/tls\/cert\.pem, then pass --tls-cert ~\/\.config\/agentkeep\/tls\/cert\.pem --tls-key ~\/\.config\/agentkeep\/tls\/key\.pem/,
    );
    const tokenBytes = await fs.readFile(tokenFile, 'utf8');
    bad = await runSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--tls-cert',
      tokenFile,
      '--tls-key',
      tokenFile,
    ]);
    assert.equal(bad.code, 1);
    assert.ok(!bad.stderr.includes(`-keyout ${tokenFile}`) && !bad.stderr.includes(`-out ${tokenFile}`), bad.stderr);
    assert.equal(await fs.readFile(tokenFile, 'utf8'), tokenBytes, 'the token file is untouched');
    // neither file exists: the pair goes into the names given
    const nc = path.join(path.dirname(tokenFile), 'new.crt');
    const nk = path.join(path.dirname(tokenFile), 'new.key');
    bad = await runSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--tls-cert',
      nc,
      '--tls-key',
      nk,
    ]);
    assert.equal(bad.code, 1);
    assert.ok(
      bad.stderr.includes(`does not exist. Make a pair: openssl req -x509`) &&
        bad.stderr.includes(`-keyout ${nk} -out ${nc}`),
      bad.stderr,
    );
    bad = await runSidecar(['serve', '--stdio', '--tls-cert', c.cert]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--tls-cert is only for serve --ws/);
  });

  it('refuses browser origins with 403 before the token is looked at; --allow-origin lets one in', async () => {
    const { url } = await serve([]);
    const auth = { Authorization: `Bearer ${token}` };
    assert.equal(await upgradeStatus(url, auth), 101, 'no Origin (the editor, the CLI): accepted');
    assert.equal(await upgradeStatus(url, { ...auth, Origin: 'https://evil.example' }), 403);
    assert.equal(await upgradeStatus(url, { ...auth, Origin: 'null' }), 403, 'a sandboxed page (Origin: null)');
    assert.equal(await upgradeStatus(url, { Origin: 'http://127.0.0.1:8080' }), 403, '403, not 401: nothing learnt');
    const allowed = await serve(['--allow-origin', 'http://127.0.0.1:8080']);
    assert.equal(await upgradeStatus(allowed.url, { ...auth, Origin: 'http://127.0.0.1:8080' }), 101);
    assert.equal(await upgradeStatus(allowed.url, { ...auth, Origin: 'http://127.0.0.1:8081' }), 403);
    // the editor link says what a 403 means
    await assert.rejects(
      new Promise((_res, rej) => {
        const ws = new WebSocket(url, { headers: { ...auth, Origin: 'https://evil.example' } });
        ws.on('unexpected-response', (_q, res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => rej(new Error(body)));
        });
      }),
      /browser origin https:\/\/evil\.example refused: a web page must not drive the sidecar/,
    );
  });

  it('the editor link: ws:// only to loopback, fingerprints in the usual spellings, bad URLs named', () => {
    assert.equal(parseRemoteUrl('ws://127.0.0.1:7357').secure, false);
    assert.equal(parseRemoteUrl('ws://localhost:7357/').href, 'ws://localhost:7357');
    assert.equal(parseRemoteUrl('ws://[::1]:7357').host, '::1');
    assert.equal(parseRemoteUrl('wss://pve.lan:7357').secure, true);
    assert.throws(
      () => parseRemoteUrl('ws://10.0.0.5:7357'),
      (e: RemoteError) =>
        e.code === 'bad_sidecar_url' &&
        /plain ws:\/\/ to 10\.0\.0\.5/.test(e.message) &&
        /wss:\/\/10\.0\.0\.5:7357.*ssh -N -L 7357:127\.0\.0\.1:7357 10\.0\.0\.5/.test(e.hint ?? ''),
    );
    assert.throws(() => parseRemoteUrl('http://127.0.0.1:7357'), /only ws: and wss:/);
    assert.throws(() => parseRemoteUrl('wss://me:pw@host:1'), /must not hold a user or password/);
    assert.throws(() => parseRemoteUrl('wss://host:1/x?y'), /has a path or query/);
    assert.throws(() => parseRemoteUrl('not a url'), /is not a URL/);
    const fp = 'AB:'.repeat(31) + 'AB';
    assert.equal(normaliseFingerprint('ab'.repeat(32)), fp);
    assert.equal(normaliseFingerprint(`SHA256 Fingerprint=${fp}`), fp);
    assert.throws(() => normaliseFingerprint('AB:CD'), /not a SHA-256 fingerprint/);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffMs(n, () => 0)),
      [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
    );
    assert.equal(
      backoffMs(1, () => 1),
      800,
    );
  });

  it('reconnects after the server restarts; the call in flight fails at once; calls during the wait fail fast', async () => {
    const first = startSidecar([
      'serve',
      '--ws',
      '127.0.0.1:0',
      '--token-file',
      tokenFile,
      '--state-dir',
      path.join(tmp, 'state'),
    ]);
    children.push(first);
    const url = (await waitForStderr(first, /listening on (ws:\/\/[^\s]+)\n/))[1];
    const states: LinkState[] = [];
    let conn: MessageConnection | undefined;
    let sessions = 0;
    const link = new RemoteLink(
      async () => ({ url, token, pingMs: 60000 }),
      async (ws) => {
        conn = rpc(ws);
        await conn.sendRequest('initialize', { processId: null, capabilities: {} });
        sessions++;
      },
      (s) => states.push(s),
      (attempt) => 200 * attempt, // short backoff for the test
    );
    try {
      await link.connect();
      assert.equal(link.state.kind, 'connected');
      const agent = path.join(tmp, 'agent');
      await fs.mkdir(agent, { recursive: true });
      // a call in flight when the server dies: a request whose answer never comes (the server is stopped
      // with SIGSTOP, then killed), which must fail when the socket drops, not hang
      first.kill('SIGSTOP');
      const pending = link.guard(
        conn!.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` }),
        'restorePoint.list',
      );
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      first.kill('SIGKILL');
      await assert.rejects(pending, (e: RemoteError) => {
        assert.equal(e.code, 'connection_lost');
        assert.match(
          e.message,
          new RegExp(`^Lost the connection to the remote sidecar at ${url} while waiting for restorePoint\\.list\\.$`),
        );
        assert.match(e.hint ?? '', /reconnects by itself/);
        return true;
      });
      assert.ok(Date.now() - t0 < 2000, `failed after ${Date.now() - t0} ms`);
      assert.equal(link.state.kind, 'reconnecting');
      // during the wait a caller gets the last error at once, with when the next try is
      const t1 = Date.now();
      await assert.rejects(link.connect(), /Reconnecting: try \d+ in \d+ s/);
      assert.ok(Date.now() - t1 < 100);
      // nothing listens for a while: the link keeps trying with growing delays
      await new Promise((r) => setTimeout(r, 900));
      const tries = states.filter((s) => s.kind === 'reconnecting') as Array<
        Extract<LinkState, { kind: 'reconnecting' }>
      >;
      assert.ok(tries.length >= 2, JSON.stringify(states.map((s) => s.kind)));
      assert.deepEqual(
        tries.slice(0, 3).map((s) => s.retryInMs),
        [200, 400, 600].slice(0, Math.min(3, tries.length)),
      );
      assert.equal(tries[1]!.error.code, 'sidecar_unreachable');
      assert.match(tries[1]!.error.message, /connection refused/);
      // the server comes back on the same port with the same state dir
      const port = new URL(url).port;
      const second = startSidecar([
        'serve',
        '--ws',
        `127.0.0.1:${port}`,
        '--token-file',
        tokenFile,
        '--state-dir',
        path.join(tmp, 'state'),
      ]);
      children.push(second);
      await waitForStderr(second, /listening on/);
      const deadline = Date.now() + 10000;
      const kind = (): string => link.state.kind; // read afresh (the link changes it from its timers)
      while (kind() !== 'connected' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(kind(), 'connected', JSON.stringify(link.state));
      assert.equal(sessions, 2, 'a new session on the new socket');
      assert.deepEqual(
        await link.guard(conn!.sendRequest('agentkeep/restorePoint.list', { target: `dir:${agent}` }), 'list'),
        [],
      );
    } finally {
      link.close();
    }
  });

  it('the TLS pair hint and docs/remote.md agree on where a pair goes and how it is made; the hint never names a file that exists', async () => {
    // docs/remote.md makes the pair where the hint does, with the hint's openssl options
    const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'remote.md'), 'utf8');
    const block = /### 2b\.[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)![1].replace(/\\\n\s*/g, '');
    assert.match(block, new RegExp(`mkdir -p ${TLS_DIR}\\n`));
    assert.ok(block.includes(`-keyout ${TLS_DIR}/key.pem -out ${TLS_DIR}/cert.pem`), block);
    assert.ok(block.includes(`--tls-cert ${TLS_DIR}/cert.pem --tls-key ${TLS_DIR}/key.pem`), block);
    const options = tlsOpensslCommand('C', 'K').split(' -addext')[0];
    assert.ok(block.includes(options), `docs use the hint's ${options}`);
    // the hint: the files given when neither exists (mkdir first when their folder is missing) ...
    const home = path.join(tmp, 'home');
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const fresh = tlsPairHint(path.join(tmp, 'new', 'c.pem'), path.join(tmp, 'new', 'k.pem'));
      assert.ok(fresh.startsWith(`Make a pair: mkdir -p ${path.join(tmp, 'new')} && openssl req -x509`), fresh);
      // ... else new files in TLS_DIR, and never over a pair that is there already
      const tls = path.join(home, '.config', 'agentkeep', 'tls');
      assert.match(
        tlsPairHint(tokenFile, tokenFile),
        new RegExp(`mkdir -p ${TLS_DIR} && .*-keyout ${TLS_DIR}/key\\.pem -out ${TLS_DIR}/cert\\.pem`),
      );
      await fs.mkdir(tls, { recursive: true });
      await fs.writeFile(path.join(tls, 'cert.pem'), 'old');
      await fs.writeFile(path.join(tls, 'key.pem'), 'old');
      const again = tlsPairHint(path.join(tls, 'cert.pem'), path.join(tls, 'key.pem'));
      assert.ok(!again.includes('mkdir'), again);
      assert.ok(again.includes(`-keyout ${TLS_DIR}/key-2.pem -out ${TLS_DIR}/cert-2.pem`), again);
      assert.ok(again.endsWith(`then pass --tls-cert ${TLS_DIR}/cert-2.pem --tls-key ${TLS_DIR}/key-2.pem.`), again);
      assert.match(
        again,
        /-addext "subjectAltName=DNS:\$\(hostname\),IP:<address>"/,
        'quoted: <address> is no redirection',
      );
    } finally {
      process.env.HOME = saved;
    }
  });

  it('package.json: the sidecar URL and fingerprint are restricted in untrusted workspaces; no setting holds the token', () => {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations;
    const props = Object.keys(pkg.contributes.configuration.properties as Record<string, unknown>);
    const sidecar = props.filter((k) => k.startsWith('agentkeep.sidecar.')).sort();
    assert.deepEqual(sidecar, ['agentkeep.sidecar.fingerprint', 'agentkeep.sidecar.url']);
    for (const k of sidecar) assert.ok(restricted.includes(k), `${k} is a restricted configuration`);
    assert.ok(!props.some((k) => /token|secret|password/i.test(k)), 'no setting holds a credential');
    const commands = (pkg.contributes.commands as Array<{ command: string; title: string }>).map((c) => c.title);
    for (const t of ['Set Remote Sidecar Token', 'Clear Remote Sidecar Token', 'Reconnect to Remote Sidecar'])
      assert.ok(commands.includes(t), t);
    // the editor refuses a token the server would refuse
    assert.equal(MIN_REMOTE_TOKEN_CHARS, MIN_TOKEN_CHARS);
  });

  it('a missing token or a settings problem is not retried; it names the fix', async () => {
    const states: LinkState[] = [];
    const link = new RemoteLink(
      async () => ({ url: 'ws://127.0.0.1:9', token: undefined }),
      async () => undefined,
      (s) => states.push(s),
    );
    await assert.rejects(
      link.connect(),
      (e: RemoteError) => e.code === 'no_sidecar_token' && /Set Remote Sidecar Token/.test(e.hint ?? ''),
    );
    assert.equal(link.state.kind, 'failed');
    await assert.rejects(link.connect(), /No token/);
    assert.deepEqual(
      states.map((s) => s.kind),
      ['connecting', 'failed'],
      'the second call did not try again',
    );
    link.close();
    await assert.rejects(
      connectRemote({ url: 'ws://127.0.0.1:9', fingerprint: 'AB:'.repeat(31) + 'AB', token }),
      /fingerprint is set, but agentkeep\.sidecar\.url is ws:\/\//,
    );
  });
});
