/**
 * AGENTKEEP_* tuning variables with a bad value (sidecar/core/envWarn.ts): each gives one warning line
 * on stderr naming the variable, the value, what is used instead and what is valid, and the command
 * goes on with the default; and a hook whose budget runs out while it reads stdin says so (not "stdin
 * is empty"). Real processes: out/hook.js as Hermes runs it, the CLI, an `agentkeep mcp` server.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildHook, HOOK, runSidecar, SIDECAR, type RunResult } from './helpers/sidecar';

/** Hermes' pre_tool_call JSON for a terminal command. */
const call = (command: string): string =>
  JSON.stringify({
    hook_event_name: 'pre_tool_call',
    tool_name: 'terminal',
    tool_input: { command },
    session_id: 's1',
    cwd: '/tmp',
    extra: { tool_call_id: 'c1' },
  });

/** out/hook.js with `args`; stdin written after `delayMs` (then closed). */
function hook(args: string[], env: NodeJS.ProcessEnv, stdin: string, delayMs = 0): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HOOK, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.on('error', () => undefined); // the hook may have closed its stdin by then
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    setTimeout(() => child.stdin.end(stdin), delayMs);
  });
}

const SWITCH_VALID = /is not 0, false, off, no \(off\) or 1, true, on, yes \(on\)/;

describe('AGENTKEEP_* variables: a bad value is named on stderr, never ignored silently', function () {
  this.timeout(120000);
  let tmp: string;
  let state: string;
  let tree: string;
  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-envwarn-'));
    state = path.join(tmp, 'state');
    tree = path.join(tmp, 'tree');
    await fs.mkdir(tree);
    await fs.writeFile(path.join(tree, 'a.txt'), 'a');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('AGENTKEEP_HOOK_BUDGET_MS=abc, 0, -5: one warning line each, the default budget used, the call goes ahead', async () => {
    for (const bad of ['abc', '0', '-5']) {
      const r = await hook(
        ['hook', 'run', 'hermes', '--target', `dir:${tree}`, '--state-dir', state],
        { AGENTKEEP_HOOK_BUDGET_MS: bad },
        call('ls -la'),
      );
      assert.equal(r.code, 0);
      assert.equal(r.stdout, '');
      assert.equal(
        r.stderr,
        `agentkeep: warning: AGENTKEEP_HOOK_BUDGET_MS="${bad}" is not a number of milliseconds > 0; using the default 20000.\n`,
      );
    }
    // a valid value: no warning
    const ok = await hook(
      ['hook', 'run', 'hermes', '--target', `dir:${tree}`, '--state-dir', state],
      { AGENTKEEP_HOOK_BUDGET_MS: '3000' },
      call('ls -la'),
    );
    assert.equal(ok.stderr, '');
  });

  it('AGENTKEEP_HOOK_BUDGET_MS=1: the hook says its budget ran out while reading stdin, not that stdin is empty', async () => {
    const r = await hook(
      ['hook', 'run', 'hermes', '--target', `dir:${tree}`, '--state-dir', state],
      { AGENTKEEP_HOOK_BUDGET_MS: '1' },
      call('pip install requests'),
      500,
    );
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.doesNotMatch(r.stderr, /is empty|not JSON/);
    assert.match(
      r.stderr,
      /^agentkeep hook: the hook's time budget \(1 ms, AGENTKEEP_HOOK_BUDGET_MS\) ran out while reading stdin \(nothing arrived\); the tool call goes ahead without a restore point\. Unset AGENTKEEP_HOOK_BUDGET_MS or give it more \(default 20000\)\.\n$/,
    );
    // truly empty stdin (it ended at once) is still reported as empty
    const empty = await hook(['hook', 'run', 'hermes', '--target', `dir:${tree}`, '--state-dir', state], {}, '');
    assert.match(empty.stderr, /stdin is not JSON \(.*it is empty\)/);
  });

  it('AGENTKEEP_HOOK_HANDOFF=maybe: warned, the hand-off stays on, the restore point is taken', async () => {
    const r = await hook(
      ['hook', 'run', 'hermes', '--target', `dir:${tree}`, '--state-dir', state],
      { AGENTKEEP_HOOK_HANDOFF: 'maybe' },
      call('pip install requests'),
    );
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0], /^agentkeep: warning: AGENTKEEP_HOOK_HANDOFF="maybe" /);
    assert.match(lines[0], SWITCH_VALID);
    assert.match(lines[0], /using the default: the hook hand-off on\.$/);
    assert.match(lines[1], /^agentkeep: restore point ak_\S+ before terminal: pip install requests$/);
    assert.equal(lines.length, 2, r.stderr);
  });

  it('AGENTKEEP_STAT_WORKERS=4: warned (it is an on/off switch), the workers stay on; false turns them off without a warning', async () => {
    // a tree large enough for the worker-thread lstat (statpool PARALLEL_MIN = 4000 paths)
    for (let d = 0; d < 45; d++) {
      await fs.mkdir(path.join(tree, `d${d}`));
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => fs.writeFile(path.join(tree, `d${d}`, `f${i}`), `${d}/${i}`)),
      );
    }
    const r = await runSidecar(['--state-dir', state, 'restore-point', 'create', '--target', `dir:${tree}`], {
      AGENTKEEP_STAT_WORKERS: '4',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stderr,
      'agentkeep: warning: AGENTKEEP_STAT_WORKERS="4" is not 0, false, off, no (off) or 1, true, on, yes (on); ' +
        'using the default: the stat workers on.\n',
    );
    const off = await runSidecar(['--state-dir', state, 'restore-point', 'create', '--target', `dir:${tree}`], {
      AGENTKEEP_STAT_WORKERS: 'false',
    });
    assert.equal(off.code, 0, off.stderr);
    assert.equal(off.stderr, '');
  });

  it('AGENTKEEP_DIR_JOURNAL=maybe: an MCP server warns once and keeps the change journal on', async () => {
    let err = '';
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SIDECAR, '--state-dir', state, 'mcp', '--target', `dir:${tree}`],
      env: { ...getDefaultEnvironment(), AGENTKEEP_DIR_JOURNAL: 'maybe', AGENTKEEP_DEBUG: '1' },
      stderr: 'pipe',
    });
    transport.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const client = new Client({ name: 'agentkeep-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (const reason of ['one', 'two']) {
        const r = (await client.callTool({ name: 'restore_point_create', arguments: { reason } })) as {
          isError?: boolean;
        };
        assert.ok(!r.isError, JSON.stringify(r));
      }
    } finally {
      await client.close();
    }
    const warnings = err.split('\n').filter((l) => l.includes('AGENTKEEP_DIR_JOURNAL'));
    assert.equal(warnings.length, 1, err);
    assert.match(warnings[0], /^agentkeep: warning: AGENTKEEP_DIR_JOURNAL="maybe" /);
    assert.match(warnings[0], SWITCH_VALID);
    assert.match(warnings[0], /using the default: the change journal on\.$/);
    assert.match(err, /journal: \d+ paths/, 'the second create used the journal');
  });

  it('AGENTKEEP_CODE_CACHE=nah and a relative AGENTKEEP_CODE_CACHE_DIR: warned, the command runs', async () => {
    const r = await runSidecar(['--help'], { AGENTKEEP_CODE_CACHE: 'nah', XDG_CACHE_HOME: path.join(tmp, 'cache') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Usage: agentkeep/);
    assert.match(r.stderr, /^agentkeep: warning: AGENTKEEP_CODE_CACHE="nah" /);
    assert.match(r.stderr, SWITCH_VALID);
    assert.match(r.stderr, /using the default: the code cache on\.\n$/);
    const rel = await runSidecar(['--help'], { AGENTKEEP_CODE_CACHE_DIR: 'cache/here' });
    assert.equal(rel.code, 0, rel.stderr);
    assert.equal(
      rel.stderr,
      'agentkeep: warning: AGENTKEEP_CODE_CACHE_DIR="cache/here" is not an absolute path; ' +
        'using no code cache (the CLI is compiled afresh).\n',
    );
    // off-like values turn it off quietly
    assert.equal((await runSidecar(['--help'], { AGENTKEEP_CODE_CACHE: 'false' })).stderr, '');
  });
});
