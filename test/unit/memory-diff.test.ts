/**
 * Agent state in restore points: state.db captured consistently (WAL held open by a real writer),
 * memory.diff between a restore point and now / another restore point with the outside-world actions
 * since, the restore confirmation that lists what will be lost, and the memory CLI through the real
 * sidecar binary (exit codes, byte-identical store after a failed edit).
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli, type CliIO } from '../../sidecar/cli';
import { Core } from '../../sidecar/core/core';
import { withReadOnlyDb } from '../../sidecar/memory/sqlite';
import { FIXTURES } from './helpers/paths';
import { hashTree, holdWalWriter, makeStateDb, memoryCall, toolCall, copyFixture } from './helpers/hermes-db';
import { buildSidecar, runSidecar } from './helpers/sidecar';

describe('memory diff, agent state in restore points, memory CLI', function () {
  this.timeout(120_000);
  let tmp: string;
  let home: string;
  let store: string;
  let target: string;
  let stateDir: string;
  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memdiff-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home);
    await fs.rm(path.join(home, 'state.db'));
    store = `hermes:${home}`;
    target = `dir:${home}`;
    stateDir = path.join(tmp, 'state');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('captures state.db consistently while a writer holds WAL frames; diff lists entries and actions since', async () => {
    const db = path.join(home, 'state.db');
    const now = Date.now() / 1000;
    makeStateDb(db, {
      wal: true,
      sessions: [{ id: 's1', source: 'telegram', started: now - 100 }],
      messages: [toolCall('send_message', { text: 'before the restore point' }, now - 50)],
    });
    const w = await holdWalWriter(db, [
      memoryCall({ action: 'add', target: 'memory', content: 'only in the WAL' }, now - 40),
    ]);
    try {
      const core = new Core({ stateDir });
      const rp = await core.createRestorePoint({ target, stores: [store], label: 'before' });
      const cap = rp.agent[0].files;
      const paths = cap.map((f) => f.path);
      assert.ok(paths.includes('state.db'));
      assert.ok(
        !paths.includes('state.db-wal') && !paths.includes('state.db-shm'),
        'WAL folded into the state.db capture',
      );
      const capDb = cap.find((f) => f.path === 'state.db')!;
      assert.ok(capDb.size > 0);
      // the captured database is self-contained and holds the WAL-only row
      const copy = path.join(tmp, 'captured.db');
      await fs.writeFile(copy, await core.objects.read(capDb.hash));
      assert.equal(await withReadOnlyDb(copy, (d) => d.get('SELECT count(*) AS n FROM messages')!.n), 2);

      // after the restore point: the agent learns, forgets, changes, and acts
      const id = (needle: string) =>
        core
          .listMemory({ stores: [store] })
          .then((r) => r.stores.flatMap((f) => f.entries).find((e) => e.text.includes(needle))!.id);
      await core.addMemory({ store, text: 'Release is on Monday' });
      await core.removeMemory({ store, entry: await id('Vim keybindings') });
      await core.editMemory({
        store,
        entry: await id('Staging server'),
        text: 'Staging server 10.0.1.50 listens for SSH on port 2223',
      });
      await w.kill();
      const later = Date.now() / 1000 + 1;
      makeStateDb(db, {
        messages: [
          toolCall('terminal', { command: 'git push origin main' }, later),
          toolCall('terminal', { command: 'ls -la' }, later + 1),
          toolCall('web_search', { query: 'ssh port' }, later + 2),
        ],
      });

      const d = await core.diffMemory({ target, from: rp.id });
      assert.deepEqual(
        d.added.map((c) => c.after!.text),
        ['Release is on Monday'],
      );
      assert.deepEqual(
        d.removed.map((c) => c.before!.text),
        ['Uses VS Code with Vim keybindings.'],
      );
      assert.equal(d.changed.length, 1);
      assert.match(d.changed[0].before!.text, /port 2222/);
      assert.match(d.changed[0].after!.text, /port 2223/);
      assert.equal(d.changed[0].store, store);
      assert.deepEqual(
        d.actions!.map((a) => a.message!.split(':')[0]),
        ['git push', 'web request'],
      );

      // restore point to restore point
      const rp2 = await core.createRestorePoint({ target, stores: [store], label: 'after' });
      const d2 = await core.diffMemory({ target, from: rp.id, to: rp2.id });
      assert.deepEqual(
        d2.added.map((c) => c.after!.text),
        ['Release is on Monday'],
      );
      assert.equal(d2.changed.length, 1);
      const none = await core.diffMemory({ target, from: rp2.id });
      assert.equal(none.added.length + none.removed.length + none.changed.length, 0);

      // the restore confirmation lists what will be lost (interactive CLI; answer no: nothing changes)
      const before = await hashTree(home);
      let err = '';
      const io: CliIO = {
        out: () => undefined,
        err: (s) => (err += s + '\n'),
        isTTY: true,
        confirm: async () => false,
      };
      const code = await runCli(
        ['restore-point', 'restore', rp.id, '--target', target, '--scope', 'both', '--state-dir', stateDir],
        (o) => new Core(o),
        io,
      );
      assert.equal(code, 1);
      assert.match(err, /memory learned since the restore point, will be lost \(2\):[\s\S]*Release is on Monday/);
      assert.match(err, /actions the agent took since then that a restore does NOT undo \(2\):[\s\S]*git push/);
      assert.match(err, /Snapshots do not undo the outside world/);
      assert.deepEqual(await hashTree(home), before);

      // restore scope agent puts state.db back (no stale -wal/-shm left next to it)
      await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: [store] });
      await assert.rejects(fs.stat(db + '-wal'));
      assert.equal(await withReadOnlyDb(db, (d) => d.get('SELECT count(*) AS n FROM messages')!.n), 2);
      assert.match(await fs.readFile(path.join(home, 'memories', 'MEMORY.md'), 'utf8'), /port 2222/);
    } finally {
      await w.kill();
    }
  });

  it('restore scope machine keeps the current state.db, its WAL and the memory files; scope both puts the captured ones back', async () => {
    const db = path.join(home, 'state.db');
    const now = Date.now() / 1000;
    makeStateDb(db, { wal: true, messages: [toolCall('send_message', { text: 'one' }, now)] });
    const core = new Core({ stateDir });
    const rp = await core.createRestorePoint({ target, stores: [store] });
    await fs.writeFile(path.join(home, 'setup.sh'), 'npm install left-pad\n'); // machine change
    const w = await holdWalWriter(db, [toolCall('send_message', { text: 'two' }, now + 5)]);
    try {
      await core.addMemory({ store, text: 'Learned after the restore point' });
      const walBefore = await fs.readFile(db + '-wal');
      await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
      await assert.rejects(fs.stat(path.join(home, 'setup.sh')), 'the machine change was rolled back');
      assert.deepEqual(await fs.readFile(db + '-wal'), walBefore, 'state.db-wal untouched');
      assert.equal(await withReadOnlyDb(db, (d) => d.get('SELECT count(*) AS n FROM messages')!.n), 2);
      assert.match(
        await fs.readFile(path.join(home, 'memories', 'MEMORY.md'), 'utf8'),
        /Learned after the restore point/,
      );
    } finally {
      await w.kill();
    }
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'both' });
    assert.equal(await withReadOnlyDb(db, (d) => d.get('SELECT count(*) AS n FROM messages')!.n), 1);
    await assert.rejects(fs.stat(db + '-wal'));
    assert.doesNotMatch(await fs.readFile(path.join(home, 'memories', 'MEMORY.md'), 'utf8'), /Learned after/);
  });

  it('CLI (real binary): show --json, edit, failed edits exit non-zero and leave the home byte-identical, diff', async () => {
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [{ id: 's9', source: 'cli', started: 1767000000 }],
      messages: [
        memoryCall({ action: 'add', target: 'user', content: 'Uses VS Code with Vim keybindings.' }, 1767000000, 's9'),
      ],
    });
    const env = { AGENTKEEP_STATE_DIR: stateDir };
    const list = JSON.parse((await runSidecar(['memory', 'list', '--store', store, '--json'], env)).stdout);
    const vim = list.stores
      .flatMap((f: { entries: Array<{ id: string; text: string }> }) => f.entries)
      .find((e: { text: string }) => /Vim/.test(e.text));
    const show = await runSidecar(['memory', 'show', '--store', store, '--entry', vim.id.slice(0, 6), '--json'], env);
    assert.equal(show.code, 0, show.stderr);
    const sj = JSON.parse(show.stdout);
    assert.equal(sj.provenance.traces[0].session, 's9');
    const human = await runSidecar(['memory', 'show', '--store', store, '--entry', vim.id], env);
    assert.match(human.stdout, /Provenance:\n {2}add {2}2025-12-29T09:20:00.000Z {2}session s9 \(cli\)/);

    const before = await hashTree(home);
    const fails: string[][] = [
      ['memory', 'edit', '--store', store, '--entry', 'ffffffff', '--text', 'x'],
      ['memory', 'edit', '--store', store, '--entry', vim.id, '--text', 'x', '--expected-hash', '0'.repeat(64)],
      ['memory', 'edit', '--store', store, '--entry', vim.id, '--text', 'y'.repeat(2000)],
      ['memory', 'remove', '--store', store, '--entry', 'abc'],
      ['memory', 'edit', '--store', store, '--entry', vim.id],
    ];
    for (const args of fails) {
      const r = await runSidecar([...args, '--json'], env);
      assert.notEqual(r.code, 0, args.join(' '));
      const e = JSON.parse(r.stdout).error;
      assert.ok(e.code && e.message && e.hint, r.stdout);
    }
    assert.deepEqual(await hashTree(home), before, 'failed edits left the home byte-identical');

    const rp = JSON.parse(
      (await runSidecar(['restore-point', 'create', '--target', target, '--store', store, '--json'], env)).stdout,
    );
    const ed = await runSidecar(
      ['memory', 'edit', '--store', store, '--entry', vim.id, '--text', 'Uses VS Code with Emacs keybindings.'],
      env,
    );
    assert.equal(ed.code, 0, ed.stderr);
    assert.match(
      ed.stdout,
      /Undo: agentkeep memory edit --store \S+ --entry [0-9a-f]{12} --text 'Uses VS Code with Vim keybindings.'/,
    );
    const diff = await runSidecar(['memory', 'diff', '--store', store, '--from', rp.id], env); // target derived from the one store
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, /~ [0-9a-f]{12} -> [0-9a-f]{12} {2}Uses VS Code with Emacs keybindings\./);
    const lint = await runSidecar(['memory', 'lint', '--store', store, '--json'], env);
    assert.equal(JSON.parse(lint.stdout).error?.code ?? 'ok', lint.code === 0 ? 'ok' : 'unsupported');
  });
});
