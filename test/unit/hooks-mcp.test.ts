/**
 * Issue 15 item 5: `agentkeep mcp`, through the MCP SDK's own client over stdio (a real child
 * process): the tools and their descriptions, a restore point with the agent's reason, a
 * restore_request that only becomes a pending request, and its approval through the CLI restoring.
 * Issue 14: the server keeps the dir backend's change journal (real inotify) for its life: its creates
 * after the first use it, give the same tree as the CLI's full walk, serialise when called at once,
 * and AGENTKEEP_DIR_JOURNAL=0 turns it off; closing stdin stops it and ends the process.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readManifest } from '../../sidecar/machine/dir/manifest';
import { buildHook, cliRunner, SIDECAR } from './helpers/sidecar';

type ToolResult = { content: Array<{ type: string; text: string }>; isError?: boolean };

describe('agentkeep mcp (the SDK client over stdio)', function () {
  this.timeout(120000);
  let tmp: string;
  let machine: string;
  let state: string;
  let client: Client;
  let config: string;
  const { ak, json } = cliRunner(() => state);

  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-mcp-'));
    machine = path.join(tmp, 'home');
    state = path.join(tmp, 'state');
    await fs.mkdir(path.join(machine, 'memories'), { recursive: true });
    await fs.writeFile(path.join(machine, 'config.yaml'), 'model:\n  default: a\n');
    await fs.writeFile(path.join(machine, 'memories', 'MEMORY.md'), 'Uses uv\n§\nUses uv');
    // the agent as hook install records it
    assert.equal((await ak('hook', 'install', 'hermes', '--home', machine, '--mcp')).code, 0);
    config = await fs.readFile(path.join(machine, 'config.yaml'), 'utf8');
    client = new Client({ name: 'agentkeep-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [SIDECAR, '--state-dir', state, 'mcp', '--agent', 'hermes'],
        stderr: 'pipe',
      }),
    );
  });
  afterEach(async () => {
    await client?.close();
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const callTool = async (name: string, args: Record<string, unknown>): Promise<ToolResult> =>
    (await client.callTool({ name, arguments: args })) as ToolResult;

  it('lists the five tools, with descriptions that say when to call them and what a restore cannot undo', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'memory_lint',
      'restore_point_create',
      'restore_point_diff',
      'restore_point_list',
      'restore_request',
    ]);
    const create = tools.find((t) => t.name === 'restore_point_create')!;
    assert.match(create.description!, /before .*installing or upgrading packages.*updating yourself.*config/);
    assert.match(create.description!, /cannot undo what you already did outside it/);
    assert.deepEqual((create.inputSchema as { required?: string[] }).required, ['reason']);
    assert.match(tools.find((t) => t.name === 'restore_request')!.description!, /never restores by itself/);
  });

  it('restore_point_create needs a reason and records it; restore_request is pending until approved through the CLI, which restores', async () => {
    const noReason = await callTool('restore_point_create', {});
    assert.equal(noReason.isError, true, 'reason is required');
    const made = await callTool('restore_point_create', { reason: 'before switching the model provider' });
    assert.ok(!made.isError, made.content[0]?.text);
    const id = /restore point (ak_\w+)/.exec(made.content[0].text)![1];
    const [rp] = await json('restore-point', 'list', '--target', `dir:${machine}`);
    assert.equal(rp.id, id);
    assert.deepEqual(
      { origin: rp.reason.origin, agent: rp.reason.agent, text: rp.reason.text },
      { origin: 'mcp', agent: 'hermes', text: 'by the agent hermes: before switching the model provider' },
    );
    const listed = await callTool('restore_point_list', {});
    assert.match(listed.content[0].text, new RegExp(id));

    // the agent breaks its config, then asks for a restore
    await fs.writeFile(path.join(machine, 'config.yaml'), 'model: [broken\n');
    const diff = await callTool('restore_point_diff', { id });
    assert.match(diff.content[0].text, /changed \(1\): config\.yaml/);
    const asked = await callTool('restore_request', {
      id,
      scope: 'machine',
      reason: 'my config.yaml no longer parses',
    });
    assert.ok(!asked.isError, asked.content[0]?.text);
    assert.match(asked.content[0].text, /Request (req_\w+) is pending: nothing was restored/);
    const reqId = /Request (req_\w+)/.exec(asked.content[0].text)![1];
    assert.equal(
      await fs.readFile(path.join(machine, 'config.yaml'), 'utf8'),
      'model: [broken\n',
      'nothing restored by the request',
    );
    const pending = await json('request', 'list');
    assert.deepEqual(
      pending.map((r: any) => [r.id, r.status, r.restorePoint, r.scope, r.agent, r.reason]),
      [[reqId, 'pending', id, 'machine', 'hermes', 'my config.yaml no longer parses']],
    );
    const lst = await ak('restore-point', 'list', '--target', `dir:${machine}`);
    assert.match(lst.stderr, /1 restore request\(s\) of the agent wait for approval/);

    // approval needs confirmation off a TTY
    const noYes = await ak('request', 'approve', reqId);
    assert.equal(noYes.code, 1);
    assert.match(noYes.stderr, /needs confirmation\. Pass --yes/);
    const ok = await ak('request', 'approve', reqId, '--yes');
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(
      ok.stdout,
      /Approved req_\w+: restored ak_\w+ \(scope machine\).*\n[\s\S]*Undo: agentkeep restore-point restore ak_\w+/,
    );
    assert.equal(await fs.readFile(path.join(machine, 'config.yaml'), 'utf8'), config, 'restored');
    const done = await json('request', 'list', '--all');
    assert.equal(done[0].status, 'approved');
    assert.ok(done[0].undo);
    // the undo line is a runnable command (as run's): --yes, the state dir; running it as printed undoes
    const undoLine = /^Undo: (agentkeep .*)$/m.exec(ok.stdout)![1];
    assert.match(
      undoLine,
      new RegExp(`^agentkeep restore-point restore ${done[0].undo} --target \\S+ .*--scope machine.* --yes$`),
    );
    assert.ok(undoLine.includes('--state-dir'), undoLine);
    const undoArgs = undoLine
      .split(' ')
      .slice(1)
      .filter((a) => a !== '--state-dir' && a !== state);
    const undone = await ak(...undoArgs);
    assert.equal(undone.code, 0, undone.stderr);
    assert.equal(await fs.readFile(path.join(machine, 'config.yaml'), 'utf8'), 'model: [broken\n', 'undone as printed');
    const twice = await ak('request', 'approve', reqId, '--yes');
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /is approved, not pending/);

    // deny: nothing restored
    const again = await callTool('restore_request', { id, scope: 'both', reason: 'try again' });
    const second = /Request (req_\w+)/.exec(again.content[0].text)![1];
    const den = await ak('request', 'deny', second, '--note', 'no');
    assert.equal(den.code, 0, den.stderr);
    assert.equal((await json('request', 'list', '--all')).find((r: any) => r.id === second).status, 'denied');

    const bad = await callTool('restore_request', { id: 'ak_nosuch', scope: 'agent', reason: 'x' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /ak_nosuch/);
  });

  it("memory_lint reports the findings of the agent's stores", async () => {
    const r = await callTool('memory_lint', {});
    assert.ok(!r.isError, r.content[0]?.text);
    assert.match(r.content[0].text, /duplicate/);
  });

  it('an agent allowed to restore scope agent without approval gets its request run at once', async () => {
    assert.equal((await ak('hook', 'settings', '--agent', 'hermes', '--allow-agent-restores')).code, 0);
    await client.close();
    client = new Client({ name: 'agentkeep-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [SIDECAR, '--state-dir', state, 'mcp', '--agent', 'hermes'],
        stderr: 'pipe',
      }),
    );
    const made = await callTool('restore_point_create', { reason: 'before a memory cleanup' });
    const id = /restore point (ak_\w+)/.exec(made.content[0].text)![1];
    await fs.writeFile(path.join(machine, 'memories', 'MEMORY.md'), 'Uses pip');
    const r = await callTool('restore_request', { id, scope: 'agent', reason: 'I removed the wrong entry' });
    assert.match(r.content[0].text, /Restored .* at once/);
    assert.equal(await fs.readFile(path.join(machine, 'memories', 'MEMORY.md'), 'utf8'), 'Uses uv\n§\nUses uv');
    const m = await callTool('restore_request', { id, scope: 'machine', reason: 'and the machine' });
    assert.match(m.content[0].text, /is pending/, 'scope machine still needs approval');
  });

  describe("the change journal (one Core for the server's life)", () => {
    let notes: string;
    /** A server started with AGENTKEEP_DEBUG=1 (its scan notes on stderr) and `env`. */
    const start = async (env: Record<string, string> = {}): Promise<void> => {
      await client.close();
      notes = '';
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [SIDECAR, '--state-dir', state, 'mcp', '--agent', 'hermes'],
        env: { ...getDefaultEnvironment(), AGENTKEEP_DEBUG: '1', ...env },
        stderr: 'pipe',
      });
      transport.stderr!.on('data', (d: Buffer) => (notes += d.toString()));
      client = new Client({ name: 'agentkeep-test', version: '1.0.0' });
      await client.connect(transport);
    };
    /** The scan notes ("journal: …" / "full walk: …") the server printed so far, in order. */
    const scans = (): string[] =>
      [...notes.matchAll(/^agentkeep dir .*?: ((?:journal|full walk): .*)$/gm)].map((m) => m[1]);
    const create = async (reason: string): Promise<string> => {
      const r = await callTool('restore_point_create', { reason });
      assert.ok(!r.isError, r.content[0]?.text);
      return /restore point (ak_\w+)/.exec(r.content[0].text)![1];
    };
    /** The root tree hash of a dir restore point (names, types, modes, sizes, times, inodes, contents). */
    const rootTree = async (id: string): Promise<string> => {
      const dir = path.join(state, 'dir');
      const [key] = await fs.readdir(dir);
      const m = await readManifest(path.join(dir, key, `${id}.json`));
      assert.ok(m?.tree, `manifest of ${id}`);
      return m.tree;
    };
    /** A restore point by the one-shot CLI (no journal: the full walk) of the same agent. */
    const fullWalk = async (): Promise<string> => (await json('restore-point', 'create', '--agent', 'hermes')).id;
    const smallChange = async (n: number): Promise<void> => {
      await fs.appendFile(path.join(machine, 'config.yaml'), `# edit ${n}\n`);
      await fs.mkdir(path.join(machine, 'skills', `s${n}`), { recursive: true });
      await fs.writeFile(path.join(machine, 'skills', `s${n}`, 'SKILL.md'), `skill ${n}\n`);
      if (n > 1) await fs.rm(path.join(machine, 'skills', `s${n - 1}`, 'SKILL.md'));
    };

    beforeEach(async () => {
      for (let i = 0; i < 30; i++) {
        await fs.mkdir(path.join(machine, 'work', `d${i % 3}`), { recursive: true });
        await fs.writeFile(path.join(machine, 'work', `d${i % 3}`, `f${i}.txt`), `file ${i}\n`);
      }
    });

    it('creates after the first use the journal, equal to the full walk, also two at once (serialised)', async () => {
      await start();
      await create('first');
      assert.deepEqual(scans(), ['full walk: journal starting']);

      await smallChange(1);
      const second = await create('after a small change');
      assert.match(scans()[1], /^journal: \d+ paths/, scans().join(' | '));
      assert.equal(await rootTree(second), await rootTree(await fullWalk()), 'journal create = full walk');

      // two calls at once: the second waits for the first's target lock, then starts from its snapshot
      await smallChange(2);
      const [a, b] = await Promise.all([create('at once 1'), create('at once 2')]);
      assert.notEqual(a, b);
      assert.deepEqual(
        scans()
          .slice(2)
          .map((n) => n.replace(/:.*/, '')),
        ['journal', 'journal'],
        `each started from the other's finished snapshot: ${scans().join(' | ')}`,
      );
      const points = await json('restore-point', 'list', '--agent', 'hermes');
      const [first, then] = [a, b].map((id) => points.find((p: any) => p.id === id));
      assert.ok(first && then, 'both restore points are listed');
      const f = await fullWalk();
      assert.equal(await rootTree(a), await rootTree(b), 'nothing changed between the two');
      assert.equal(await rootTree(b), await rootTree(f), 'journal create = full walk');

      // closing stdin stops the journal and ends the server by itself (no SIGTERM from the client)
      await client.close();
      await new Promise((r) => setTimeout(r, 50));
      assert.match(notes, /agentkeep mcp: stdin closed: closed, change journal stopped/);
    });

    it('AGENTKEEP_DIR_JOURNAL=0 turns it off: every create walks the tree', async () => {
      await start({ AGENTKEEP_DIR_JOURNAL: '0' });
      await create('first');
      await smallChange(1);
      const second = await create('second');
      assert.deepEqual(scans(), [
        'full walk: no change journal in this process',
        'full walk: no change journal in this process',
      ]);
      assert.equal(await rootTree(second), await rootTree(await fullWalk()));
    });
  });

  it('restore_point_list says a damaged journal entry exists (the CLI warns about it too), and still lists the others', async () => {
    const a = await callTool('restore_point_create', { reason: 'first' });
    const b = await callTool('restore_point_create', { reason: 'second' });
    const [ida, idb] = [a, b].map((r) => /restore point (ak_\w+)/.exec(r.content[0].text)![1]);
    const [key] = await fs.readdir(path.join(state, 'journal'));
    await fs.writeFile(path.join(state, 'journal', key, `${idb}.json`), '{ broken');
    const listed = await callTool('restore_point_list', {});
    assert.ok(!listed.isError, listed.content[0]?.text);
    assert.match(listed.content[0].text, new RegExp(`^${ida} `, 'm'));
    assert.match(listed.content[0].text, new RegExp(`^Warning: restore point ${idb} is not listed: .*damaged`, 'm'));
    const cli = await ak('restore-point', 'list', '--target', `dir:${machine}`);
    assert.match(cli.stderr, new RegExp(`warning: .*${idb}`));
  });
});
