/**
 * The launcher's slim `restore-point create` (issue 14, peak memory): the command lines
 * sidecar/cli/slimCreate.ts picks run out/create.js (sidecar/createMain.ts) instead of the full CLI.
 * Real processes on real trees: which bundle each command line loads (a preload records the out/*.js
 * modules in require.cache and the stat workers started), the same output and errors as the full CLI
 * (AGENTKEEP_SLIM_CREATE=0 sends the same command line there), stores captured through the slim path,
 * and the bundle without the Proxmox backend, ssh2, commander or the servers.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { slimCreateArgs } from '../../sidecar/cli/slimCreate';
import { buildSidecar, SIDECAR, type RunResult } from './helpers/sidecar';
import { FIXTURES, REPO } from './helpers/paths';

const PRELOAD = `
const fs = require('node:fs');
const wt = require('node:worker_threads');
let workers = 0;
const W = wt.Worker;
wt.Worker = function (...a) { workers++; return new W(...a); };
process.on('exit', () => {
  const out = Object.keys(require.cache).filter((f) => /[\\\\/]out[\\\\/][^\\\\/]+\\.js$/.test(f)).map((f) => f.split(/[\\\\/]/).pop());
  fs.writeFileSync(process.env.SLIM_TEST_RECORD, JSON.stringify({ loaded: out.sort(), workers }));
});
`;

interface Run extends RunResult {
  loaded: string[];
  workers: number;
}

describe('slim restore-point create (out/create.js; issue 14)', function () {
  this.timeout(120_000);
  let tmp: string;
  let agent: string;
  let state: string;
  let preload: string;

  /** Run out/sidecar.js with the preload; `slim` false sets AGENTKEEP_SLIM_CREATE=0 (the full CLI). */
  const ak = (args: string[], slim = true, env: NodeJS.ProcessEnv = {}): Promise<Run> =>
    new Promise((resolve, reject) => {
      const record = path.join(tmp, `record-${Math.random().toString(36).slice(2)}.json`);
      const c = spawn(process.execPath, ['-r', preload, SIDECAR, ...args], {
        env: {
          ...process.env,
          AGENTKEEP_CODE_CACHE_DIR: path.join(tmp, 'cache'),
          AGENTKEEP_SLIM_CREATE: slim ? '' : '0',
          SLIM_TEST_RECORD: record,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      c.on('error', reject);
      c.on('close', (code) => {
        fs.readFile(record, 'utf8').then(
          (t) => resolve({ code, stdout, stderr, ...(JSON.parse(t) as { loaded: string[]; workers: number }) }),
          reject,
        );
      });
    });

  before(async () => {
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-slim-'));
    agent = path.join(tmp, 'agent');
    state = path.join(tmp, 'state');
    preload = path.join(tmp, 'preload.cjs');
    await fs.writeFile(preload, PRELOAD);
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    for (const f of ['MEMORY.md', 'USER.md'])
      await fs.copyFile(path.join(FIXTURES, 'memory/hermes/memories', f), path.join(agent, 'memories', f));
    await fs.writeFile(path.join(agent, 'config.yaml'), 'memory:\n  memory_char_limit: 2200\n');
    await fs.writeFile(path.join(agent, 'notes.txt'), 'hello\n');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('picks only plain creates of dir: targets with stores on this machine', () => {
    const env = {};
    const base = ['restore-point', 'create', '--target', 'dir:/srv/a'];
    assert.deepEqual(slimCreateArgs(base, env), {
      target: 'dir:/srv/a',
      kind: 'manual',
      stores: [],
      important: false,
      reuse: false,
      json: false,
    });
    assert.deepEqual(
      slimCreateArgs(
        [
          '--state-dir=/s',
          'restore-point',
          'create',
          '--json',
          '--store',
          'hermes:/h',
          '--target=dir:/srv/a',
          '--store=mem0:/m',
          '--label',
          'before x',
          '--kind',
          'config-edit',
          '--important',
          '--reuse',
        ],
        env,
      ),
      {
        stateDir: '/s',
        target: 'dir:/srv/a',
        label: 'before x',
        kind: 'config-edit',
        stores: ['hermes:/h', 'mem0:/m'],
        important: true,
        reuse: true,
        json: true,
      },
    );
    assert.deepEqual(slimCreateArgs(['restore-point', 'create', '--agent', 'a1'], env)?.agent, 'a1');
    assert.ok(slimCreateArgs(['restore-point', 'create'], env), 'the default agent: resolved by the slim create');
    for (const argv of [
      [...base, '--help'],
      [...base, '--vmstate'],
      [...base, '--bogus'],
      [...base, '--json', '--json'],
      [...base, '--label', 'a', '--label', 'b'],
      [...base, '--label', '-x'],
      [...base, '--label', ''],
      [...base, '--kind', 'pre'],
      [...base, '--store'],
      [...base, '--store', 'hermes:ssh://root@h/root/.hermes'],
      [...base, '--store', 'hermes:qga:/run/q.sock:/root/.hermes'],
      [...base, '--store', 'hermes:pve-agent://pve/n/101/root/.hermes'],
      [...base, '--', 'x'],
      ['restore-point', 'create', '--target', 'proxmox://pve/n/qemu/101'],
      ['restore-point', 'create', '--target', 'btrfs:/srv/a'],
      ['restore-point', 'list', '--target', 'dir:/srv/a'],
      ['--state-dir', 'restore-point', 'create', '--target', 'dir:/srv/a'],
      ['restore-point', 'create', '--target', 'dir:/srv/a', 'extra'],
    ])
      assert.equal(slimCreateArgs(argv, env), undefined, argv.join(' '));
    assert.equal(slimCreateArgs(base, { AGENTKEEP_PLUGINS: '/x.js' }), undefined, 'plugins: the full CLI');
    assert.equal(slimCreateArgs(base, { AGENTKEEP_SLIM_CREATE: '0' }), undefined, 'turned off');
    assert.equal(slimCreateArgs(base, { AGENTKEEP_SLIM_CREATE: 'off' }), undefined, 'turned off');
    assert.ok(slimCreateArgs(base, { AGENTKEEP_SLIM_CREATE: '1' }));
  });

  it('the bundle leaves out the Proxmox backend, ssh2, commander, the dispatch table and the servers', async () => {
    const code = await fs.readFile(path.join(REPO, 'out', 'create.js'), 'utf8');
    const full = await fs.readFile(path.join(REPO, 'out', 'cli.js'), 'utf8');
    for (const heavy of [
      'ProxmoxBackend = class',
      'PveClient',
      'ssh-userauth',
      'CommanderError',
      'McpServer',
      'ResponseError',
    ])
      assert.ok(
        !code.includes(heavy) && full.includes(heavy),
        `out/create.js bundles ${heavy} (or out/cli.js lost it)`,
      );
    assert.ok(code.length < full.length / 2, `out/create.js is ${code.length} bytes, out/cli.js ${full.length}`);
  });

  it('a create runs in out/create.js (not out/cli.js) and prints what the full CLI prints, the store captured', async () => {
    const args = ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}`, '--label', 'l1'];
    const slim = await ak([...args, '--json']);
    assert.equal(slim.code, 0, slim.stderr);
    assert.deepEqual(slim.loaded, ['create.js', 'sidecar.js']);
    const full = await ak([...args, '--json'], false);
    assert.equal(full.code, 0, full.stderr);
    assert.deepEqual(full.loaded, ['cli.js', 'sidecar.js']);
    const a = JSON.parse(slim.stdout) as Record<string, unknown>;
    const b = JSON.parse(full.stdout) as Record<string, unknown>;
    const stable = (r: Record<string, unknown>): string =>
      JSON.stringify(r, (k, v: unknown) =>
        ['id', 'createdAt', 'label', 'durationMs', 'newBytes'].includes(k) ? 0 : v,
      );
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    assert.equal(stable(a).replace(/"ak_[^"]+"/g, '""'), stable(b).replace(/"ak_[^"]+"/g, '""'));
    // the Hermes home found in the target, captured by both
    assert.match(JSON.stringify(a), /hermes:/);
    // an explicit --store, human output
    const h = await ak([...args, '--store', `hermes:${agent}`]);
    assert.equal(h.code, 0, h.stderr);
    assert.deepEqual(h.loaded, ['create.js', 'sidecar.js']);
    assert.match(h.stdout, /^Created restore point ak_\S+ "l1": /);
    const list = await ak(['--state-dir', state, 'restore-point', 'list', '--target', `dir:${agent}`, '--json']);
    const rps = JSON.parse(list.stdout) as { id: string; agentState?: unknown[] }[];
    assert.equal(rps.length, 3);
    assert.ok(
      rps.every((r) => JSON.stringify(r).includes(`hermes:${agent}`)),
      'every restore point holds the store',
    );
  });

  it('errors: the same message, JSON and exit code as the full CLI; a bad command line gets the full CLI', async () => {
    const cases: string[][] = [
      ['--state-dir', 'rel', 'restore-point', 'create', '--target', `dir:${agent}`, '--json'],
      ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}/missing`, '--json'],
      ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}`, '--store', 'nope:/x'],
      ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}`, '--store', `hermes:${tmp}/none`],
      ['--state-dir', state, 'restore-point', 'create', '--json'],
      ['--state-dir', state, 'restore-point', 'create', '--agent', 'nobody', '--json'],
    ];
    for (const c of cases) {
      const slim = await ak(c);
      const full = await ak(c, false);
      assert.deepEqual(slim.loaded, ['create.js', 'sidecar.js'], c.join(' '));
      assert.deepEqual(
        { code: slim.code, stdout: slim.stdout, stderr: slim.stderr },
        { code: full.code, stdout: full.stdout, stderr: full.stderr },
        c.join(' '),
      );
      assert.notEqual(slim.code, 0, c.join(' '));
    }
    const bad = await ak(['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}`, '--bogus']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown option '--bogus'/);
    assert.deepEqual(bad.loaded, ['cli.js', 'sidecar.js']);
  });

  it('a named agent with a store on another machine is handed to the full CLI before anything is done', async () => {
    await fs.mkdir(state, { recursive: true });
    await fs.writeFile(
      path.join(state, 'config.json'),
      JSON.stringify({
        agents: { far: { target: `dir:${agent}`, stores: ['hermes:ssh://nobody@127.0.0.1:1/root/.hermes'] } },
      }),
    );
    const r = await ak(['--state-dir', state, 'restore-point', 'create', '--agent', 'far', '--json'], true, {
      AGENTKEEP_SSH_TIMEOUT_MS: '2000',
    });
    // both bundles: the slim one resolved the agent, the full one ran the create (and failed to reach the store)
    assert.deepEqual(r.loaded, ['cli.js', 'create.js', 'sidecar.js']);
    assert.doesNotMatch(r.stderr, /not in the slim create/);
    // the only agent, with its stores on this machine: the slim create takes its target and stores
    await fs.writeFile(
      path.join(state, 'config.json'),
      JSON.stringify({ agents: { near: { target: `dir:${agent}`, stores: [`hermes:${agent}`] } } }),
    );
    const near = await ak(['--state-dir', state, 'restore-point', 'create', '--json']);
    assert.equal(near.code, 0, near.stderr);
    assert.deepEqual(near.loaded, ['create.js', 'sidecar.js']);
    const rp = JSON.parse(near.stdout) as { target: string; agent: { store: string }[] };
    assert.equal(rp.target, `dir:${agent}`);
    assert.deepEqual(
      rp.agent.map((x) => x.store),
      [`hermes:${agent}`],
    );
  });

  it('the slim create lstats on the main thread; the full CLI starts its stat workers (and AGENTKEEP_STAT_WORKERS=1 does in the slim one)', async () => {
    const big = path.join(tmp, 'big');
    for (let d = 0; d < 90; d++) {
      await fs.mkdir(path.join(big, `d${d}`), { recursive: true });
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => fs.writeFile(path.join(big, `d${d}`, `f${i}`), `${d} ${i}\n`)),
      );
    }
    const args = ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${big}`, '--json'];
    const slim = await ak(args);
    assert.equal(slim.code, 0, slim.stderr);
    assert.equal(slim.workers, 0);
    const full = await ak(args, false);
    assert.equal(full.code, 0, full.stderr);
    assert.ok(full.workers > 0, 'the full CLI used no stat worker: the test tree is too small');
    const on = await ak(args, true, { AGENTKEEP_STAT_WORKERS: '1' });
    assert.equal(on.code, 0, on.stderr);
    assert.deepEqual(on.loaded, ['create.js', 'sidecar.js']);
    assert.ok(on.workers > 0);
  });
  it('a bad AGENTKEEP_STAT_WORKERS value: the slim create warns as the full CLI does and walks as it does (workers on)', async () => {
    const big = path.join(tmp, 'big');
    for (let d = 0; d < 90; d++) {
      await fs.mkdir(path.join(big, `d${d}`), { recursive: true });
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => fs.writeFile(path.join(big, `d${d}`, `f${i}`), `${d} ${i}\n`)),
      );
    }
    const args = ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${big}`];
    const env = { AGENTKEEP_STAT_WORKERS: 'maybe' };
    const slim = await ak(args, true, env);
    const full = await ak(args, false, env);
    assert.equal(slim.code, 0, slim.stderr);
    assert.equal(full.code, 0, full.stderr);
    assert.deepEqual(slim.loaded, ['create.js', 'sidecar.js']);
    assert.match(full.stderr, /AGENTKEEP_STAT_WORKERS="maybe".*the stat workers on\.\n$/);
    assert.equal(slim.stderr, full.stderr);
    assert.ok(slim.workers > 0 && full.workers > 0);
  });
});
