/**
 * Start-up of the installed program (issue 14): out/sidecar.js is a small launcher that answers
 * `--version` and the hooks' calls that need nothing itself (sidecar/cli/fast.ts) and loads the full
 * CLI (out/cli.js) with V8's code cache (sidecar/codeCache.ts) for everything else. Real processes
 * throughout; each fast path is compared with the full CLI's answer to the same command line
 * (AGENTKEEP_PLUGINS set to an empty list sends every command line to the full CLI), and the code
 * cache is tried with a missing, corrupt, rejected, foreign and concurrently written cache file.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { fastPath } from '../../sidecar/cli/fast';
import { buildSidecar, SIDECAR, type RunResult } from './helpers/sidecar';
import { REPO } from './helpers/paths';

/** Run out/sidecar.js (or `bin`) with `env` over the test's environment; stdin `input`. */
function run(args: string[], env: NodeJS.ProcessEnv, input = '', bin = SIDECAR): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('error', reject);
    c.on('close', (code) => resolve({ code, stdout, stderr }));
    c.stdin.end(input);
  });
}

/** The full CLI for every command line (an empty plugin list loads nothing). */
const FULL = { AGENTKEEP_PLUGINS: path.delimiter };

function payload(tool: string, input: Record<string, unknown>, id: string): string {
  return JSON.stringify({
    hook_event_name: 'pre_tool_call',
    tool_name: tool,
    tool_input: input,
    session_id: 'sess_t',
    cwd: '/tmp',
    extra: { tool_call_id: id },
  });
}

describe('start-up: the launcher and the code cache (issue 14)', function () {
  this.timeout(120_000);
  let tmp: string;
  let cacheDir: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-startup-'));
    cacheDir = path.join(tmp, 'cache');
    env = { AGENTKEEP_CODE_CACHE_DIR: cacheDir, AGENTKEEP_STATE_DIR: path.join(tmp, 'state') };
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('the launcher stays small: no commander, zod, core, YAML, SQLite or MCP SDK in out/sidecar.js', async () => {
    const code = await fs.readFile(SIDECAR, 'utf8');
    assert.ok(code.length < 150 * 1024, `out/sidecar.js is ${code.length} bytes`);
    for (const heavy of ['ZodType', 'CommanderError', 'LineCounter', 'node-sqlite3-wasm', 'McpServer', 'proxmox'])
      assert.ok(!code.includes(heavy), `out/sidecar.js bundles ${heavy}`);
    assert.ok(code.includes('cli.js') && code.includes('hook-full.js'), 'it loads the full parts at run time');
  });

  it('--version: the same answer from the fast path and the full CLI', async () => {
    const version = (JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8')) as { version: string })
      .version;
    const fast = await run(['--version'], env);
    assert.deepEqual(fast, { code: 0, stdout: `${version}\n`, stderr: '' });
    // the fast path loads no full CLI, so it writes no code cache
    assert.deepEqual(await fs.readdir(cacheDir).catch(() => []), []);
    assert.deepEqual(await run(['--version'], { ...env, ...FULL }), fast);
  });

  it('hook run hermes / agent-zero: a non-risky call answers as the full CLI does (nothing), a risky one takes the pre restore point, bad stdin says the same', async () => {
    const tree = path.join(tmp, 'agent');
    await fs.mkdir(tree);
    await fs.writeFile(path.join(tree, 'a.txt'), 'a\n');
    const hermes = ['hook', 'run', 'hermes', '--target', `dir:${tree}`];
    const a0 = ['hook', 'run', 'agent-zero', '--target', `dir:${tree}`];
    for (const [argv, input] of [
      [hermes, payload('terminal', { command: 'ls -la && git status' }, 'c1')],
      [a0, payload('code_execution_tool', { runtime: 'terminal', code: 'ls -la' }, 'c2')],
      [hermes, payload('read_file', { path: '/etc/hosts' }, 'c3')],
    ] as const) {
      const fast = await run([...argv], env, input);
      assert.deepEqual(fast, { code: 0, stdout: '', stderr: '' });
      assert.deepEqual(await run([...argv], { ...env, ...FULL }, input), fast);
    }
    for (const bad of ['not json', '{"tool_name": 3}']) {
      const fast = await run(hermes, env, bad);
      assert.equal(fast.code, 0);
      assert.match(fast.stderr, /agentkeep hook: stdin .*the tool call goes ahead without a restore point/);
      assert.deepEqual(await run(hermes, { ...env, ...FULL }, bad), fast);
    }
    // risky: the launcher loads out/hook-full.js and takes the pre restore point
    const r = await run(hermes, env, payload('terminal', { command: 'pip install requests' }, 'c4'));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    const list = await run(['restore-point', 'list', '--target', `dir:${tree}`, '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const points = JSON.parse(list.stdout) as Array<{ kind?: string; reason?: { command?: string } }>;
    assert.equal(points.length, 1);
    assert.equal(points[0].kind, 'pre');
    assert.match(points[0].reason?.command ?? '', /pip install requests/);
  });

  it('hook run apt: pre-invoke keeps its record and post-invoke without a pre does nothing, as in the full CLI', async () => {
    const state = path.join(tmp, 'state');
    const apt = (step: string) => [
      '--state-dir',
      state,
      'hook',
      'run',
      'apt',
      '--target',
      `dir:${tmp}`,
      '--budget-ms',
      '4000',
      '--dpkg',
      step,
    ];
    for (const e of [env, { ...env, ...FULL }]) {
      await fs.rm(path.join(state, 'hooks'), { recursive: true, force: true });
      assert.deepEqual(await run(apt('pre-invoke'), e), { code: 0, stdout: '', stderr: '' });
      const recs = await fs.readdir(path.join(state, 'hooks', 'apt'));
      assert.equal(recs.length, 1, 'one record of this apt command');
      const rec = JSON.parse(await fs.readFile(path.join(state, 'hooks', 'apt', recs[0]), 'utf8')) as {
        pre?: string;
        command: string;
      };
      assert.equal(rec.pre, undefined);
      assert.deepEqual(await run(apt('post-invoke'), e), { code: 0, stdout: '', stderr: '' });
      assert.deepEqual(await fs.readdir(path.join(state, 'hooks', 'apt')), recs);
      assert.deepEqual(
        await fs.readdir(path.join(state, 'journal')).catch(() => []),
        [],
        'no restore point, no journal',
      );
    }
  });

  it('command lines the fast paths do not take go to the full CLI', () => {
    const e = { AGENTKEEP_STATE_DIR: '/s' };
    assert.deepEqual(fastPath(['--version'], e), { kind: 'version' });
    assert.deepEqual(fastPath(['--state-dir=/x', 'hook', 'run', 'hermes', '--agent', 'a', '--store', 'hermes:/h'], e), {
      kind: 'agent-hook',
      argv: ['hook', 'run', 'hermes', '--agent', 'a', '--store', 'hermes:/h', '--state-dir', '/x'],
    });
    assert.deepEqual(fastPath(['hook', 'run', 'apt', '--dpkg', 'post-invoke', '--budget-ms', '0'], e), {
      kind: 'apt-hook',
      args: { step: 'post-invoke', stateDir: '/s', stores: [], budgetMs: 4000 },
    });
    for (const argv of [
      [],
      ['--help'],
      ['-V'],
      ['--version', '--json'],
      ['hook', 'run', 'hermes', '--help'],
      ['hook', 'run', 'hermes', '--agent'],
      ['hook', 'run', 'hermes', '--agent', '--target', 'dir:/x'],
      ['hook', 'run', 'hermes', 'extra'],
      ['hook', 'run', 'hermes', '--dpkg', 'pre-invoke'],
      ['hook', 'run', 'codex'],
      ['hook', 'run', '--agent', 'a', 'hermes'],
      ['hook', 'install', 'hermes'],
      ['hook', 'run', 'apt'],
      ['hook', 'run', 'apt', '--dpkg', 'later'],
      ['hook', 'run', 'hermes', '--', 'x'],
      ['--state-dir', 'relative/dir', 'hook', 'run', 'hermes'],
      ['restore-point', 'list'],
    ])
      assert.equal(fastPath(argv, e), undefined, argv.join(' '));
    assert.equal(fastPath(['hook', 'run', 'hermes'], { AGENTKEEP_STATE_DIR: 'rel' }), undefined);
    assert.equal(fastPath(['--version'], { AGENTKEEP_PLUGINS: '/p.js' }), undefined);
  });

  it('the code cache: written on the first full start, used after, rebuilt when corrupt or rejected, never a failure', async () => {
    const help = async (): Promise<string> => {
      const r = await run(['--help'], env);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.match(r.stdout, /^Usage: agentkeep/);
      return r.stdout;
    };
    const expected = (await run(['--help'], { ...env, AGENTKEEP_CODE_CACHE: 'off' })).stdout;
    assert.deepEqual(await fs.readdir(cacheDir).catch(() => []), [], 'off: no cache');
    assert.equal(await help(), expected);
    const [name] = await fs.readdir(cacheDir);
    assert.match(name, /^[0-9a-f]{40}\.bin$/);
    const file = path.join(cacheDir, name);
    const valid = (b: Buffer): boolean => {
      const nl = b.indexOf(10);
      const sum = b.subarray(0, nl).toString().split(' ').at(-1);
      return (
        createHash('sha1')
          .update(b.subarray(nl + 1))
          .digest('hex') === sum
      );
    };
    const first = await fs.readFile(file);
    assert.ok(valid(first));
    assert.equal((await fs.stat(cacheDir)).mode & 0o777, 0o700);
    assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
    // used, not rewritten
    const ino = (await fs.stat(file)).ino;
    assert.equal(await help(), expected);
    assert.equal((await fs.stat(file)).ino, ino, 'a usable cache is not written again');

    // corrupt payload (the checksum catches it), truncated file, garbage that passes our checksum (V8 rejects it)
    const header = first.subarray(0, first.indexOf(10) + 1).toString();
    const garbage = Buffer.alloc(4096, 7);
    const forged = `${header.split(' ').slice(0, -1).join(' ')} ${createHash('sha1').update(garbage).digest('hex')}\n`;
    for (const bad of [
      Buffer.concat([first.subarray(0, 200), Buffer.from('x'), first.subarray(201)]),
      first.subarray(0, first.length >> 1),
      Buffer.from(''),
      Buffer.concat([Buffer.from(forged), garbage]),
    ]) {
      await fs.writeFile(file, bad);
      assert.equal(await help(), expected);
      assert.ok(valid(await fs.readFile(file)), 'rebuilt');
    }

    // concurrent first starts: all succeed, one whole cache file, no temp files left
    await fs.rm(cacheDir, { recursive: true });
    const rs = await Promise.all([1, 2, 3, 4].map(() => run(['--help'], env)));
    for (const r of rs) assert.equal(r.stdout, expected);
    const names = await fs.readdir(cacheDir);
    assert.deepEqual(names, [name]);
    assert.ok(valid(await fs.readFile(file)));
  });

  it('writing a cache drops files not written for 30 days (old versions, dead temp files) and keeps the rest', async () => {
    await fs.mkdir(cacheDir, { mode: 0o700 });
    const old = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    for (const n of ['old.bin', 'old.bin.123.ab.tmp', 'notes.txt']) {
      await fs.writeFile(path.join(cacheDir, n), 'x');
      await fs.utimes(path.join(cacheDir, n), old, old);
    }
    await fs.writeFile(path.join(cacheDir, 'recent.bin'), 'x');
    assert.equal((await run(['--help'], env)).code, 0);
    const names = (await fs.readdir(cacheDir)).sort();
    assert.equal(names.length, 3, names.join(' '));
    assert.ok(names.includes('notes.txt') && names.includes('recent.bin'), 'other and recent files kept');
    assert.ok(!names.includes('old.bin') && !names.includes('old.bin.123.ab.tmp'));
  });

  it('an unsafe or unusable cache directory is not used, and the command still runs', async () => {
    const expected = (await run(['--help'], { ...env, AGENTKEEP_CODE_CACHE: 'off' })).stdout;
    // writable by others
    await fs.mkdir(cacheDir, { mode: 0o777 });
    await fs.chmod(cacheDir, 0o777);
    assert.equal((await run(['--help'], env)).stdout, expected);
    assert.deepEqual(await fs.readdir(cacheDir), []);
    // a file where the directory should be; a relative path
    await fs.rm(cacheDir, { recursive: true });
    await fs.writeFile(cacheDir, 'x');
    assert.equal((await run(['--help'], env)).stdout, expected);
    assert.equal((await run(['--help'], { ...env, AGENTKEEP_CODE_CACHE_DIR: 'rel' })).stdout, expected);
    await fs.rm(cacheDir);
    // a symlink as the cache file is not followed
    await fs.mkdir(cacheDir, { mode: 0o700 });
    await run(['--help'], env);
    const [name] = await fs.readdir(cacheDir);
    const target = path.join(tmp, 'elsewhere');
    await fs.writeFile(target, 'mine');
    await fs.rm(path.join(cacheDir, name));
    await fs.symlink(target, path.join(cacheDir, name));
    assert.equal((await run(['--help'], env)).stdout, expected);
    assert.equal(await fs.readFile(target, 'utf8'), 'mine', 'the symlink target is untouched');
  });

  it('without out/cli.js the launcher says what is missing (and --version still answers)', async () => {
    const dir = path.join(tmp, 'bin');
    await fs.mkdir(dir);
    copyFileSync(SIDECAR, path.join(dir, 'sidecar.js'));
    const lone = path.join(dir, 'sidecar.js');
    const r = await run(['--help'], env, '', lone);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cli\.js is missing: the program is out\/sidecar\.js together with out\/cli\.js/);
    assert.equal((await run(['--version'], env, '', lone)).code, 0);
  });
});
