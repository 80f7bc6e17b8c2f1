/**
 * The shell hook's hand-off (sidecar/hooks/handoff.ts, handoffServer.ts): out/hook.js, run as Hermes
 * runs it (argv, the call's JSON on stdin), hands a risky call to a running `agentkeep mcp` of the same
 * state dir (a real server through the MCP SDK's client), whose change journal (real inotify) makes
 * the restore point: the same tree as the CLI's full walk, paired with its post; a fail-closed agent's
 * block JSON comes back as the hook alone would print it. Without a server, a folder others may enter,
 * with a socket of a process that is gone, a server that closes without answering, never accepts the
 * call (stuck) or accepts and never answers, the hook does the work itself, within its budget, exit code 0.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { handOff, MAX_SOCKET_PATH_BYTES } from '../../sidecar/hooks/handoff';
import { listenHookHandoff } from '../../sidecar/hooks/handoffServer';
import { readManifest } from '../../sidecar/machine/dir/manifest';
import { buildHook, cliRunner, HOOK, SIDECAR, startSidecar, type RunResult } from './helpers/sidecar';

/** Hermes' JSON for a terminal call. */
function payload(event: 'pre' | 'post', command: string, id: string): string {
  return JSON.stringify({
    hook_event_name: event === 'pre' ? 'pre_tool_call' : 'post_tool_call',
    tool_name: 'terminal',
    tool_input: { command },
    session_id: 'sess_1',
    cwd: '/tmp',
    extra: { tool_call_id: id },
  });
}

describe('shell hook hand-off to a running sidecar (agentkeep mcp, serve)', function () {
  this.timeout(120000);
  let tmp: string;
  let machine: string;
  let state: string;
  let client: Client | undefined;
  let notes: string;
  const { ak, json } = cliRunner(() => state);

  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-handoff-'));
    machine = path.join(tmp, 'machine');
    state = path.join(tmp, 'state');
    for (let i = 0; i < 30; i++) {
      await fs.mkdir(path.join(machine, `d${i % 3}`), { recursive: true });
      await fs.writeFile(path.join(machine, `d${i % 3}`, `f${i}.txt`), `file ${i}\n`);
    }
    notes = '';
  });
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const handoffDir = (): string => path.join(state, 'hooks', 'handoff');
  /** `agentkeep mcp` for the machine, AGENTKEEP_DEBUG notes collected; resolves once its socket listens. */
  const startServer = async (env: Record<string, string> = {}): Promise<void> => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SIDECAR, '--state-dir', state, 'mcp', '--target', `dir:${machine}`],
      env: { ...getDefaultEnvironment(), AGENTKEEP_DEBUG: '1', ...env },
      stderr: 'pipe',
    });
    transport.stderr!.on('data', (d: Buffer) => (notes += d.toString()));
    client = new Client({ name: 'agentkeep-test', version: '1.0.0' });
    await client.connect(transport);
    for (let i = 0; i < 100 && !/hook hand-off on /.test(notes); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(notes, /agentkeep mcp: hook hand-off on .*\/hooks\/handoff\/\d+\.sock/);
  };
  const scans = (): string[] =>
    [...notes.matchAll(/^agentkeep dir .*?: ((?:journal|full walk): .*)$/gm)].map((m) => m[1]);
  /** out/hook.js as Hermes runs it; resolves with exit code, output and how long it took. */
  const hook = (
    stdin: string,
    env: NodeJS.ProcessEnv = {},
    args = ['--target', `dir:${machine}`],
  ): Promise<RunResult & { ms: number }> =>
    new Promise((resolve, reject) => {
      const t0 = Date.now();
      const child = spawn(process.execPath, [HOOK, 'hook', 'run', 'hermes', ...args, '--state-dir', state], {
        env: { ...process.env, AGENTKEEP_DEBUG: '1', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
      child.stdin.end(stdin);
    });
  const preId = (r: RunResult): string => {
    const m = /agentkeep: restore point (ak_\w+) before terminal/.exec(r.stderr);
    assert.ok(m, `a pre restore point: ${r.stderr}`);
    return m[1];
  };
  const rootTree = async (id: string): Promise<string> => {
    const dir = path.join(state, 'dir');
    const [key] = await fs.readdir(dir);
    const m = await readManifest(path.join(dir, key, `${id}.json`));
    assert.ok(m?.tree, `manifest of ${id}`);
    return m.tree;
  };

  it('the running server takes the pre and post through its change journal: the same tree as a full walk, paired', async () => {
    await startServer();
    const first = await client!.callTool({ name: 'restore_point_create', arguments: { reason: 'first' } });
    assert.ok(!first.isError);
    assert.deepEqual(scans(), ['full walk: journal starting']);

    await fs.appendFile(path.join(machine, 'd0', 'f0.txt'), 'edited\n');
    await fs.writeFile(path.join(machine, 'd1', 'new.txt'), 'new\n');
    const pre = await hook(payload('pre', 'pip install requests', 'call_1'));
    assert.equal(pre.code, 0);
    assert.equal(pre.stdout, '');
    assert.match(pre.stderr, /hand-off: answered by the running sidecar/);
    const id = preId(pre);
    assert.match(scans()[1] ?? '', /^journal: /, `the server's journal made it: ${scans().join(' | ')}`);
    const full = (await json('restore-point', 'create', '--target', `dir:${machine}`)).id;
    assert.equal(await rootTree(id), await rootTree(full), 'journal create = full walk');

    const post = await hook(payload('post', 'pip install requests', 'call_1'));
    assert.match(post.stderr, /hand-off: answered by the running sidecar/);
    assert.match(post.stderr, new RegExp(`restore point ak_\\w+ after terminal \\(pair of ${id}\\)`));
    const points = await json('restore-point', 'list', '--target', `dir:${machine}`);
    const p = points.find((x: any) => x.pairOf === id);
    assert.ok(p, 'the post is paired with the pre');
    assert.equal(p.reason.origin, 'hook');
    assert.match(p.reason.text, /by the agent agent in session sess_1 \(terminal\): pip install requests/);

    // a request read after its acceptBy (the hook gave up on it) is dropped unrun
    const before = (await json('restore-point', 'list', '--target', `dir:${machine}`)).length;
    const [sock] = await fs.readdir(handoffDir());
    const late = await new Promise<string>((resolve, reject) => {
      const c = net.createConnection(path.join(handoffDir(), sock));
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      c.on('error', reject);
      c.on('close', () => resolve(got));
      c.write(
        `${JSON.stringify({
          v: 1,
          argv: ['hook', 'run', 'hermes', '--target', `dir:${machine}`],
          stdin: payload('pre', 'pip install late', 'call_late'),
          env: {},
          budgetMs: 5000,
          acceptBy: Date.now() - 1,
        })}\n`,
      );
    });
    assert.equal(late, '', 'no accept, no answer');
    assert.equal((await json('restore-point', 'list', '--target', `dir:${machine}`)).length, before, 'not run');

    // a fail-closed agent whose restore point cannot be taken (its target is gone): the server's answer
    // is the block JSON on stdout, as the hook alone would print it
    assert.equal((await ak('agent', 'add', 'strict', '--target', `dir:${machine}`)).code, 0);
    assert.equal((await ak('hook', 'settings', '--agent', 'strict', '--fail-closed')).code, 0);
    const gone = await hook(payload('pre', 'pip install requests', 'call_9'), {}, [
      '--agent',
      'strict',
      '--target',
      `dir:${path.join(tmp, 'gone')}`,
    ]);
    assert.equal(gone.code, 0);
    assert.match(gone.stderr, /hand-off: answered by the running sidecar/);
    const block = JSON.parse(gone.stdout);
    assert.equal(block.decision, 'block');
    assert.match(block.reason, /agent strict is set to fail closed, so the call was blocked and nothing ran/);

    // AGENTKEEP_HOOK_HANDOFF=0: the hook does it itself although the server runs
    const own = await hook(payload('pre', 'pip install numpy', 'call_3'), { AGENTKEEP_HOOK_HANDOFF: '0' });
    assert.doesNotMatch(own.stderr, /hand-off/);
    assert.match(own.stderr, /full walk: no change journal in this process/);
    preId(own);

    // the server gone (stdin closed): its socket is removed and the hook does the work itself
    await client!.close();
    client = undefined;
    assert.deepEqual(await fs.readdir(handoffDir()), [], 'the socket was removed');
    const alone = await hook(payload('pre', 'pip install torch', 'call_2'));
    assert.match(alone.stderr, /hand-off: no server/);
    preId(alone);
  });

  it('a socket of a process that is gone is removed; the hook takes the restore point itself', async () => {
    await fs.mkdir(handoffDir(), { recursive: true, mode: 0o700 });
    // a pid that cannot be alive (above the kernel's pid_max of 4194304)
    await fs.writeFile(path.join(handoffDir(), '99999999.sock'), '');
    const r = await hook(payload('pre', 'pip install requests', 'call_1'));
    assert.equal(r.code, 0);
    assert.match(r.stderr, /99999999\.sock: its process is gone \(removed\)/);
    preId(r);
    assert.deepEqual(await fs.readdir(handoffDir()), []);
  });

  it('a folder others may enter, a server that closes without answering, never accepts, or accepts and never answers: the hook does it itself, within its budget', async () => {
    await fs.mkdir(handoffDir(), { recursive: true, mode: 0o700 });
    // this test process stands for a live server with a broken or hung hand-off
    const sock = path.join(handoffDir(), `${process.pid}.sock`);
    let mode: 'close' | 'hang' | 'accept' = 'close';
    const held: net.Socket[] = [];
    const srv = net.createServer((c) => {
      held.push(c);
      c.on('error', () => undefined);
      if (mode === 'close') c.end();
      if (mode === 'accept') c.once('data', () => c.write(`${JSON.stringify({ v: 1, accepted: true })}\n`));
    });
    await new Promise<void>((r) => srv.listen(sock, () => r()));
    try {
      // a folder others may enter: its socket could be anyone's, so the hook does not ask
      await fs.chmod(handoffDir(), 0o755);
      const open = await hook(payload('pre', 'pip install requests', 'call_0'));
      assert.match(open.stderr, /hooks\/handoff is not a folder of this user's only/);
      preId(open);
      await fs.chmod(handoffDir(), 0o700);

      const closed = await hook(payload('pre', 'pip install requests', 'call_1'));
      assert.equal(closed.code, 0);
      assert.match(closed.stderr, /the server closed the connection without an answer/);
      preId(closed);

      // stuck before it accepts (its event loop busy): the hook gives it 1 s, then does it itself
      mode = 'hang';
      const budget = 4000;
      const stuck = await hook(payload('pre', 'pip install flask', 'call_2'), {
        AGENTKEEP_HOOK_BUDGET_MS: String(budget),
      });
      assert.equal(stuck.code, 0);
      assert.match(stuck.stderr, /not accepted within 1000 ms/);
      preId(stuck);
      assert.ok(stuck.ms < budget, `answered in ${stuck.ms} ms (budget ${budget} ms)`);

      // accepted, then no answer: the hook waits its budget less 0.5 s, then has 0.5 s of its own
      mode = 'accept';
      const hung = await hook(payload('pre', 'pip install django', 'call_3'), {
        AGENTKEEP_HOOK_BUDGET_MS: String(budget),
      });
      assert.equal(hung.code, 0);
      assert.equal(hung.stdout, '');
      assert.match(hung.stderr, /no answer within 3[45]\d\d ms/);
      assert.match(hung.stderr, /agentkeep: (restore point ak_\w+ before terminal|warning: no pre restore point)/);
      assert.ok(hung.ms < budget + 3000, `answered in ${hung.ms} ms (budget ${budget} ms)`);
    } finally {
      for (const c of held) c.destroy();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it('agentkeep serve takes handed-off calls too, and removes its socket when it ends', async () => {
    const serve = startSidecar(['--state-dir', state, 'serve', '--stdio'], { AGENTKEEP_DEBUG: '1' });
    let err = '';
    serve.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => serve.on('exit', (code) => r(code)));
    try {
      for (let i = 0; i < 100 && !(await fs.readdir(handoffDir()).catch(() => [])).length; i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(await fs.readdir(handoffDir()), [`${serve.pid}.sock`]);
      const a = await hook(payload('pre', 'pip install requests', 'call_1'));
      assert.match(a.stderr, /hand-off: answered by the running sidecar/);
      preId(a);
      await fs.writeFile(path.join(machine, 'd2', 'new.txt'), 'new\n');
      const b = await hook(payload('pre', 'pip install flask', 'call_2'));
      assert.match(b.stderr, /hand-off: answered by the running sidecar/);
      const id = preId(b);
      const scansOf = [...err.matchAll(/^agentkeep dir .*?: ((?:journal|full walk): .*)$/gm)].map((m) => m[1]);
      assert.equal(scansOf.length, 2, err);
      assert.match(scansOf[0], /^full walk: journal starting/);
      assert.match(scansOf[1], /^journal: /, `the second used serve's journal: ${scansOf.join(' | ')}`);
      const full = (await json('restore-point', 'create', '--target', `dir:${machine}`)).id;
      assert.equal(await rootTree(id), await rootTree(full), 'journal create = full walk');
    } finally {
      serve.stdin!.end();
      await exited;
    }
    assert.deepEqual(await fs.readdir(handoffDir()), [], 'serve removed its socket');
  });

  it('a state dir moved while its server runs: the server refuses the call (its own is gone), the hook does it itself in the moved one, the old path is not made again', async () => {
    await startServer();
    const old = state;
    state = path.join(tmp, 'moved');
    await fs.rename(old, state);
    const r = await hook(payload('pre', 'pip install requests', 'call_1'));
    assert.equal(r.code, 0);
    assert.match(r.stderr, /the server did not accept the call: the server's state dir .*\/state is gone/);
    assert.doesNotMatch(r.stderr, /answered by the running sidecar/);
    const id = preId(r);
    assert.ok(await rootTree(id), 'the restore point is in the moved state dir');
    await assert.rejects(fs.stat(old), /ENOENT/, 'the old state dir was not made again');
  });

  it("a symbolic link in a state dir's hand-off folder to another state dir's server socket is skipped; a hard link is refused by the server", async () => {
    await startServer();
    const [name] = await fs.readdir(handoffDir());
    const serverSock = path.join(handoffDir(), name);
    const serverState = state;
    state = path.join(tmp, 'other');
    await fs.mkdir(handoffDir(), { recursive: true, mode: 0o700 });
    await fs.chmod(state, 0o700);
    await fs.chmod(path.join(state, 'hooks'), 0o700);
    await fs.symlink(serverSock, path.join(handoffDir(), name));
    const r = await hook(payload('pre', 'pip install requests', 'call_1'));
    assert.equal(r.code, 0);
    assert.match(r.stderr, new RegExp(`${name}: not a socket of this user \\(skipped\\)`));
    preId(r);
    await fs.rm(path.join(handoffDir(), name));
    // a hard link is a socket of this user: the server itself sees the state dir is not its own
    await fs.link(serverSock, path.join(handoffDir(), name));
    const h = await hook(payload('pre', 'pip install flask', 'call_2'));
    assert.match(h.stderr, /the server did not accept the call: the server's state dir .* is not the hook's .*\/other/);
    preId(h);
    await assert.rejects(
      fs.readdir(path.join(serverState, 'hooks', 'pending')),
      /ENOENT/,
      "nothing pending in the server's",
    );
  });

  it('a socket path too long for a Unix socket address: no hand-off server (one debug note, nothing made), and the hook skips such a socket', async () => {
    const long = path.join(tmp, 'x'.repeat(120), 'state');
    const logged: string[] = [];
    const before = process.env.AGENTKEEP_DEBUG;
    process.env.AGENTKEEP_DEBUG = '1';
    try {
      const srv = await listenHookHandoff(long, new Map(), (m) => logged.push(m));
      assert.equal(srv, undefined);
    } finally {
      if (before === undefined) delete process.env.AGENTKEEP_DEBUG;
      else process.env.AGENTKEEP_DEBUG = before;
    }
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0], new RegExp(`longer than a Unix socket address holds \\(${MAX_SOCKET_PATH_BYTES} bytes\\)`));
    await assert.rejects(fs.stat(long), /ENOENT/, 'nothing was made');
    assert.deepEqual((await fs.readdir(tmp)).sort(), ['machine'], 'no socket outside the state dir (a cut-short path)');
    // the client: an entry of a live process with such a path is not connected to
    const dir = path.join(long, 'hooks', 'handoff');
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.writeFile(path.join(dir, `${process.pid}.sock`), '');
    const h = await handOff(long, { argv: ['hook', 'run', 'hermes'], stdin: '{}', env: {}, budgetMs: 1000 }, 1500);
    assert.equal(h.answer, undefined);
    assert.match(h.why.join('; '), /its path is longer than a socket address holds/);
  });

  it('a server that took the call, made the pre restore point and ended before answering: the hook reuses that restore point, one per call', async () => {
    await fs.mkdir(handoffDir(), { recursive: true, mode: 0o700 });
    const sock = path.join(handoffDir(), `${process.pid}.sock`);
    const stdin = payload('pre', 'pip install requests', 'call_1');
    let made: string | undefined;
    // this test process stands for the server: it accepts, the real hook (hand-off off) does the work, then it dies
    const srv = net.createServer((c) => {
      c.on('error', () => undefined);
      c.once('data', () => {
        c.write(`${JSON.stringify({ v: 1, accepted: true })}\n`);
        void hook(stdin, { AGENTKEEP_HOOK_HANDOFF: '0' }).then((r) => {
          made = preId(r);
          c.destroy();
        });
      });
    });
    await new Promise<void>((r) => srv.listen(sock, () => r()));
    try {
      const r = await hook(stdin);
      assert.equal(r.code, 0);
      assert.ok(made, 'the stand-in server made a pre restore point');
      assert.match(r.stderr, /the server closed the connection without an answer/);
      assert.match(
        r.stderr,
        new RegExp(
          `restore point ${made} before terminal: pip install requests \\(made by the running sidecar, which did not answer\\)`,
        ),
      );
      const list = (await json('restore-point', 'list', '--target', `dir:${machine}`)) as
        { id: string }[] | { restorePoints: { id: string }[] };
      const ids = (Array.isArray(list) ? list : list.restorePoints).map((p) => p.id);
      assert.deepEqual(ids, [made], 'one restore point for the call');
      // its post pairs with it as usual
      const post = await hook(payload('post', 'pip install requests', 'call_1'), { AGENTKEEP_HOOK_HANDOFF: '0' });
      assert.match(post.stderr, new RegExp(`after terminal \\(pair of ${made}\\)`));
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it("a handed-off Hermes memory call with no HERMES_HOME records the hook's ~/.hermes (its HOME), not the server's", async () => {
    const home = path.join(tmp, 'home');
    const serverHome = path.join(tmp, 'serverhome');
    for (const h of [home, serverHome]) {
      await fs.mkdir(path.join(h, '.hermes', 'memories'), { recursive: true });
      await fs.writeFile(path.join(h, '.hermes', 'memories', 'MEMORY.md'), `memory of ${h}`);
    }
    await startServer({ HOME: serverHome });
    const mp = (ev: string): string =>
      JSON.stringify({
        hook_event_name: ev,
        tool_name: 'memory',
        tool_input: { action: 'add', target: 'memory', content: 'fact' },
        session_id: 's',
        extra: { tool_call_id: 'm1' },
      });
    const env = { HOME: home, HERMES_HOME: '' };
    const a = await hook(mp('pre_tool_call'), env);
    assert.match(a.stderr, /answered by the running sidecar/);
    await fs.appendFile(path.join(home, '.hermes', 'memories', 'MEMORY.md'), '\n§\nfact');
    const b = await hook(mp('post_tool_call'), env);
    assert.match(b.stderr, /answered by the running sidecar/);
    assert.doesNotMatch(b.stderr, /no pre_tool_call record/);
    const dir = path.join(state, 'memory-backups');
    const lines: { file: string; after: string }[] = [];
    for (const sub of await fs.readdir(dir)) {
      const f = path.join(dir, sub, 'writes.jsonl');
      const text = await fs.readFile(f, 'utf8').catch(() => '');
      for (const l of text.trim().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as { file: string; after: string });
    }
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].file, path.join(home, '.hermes', 'memories', 'MEMORY.md'));
    assert.match(lines[0].after, /fact$/);
  });

  it('a relative --target is not handed off (a server would resolve it against its own folder): the hook names the path from its own', async () => {
    await startServer();
    const rel = path.relative(tmp, machine);
    const r = await new Promise<RunResult>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [HOOK, 'hook', 'run', 'hermes', '--target', `dir:${rel}`, '--state-dir', state],
        { env: { ...process.env, AGENTKEEP_DEBUG: '1' }, stdio: ['pipe', 'pipe', 'pipe'], cwd: tmp },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(payload('pre', 'pip install requests', 'call_1'));
    });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /hand-off: a relative --target or --store path \(not handed off\)/);
    assert.match(
      r.stderr,
      new RegExp(`Use an absolute path: dir:${machine.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.`),
    );
  });
});
