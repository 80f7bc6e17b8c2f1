/**
 * Neovim as a second LSP client (issue 15 item 8): real `nvim --headless` (Debian's neovim package)
 * attaches the real `agentkeep serve --stdio` to a requirements.txt and a setup.sh with
 * test/fixtures/nvim/codelens.lua, gets the lenses (plain titles, no VS Code `$(icon)`), runs the
 * config file's "Restore point before editing" with vim.lsp.codelens.run() and the script's "Take
 * restore point" with client.request('workspace/executeCommand'), and the CLI's `restore-point list
 * --json` on the same state dir then shows both restore points.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildSidecar, runSidecar, SIDECAR } from './helpers/sidecar';
import { REPO } from './helpers/paths';

const SCRIPT = path.join(REPO, 'test', 'fixtures', 'nvim', 'codelens.lua');

interface Report {
  error?: string;
  commands?: string[];
  files: Array<{
    file: string;
    lenses: Array<{ line: number; title: string; command: string }>;
    executed?: { error?: string; result?: { ok: boolean; message: string; restorePoint?: { id: string } } };
  }>;
  messages: Array<{ type: number; message: string }>;
  asked: string[];
}

/** Run nvim headless with the script; resolves with its exit code and output, killed after `timeoutMs`. */
function runNvim(
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; out: string; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn('nvim', ['--headless', '--clean', '-n', '-i', 'NONE', '-c', `luafile ${SCRIPT}`], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, timedOut });
    });
  });
}

describe('Neovim headless as an LSP client of agentkeep serve --stdio', function () {
  let tmp: string;

  before(async function () {
    this.timeout(120000);
    const v = spawnSync('nvim', ['--version'], { encoding: 'utf8' });
    assert.equal(
      v.status,
      0,
      'nvim is not installed: this test needs Neovim (Debian: apt-get install -y neovim; .ci/run installs it)',
    );
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-nvim-'));
  });

  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('shows plain lens titles, runs "Restore point before editing" and "Take restore point" server-side', async function () {
    this.timeout(40000);
    const agent = path.join(tmp, 'agent');
    const state = path.join(tmp, 'state');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'one\n§\ntwo');
    const req = path.join(agent, 'requirements.txt');
    const sh = path.join(agent, 'setup.sh');
    await fs.writeFile(req, 'requests==2.32.0\n');
    await fs.writeFile(sh, '#!/bin/sh\nset -e\npip install -r requirements.txt\n');
    const env = { AGENTKEEP_STATE_DIR: state };
    const add = await runSidecar(['agent', 'add', 'a', '--target', `dir:${agent}`, '--store', `hermes:${agent}`], env);
    assert.equal(add.code, 0, add.stderr);

    const out = path.join(tmp, 'report.json');
    const t0 = Date.now();
    const run = await runNvim(
      {
        AK_NODE: process.execPath,
        AK_SIDECAR: SIDECAR,
        AK_STATE: state,
        AK_ROOT: agent,
        AK_FILES: `${req}:${sh}`,
        AK_OUT: out,
        AK_TOUCH: path.join(agent, 'notes.txt'),
      },
      30000,
    );
    const took = Date.now() - t0;
    const raw = await fs.readFile(out, 'utf8').catch(() => '');
    assert.ok(
      !run.timedOut,
      `nvim did not finish within 30 s (killed); report: ${raw || '(none)'}; output: ${run.out.slice(-2000)}`,
    );
    assert.ok(raw, `nvim wrote no report (exit ${run.code}); output: ${run.out.slice(-2000)}`);
    const report = JSON.parse(raw) as Report;
    assert.equal(report.error, undefined, `the Lua script failed: ${report.error}; output: ${run.out.slice(-2000)}`);
    assert.equal(run.code, 0, run.out);

    assert.deepEqual(report.commands, ['agentkeep.takeRestorePoint', 'agentkeep.restorePointBeforeEdit']);
    assert.deepEqual(
      report.files.map((f) => [path.basename(f.file), f.lenses]),
      [
        [
          'requirements.txt',
          [{ line: 0, title: 'Restore point before editing (none yet)', command: 'agentkeep.restorePointBeforeEdit' }],
        ],
        ['setup.sh', [{ line: 2, title: 'Take restore point', command: 'agentkeep.takeRestorePoint' }]],
      ],
    );
    assert.ok(!JSON.stringify(report.files).includes('$('), 'no VS Code $(icon) syntax in any title');
    for (const f of report.files) {
      assert.equal(f.executed?.error, undefined, `${f.file}: ${f.executed?.error}`);
      assert.equal(f.executed?.result?.ok, true, JSON.stringify(f.executed));
    }
    assert.match(report.files[0].executed!.result!.message, /taken before editing requirements\.txt/);
    // the server told the user through window/showMessage (Info), once per command
    assert.deepEqual(
      report.messages.map((m) => m.type),
      [3, 3],
      JSON.stringify(report.messages),
    );
    assert.deepEqual(report.asked, [], 'nothing was edited: no question');

    const list = await runSidecar(['restore-point', 'list', '--target', `dir:${agent}`, '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const rps = JSON.parse(list.stdout) as Array<{ id: string; kind: string; label: string }>;
    assert.deepEqual(
      rps.map((r) => [r.id, r.kind, r.label]),
      [
        [report.files[1].executed!.result!.restorePoint!.id, 'manual', 'pip install -r requirements.txt'],
        [report.files[0].executed!.result!.restorePoint!.id, 'config-edit', 'before editing requirements.txt'],
      ],
    );
    assert.ok(took < 20000, `nvim round trip took ${took} ms (target < 20 s)`);
  });

  it('Neovim 0.7: vim.lsp.codelens.run() right after the lenses arrive (before any resolve) runs the command', async function () {
    this.timeout(40000);
    const agent = path.join(tmp, 'agent');
    const state = path.join(tmp, 'state');
    await fs.mkdir(path.join(agent, 'memories'), { recursive: true });
    await fs.writeFile(path.join(agent, 'memories', 'MEMORY.md'), 'one');
    const sh = path.join(agent, 'setup.sh');
    await fs.writeFile(sh, '#!/bin/sh\nnpm install left-pad\n');
    const env = { AGENTKEEP_STATE_DIR: state };
    const add = await runSidecar(['agent', 'add', 'a', '--target', `dir:${agent}`, '--store', `hermes:${agent}`], env);
    assert.equal(add.code, 0, add.stderr);
    const out = path.join(tmp, 'report.json');
    const run = await runNvim(
      {
        AK_NODE: process.execPath,
        AK_SIDECAR: SIDECAR,
        AK_STATE: state,
        AK_ROOT: agent,
        AK_FILES: sh,
        AK_OUT: out,
        AK_EARLY: '1',
      },
      30000,
    );
    const raw = await fs.readFile(out, 'utf8').catch(() => '');
    assert.ok(raw, `nvim wrote no report (exit ${run.code}); output: ${run.out.slice(-2000)}`);
    const report = JSON.parse(raw) as Report;
    assert.equal(report.error, undefined, `the Lua script failed: ${report.error}; output: ${run.out.slice(-2000)}`);
    assert.deepEqual(report.files[0].lenses, [
      { line: 1, title: 'Take restore point', command: 'agentkeep.takeRestorePoint' },
    ]);
    assert.equal(report.files[0].executed?.result?.ok, true, JSON.stringify(report.files[0].executed));
  });
});
