/**
 * A one-shot CLI process's memory (issue 14, "peak memory of a create at 100,000 files"; BENCHMARKS.md
 * branch mem100k): the young generation kept at its start size (sidecar/youngGen.ts), the bundles a CLI
 * process loads whole kept ASCII (scripts/lib/ascii-bundle.cjs), and the memory lint's word tables
 * loaded only by the lint. Real processes throughout: the built launcher (out/sidecar.js) on a real
 * tree with a Hermes store, and child Node processes for what V8 reports.
 */
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { isAscii } from 'node:buffer';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { wantsSmallYoungGen } from '../../sidecar/youngGen';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { FIXTURES, REPO } from './helpers/paths';

/** Run `node -r tsx/cjs -e code` in the repo; its stdout. */
function nodeEval(code: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', code],
      { cwd: REPO, env: { ...process.env, ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
}

/**
 * A child that (maybe) calls keepYoungGenSmall, then builds 300,000 objects that all survive (as a
 * create reading its parent's entries does); prints the young generation's size in MiB.
 */
const GROW = (small: boolean): string => `
  const v8 = require('node:v8');
  ${small ? "require('./sidecar/youngGen').keepYoungGenSmall();" : ''}
  const keep = [];
  for (let i = 0; i < 300000; i++) keep.push({ p: 'dir/file' + i, s: i, mt: i + 0.5, h: String(i).repeat(8) });
  const ns = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  console.log(ns.space_size / 1048576, keep.length);
`;

describe('CLI memory: young generation, ASCII bundles, lazy lint tables (issue 14)', function () {
  this.timeout(120_000);
  let tmp: string;

  before(async () => {
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-climem-'));
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('wantsSmallYoungGen: every one-shot command, not the servers (serve, mcp), not with AGENTKEEP_YOUNG_GEN=default', () => {
    const yes = [
      ['restore-point', 'create', '--target', 'dir:/x'],
      ['--state-dir', '/s', 'restore-point', 'list'],
      ['--state-dir=/s', 'memory', 'list'],
      ['--state-dir', 'serve', 'restore-point', 'list'], // "serve" is the state dir's value here
      ['hook', 'run', 'hermes'],
      ['--help'],
      [],
    ];
    for (const argv of yes) assert.equal(wantsSmallYoungGen(argv, {}), true, argv.join(' '));
    const no = [
      ['serve', '--stdio'],
      ['--state-dir', '/s', 'serve', '--ws', '127.0.0.1:0'],
      ['mcp', '--agent', 'a'],
    ];
    for (const argv of no) assert.equal(wantsSmallYoungGen(argv, {}), false, argv.join(' '));
    assert.equal(wantsSmallYoungGen(['restore-point', 'create'], { AGENTKEEP_YOUNG_GEN: 'default' }), false);
    // any other value: named once on stderr, the small young generation kept
    const said: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((l: string) => (said.push(String(l)), true)) as typeof process.stderr.write;
    try {
      assert.equal(wantsSmallYoungGen(['restore-point', 'create'], { AGENTKEEP_YOUNG_GEN: 'Default ' }), true);
      assert.equal(wantsSmallYoungGen(['restore-point', 'list'], { AGENTKEEP_YOUNG_GEN: 'Default ' }), true);
    } finally {
      process.stderr.write = write;
    }
    assert.deepEqual(said, [
      'agentkeep: warning: AGENTKEEP_YOUNG_GEN="Default " is not "default" (or unset); using a small young generation for one-shot commands.\n',
    ]);
  });

  it('keepYoungGenSmall keeps the young generation at its start size while survivors pile up (without it, it grows)', async () => {
    const [small] = (await nodeEval(GROW(true))).trim().split(' ').map(Number);
    const grown = Number((await nodeEval(GROW(false))).trim().split(' ')[0]);
    assert.ok(small <= 4, `young generation with keepYoungGenSmall: ${small} MiB (expected <= 4)`);
    assert.ok(grown > 4, `without it V8 grows it (${grown} MiB); else this test proves nothing`);
  });

  it('out/cli.js and out/hook-full.js are ASCII (V8 holds the source as one-byte)', () => {
    for (const f of ['cli.js', 'hook-full.js'])
      assert.ok(isAscii(readFileSync(path.join(REPO, 'out', f))), `out/${f} has non-ASCII bytes`);
  });

  it('loading the CLI and the core does not load the memory lint (its word tables) nor Proxmox, SQLite, MCP, ssh2, ws, undici; memory lint does', async () => {
    const loaded = (mod: string): Promise<string[]> =>
      nodeEval(
        `require(${JSON.stringify(mod)}); console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/memory/lint/')).map((k) => path.basename(k))))`,
      ).then((s) => JSON.parse(s) as string[]);
    for (const mod of ['./sidecar/cli', './sidecar/core/core', './sidecar/hooks/run']) {
      const lint = await loaded(mod);
      for (const heavy of ['lexicon.ts', 'wordnet-lexicon.ts', 'choices.ts', 'run.ts'])
        assert.ok(!lint.includes(heavy), `${mod} loaded memory/lint/${heavy}: ${lint.join(', ')}`);
    }
    // nor the big libraries only some commands need (Proxmox API, SQLite WASM, MCP SDK, ssh2, WebSocket, undici)
    const pkgs = JSON.parse(
      await nodeEval(
        "require('./sidecar/cli'); require('./sidecar/core/core'); console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/node_modules/')).map((k) => k.split('/node_modules/').at(-1))))",
      ),
    ) as string[];
    for (const heavy of ['proxmox-api/', 'node-sqlite3-wasm/', '@modelcontextprotocol/', 'ssh2/', 'ws/', 'undici/'])
      assert.ok(!pkgs.some((k) => k.startsWith(heavy)), `the CLI loaded ${heavy}`);
    assert.ok(
      pkgs.some((k) => k.startsWith('commander/')),
      'the check sees node_modules at all',
    );
    const lint = await loaded('./sidecar/memory/lint/run');
    assert.ok(lint.includes('wordnet-lexicon.ts') && lint.includes('choices.ts'), lint.join(', '));
  });

  it('a CLI create with the small young generation: same output, exit code and Hermes capture as with the default', async () => {
    const agent = path.join(tmp, 'agent');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    for (const f of ['MEMORY.md', 'USER.md'])
      await fs.copyFile(path.join(FIXTURES, 'memory/hermes/memories', f), path.join(agent, 'memories', f));
    await fs.writeFile(path.join(agent, 'config.yaml'), 'memory:\n  memory_char_limit: 2200\n');
    const results = [];
    for (const env of [{}, { AGENTKEEP_YOUNG_GEN: 'default' }]) {
      const state = path.join(tmp, `state-${results.length}`);
      const r = await runSidecar(
        ['--state-dir', state, 'restore-point', 'create', '--target', `dir:${agent}`, '--label', 'm', '--json'],
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      const j = JSON.parse(r.stdout);
      results.push({
        label: j.label,
        files: j.machine.files,
        bytes: j.machine.bytes,
        agent: j.agent.map((a: { store: string; files: unknown[] }) => ({ store: a.store, files: a.files })),
        stderr: r.stderr,
      });
      const human = await runSidecar(['--state-dir', state, 'restore-point', 'list', '--target', `dir:${agent}`], env);
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /\bm\b/);
    }
    assert.deepEqual(results[0], results[1]);
    assert.equal(results[0].agent[0].store, `hermes:${agent}`);
    assert.deepEqual(
      results[0].agent[0].files.map((f: { path: string }) => f.path),
      ['memories/MEMORY.md', 'memories/USER.md'],
    );
    // a usage error stays one (exit 2) on the small young generation
    const bad = await runSidecar(['restore-point', 'create', '--target', `dir:${agent}`, '--kind', 'nope']);
    assert.equal(bad.code, 2, bad.stderr);
  });
});
