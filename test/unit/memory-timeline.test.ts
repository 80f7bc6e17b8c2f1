/**
 * The memory timeline (issue 12 items 4 and 5) on real parts: a real Hermes home (the shared fixture),
 * a real state.db (python3 sqlite3, Hermes' schema: helpers/hermes-db.ts), the agent hook's records
 * through memory.recordWrite, real restore points of a dir: target, and the CLI: memory history,
 * undo-write (compare-and-swap, itself undoable), restore-entry, forget and lint --fix.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli, type CliIO } from '../../sidecar/cli';
import { Core } from '../../sidecar/core/core';
import { unifiedDiff } from '../../sidecar/memory/ops/editset';
import { FIXTURES } from './helpers/paths';
import { copyFixture, makeStateDb, memoryCall } from './helpers/hermes-db';

const STAGING = 'Staging server 10.0.1.50 listens for SSH on port 2222, key ~/.ssh/staging_ed25519';

describe('memory timeline: history, undo, restore-entry, forget, lint --fix', function () {
  this.timeout(60_000);
  let tmp: string;
  let home: string;
  let store: string;
  let target: string;
  let stateDir: string;
  let mem: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-timeline-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home);
    await fs.rm(path.join(home, 'state.db'));
    store = `hermes:${home}`;
    target = `dir:${home}`;
    stateDir = path.join(tmp, 'state');
    mem = path.join(home, 'memories', 'MEMORY.md');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const cli = async (args: string[], confirm = false): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const io: CliIO = {
      out: (s) => (out += s + '\n'),
      err: (s) => (err += s + '\n'),
      isTTY: true,
      confirm: async () => confirm,
    };
    const code = await runCli([...args, '--state-dir', stateDir], (o) => new Core(o), io);
    return { code: code ?? 0, out, err };
  };

  it("merges the agent's tool calls (state.db), hook records, AgentKeep writes and captures; per entry the whole chain", async () => {
    const t0 = Math.floor(Date.now() / 1000) - 3600;
    // the agent added the staging entry, then replaced it through old_text (a part of it)
    const moved = STAGING.replace('port 2222', 'port 2200');
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [{ id: 's1', source: 'telegram', started: t0 }],
      messages: [
        memoryCall({ action: 'add', target: 'memory', content: STAGING }, t0 + 10, 's1', 'call_add'),
        memoryCall(
          { action: 'replace', target: 'memory', old_text: 'port 2222', content: moved },
          t0 + 20,
          's1',
          'call_rep',
        ),
      ],
    });
    await fs.writeFile(mem, (await fs.readFile(mem, 'utf8')).replace(STAGING, moved));
    const core = new Core({ stateDir });
    // the hook saw the replace: exact file before/after, merged into the state.db write
    const before = (await fs.readFile(mem, 'utf8')).replace(moved, STAGING);
    await core.recordMemoryWrite({
      store,
      file: mem,
      action: 'replace',
      target: 'memory',
      content: moved,
      oldText: 'port 2222',
      before,
      after: await fs.readFile(mem, 'utf8'),
      session: 's1',
      toolCallId: 'call_rep',
    });
    const rp1 = await core.createRestorePoint({ target, stores: [store], label: 'one' });
    // an edit by hand between two restore points (no write recorded)
    await fs.appendFile(mem, '\n§\nHand-written: the wiki is at wiki.example.org');
    const rp2 = await core.createRestorePoint({ target, stores: [store], label: 'two' });
    // and AgentKeep's own edit
    const list = await core.listMemory({ stores: [store] });
    const tabs = list.stores[0].entries.find((e) => e.text.startsWith('Project uses tabs'))!;
    await core.editMemory({ store, entry: tabs.id, text: 'Project uses spaces, 100-char lines.' });

    const h = await core.memoryHistory({ stores: [store], target });
    assert.equal(h.warnings, undefined);
    const bySource = (s: string) => h.writes.filter((w) => w.source === s);
    assert.equal(bySource('agent').length, 2);
    assert.equal(bySource('hook').length, 0, 'the hook record is merged into its state.db write');
    const rep = bySource('agent')[1];
    assert.equal(rep.action, 'replace');
    assert.equal(rep.before, STAGING, 'the whole entry before, not just old_text');
    assert.equal(rep.oldText, 'port 2222');
    assert.equal(rep.after, moved);
    assert.equal(rep.toolCallId, 'call_rep');
    assert.equal(rep.session, 's1');
    const byHand = bySource('restore-point');
    assert.equal(byHand.length, 1, JSON.stringify(byHand));
    assert.equal(byHand[0].restorePoint, rp2.id);
    assert.match(byHand[0].after!, /wiki\.example\.org/);
    assert.match(byHand[0].why!, new RegExp(rp1.id));
    assert.equal(byHand[0].file, mem, 'the live file, not the capture');
    const mine = bySource('agentkeep');
    assert.equal(mine.length, 1);
    assert.equal(mine[0].before, tabs.text);
    // oldest first
    const times = h.writes.map((w) => w.time ?? '');
    assert.deepEqual(times, [...times].sort());

    // per entry: the chain from the add through the replace
    const chain = await core.memoryHistory({ stores: [store], entry: rep.entry! });
    assert.deepEqual(
      chain.writes.map((w) => w.id),
      bySource('agent').map((w) => w.id),
    );

    // the CLI: text and JSON
    const t = await cli(['memory', 'history', '--store', store]);
    assert.equal(t.code, 0, t.err);
    assert.match(t.out, /db:\d+:0 +agent +add/);
    assert.match(t.out, /- Staging server 10\.0\.1\.50 listens for SSH on port 2222/);
    assert.match(t.out, /\+ Staging server 10\.0\.1\.50 listens for SSH on port 2200/);
    // per file: the tabs edit is in MEMORY.md; USER.md has no write
    const perFile = await core.memoryHistory({ stores: [store], target, file: 'MEMORY.md' });
    assert.equal(perFile.writes.length, h.writes.length);
    assert.equal((await core.memoryHistory({ stores: [store], file: 'USER.md' })).writes.length, 0);
    const j = await cli(['memory', 'history', '--store', store, '--entry', rep.entry!, '--json']);
    assert.equal((JSON.parse(j.out) as { writes: unknown[] }).writes.length, 2);
  });

  it('a refused tool call is marked refused and cannot be undone; a hook record without state.db has the exact before', async () => {
    const t0 = Math.floor(Date.now() / 1000) - 600;
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [{ id: 's1', source: 'cli', started: t0 }],
      messages: [
        memoryCall({ action: 'add', target: 'memory', content: 'x'.repeat(5000) }, t0, 's1', 'call_big'),
        {
          session: 's1',
          role: 'tool',
          content: '{"success": false, "error": "over the limit"}',
          toolCallId: 'call_big',
          time: t0 + 1,
        },
      ],
    });
    const core = new Core({ stateDir });
    const h = await core.memoryHistory({ stores: [store] });
    assert.equal(h.writes.length, 1);
    assert.equal(h.writes[0].refused, true);
    await assert.rejects(
      core.memoryUndoWrite({ stores: [store], write: h.writes[0].id }),
      /refused by the agent's tool/,
    );
    await fs.rm(path.join(home, 'state.db'));
    const before = await fs.readFile(mem, 'utf8');
    const after = before.replace(STAGING, 'Staging is gone');
    await fs.writeFile(mem, after);
    await core.recordMemoryWrite({
      store,
      file: mem,
      action: 'replace',
      target: 'memory',
      content: 'Staging is gone',
      oldText: 'Staging',
      before,
      after,
      toolCallId: 'c9',
    });
    const h2 = await core.memoryHistory({ stores: [store] });
    const hook = h2.writes.find((w) => w.source === 'hook')!;
    assert.equal(hook.before, STAGING, 'the hook record gives the whole entry before');
    assert.equal(hook.after, 'Staging is gone');
    await core.memoryUndoWrite({ stores: [store], write: hook.id });
    assert.equal(await fs.readFile(mem, 'utf8'), before, 'undone byte for byte (same position: a replace in place)');
  });

  it('a damaged state.db is a warning, never an empty timeline', async () => {
    await fs.writeFile(path.join(home, 'state.db'), 'not a database at all, just text');
    const core = new Core({ stateDir });
    const list = await core.listMemory({ stores: [store] });
    await core.removeMemory({ store, entry: list.stores[0].entries[0].id });
    const h = await core.memoryHistory({ stores: [store] });
    assert.equal(h.writes.length, 1);
    assert.match(h.warnings![0], /agent's own memory writes are not shown/);
  });

  it("undoes one write of the agent's (compare-and-swap), the undo itself undoable; refuses when the entry changed since", async () => {
    const t0 = Math.floor(Date.now() / 1000) - 600;
    const added = 'Release freeze starts on 2026-12-20';
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [{ id: 's1', source: 'cli', started: t0 }],
      messages: [memoryCall({ action: 'add', target: 'memory', content: added }, t0 + 1, 's1', 'call_a')],
    });
    await fs.appendFile(mem, `\n§\n${added}`);
    const original = await fs.readFile(mem, 'utf8');
    const core = new Core({ stateDir });
    const h = await core.memoryHistory({ stores: [store] });
    const w = h.writes.find((x) => x.after === added)!;
    const u = await cli(['memory', 'undo-write', '--store', store, '--write', w.id]);
    assert.equal(u.code, 0, u.err);
    assert.ok(!(await fs.readFile(mem, 'utf8')).includes(added), 'the entry is gone');
    assert.ok((await fs.readFile(mem, 'utf8')).includes(STAGING), 'the other entries stay');
    // the undo is in the log and can be undone
    const h2 = await core.memoryHistory({ stores: [store] });
    const undo = h2.writes.find((x) => x.undoOf === w.id)!;
    assert.equal(undo.source, 'agentkeep');
    assert.equal(undo.action, 'remove');
    await core.memoryUndoWrite({ stores: [store], write: undo.id });
    assert.ok((await fs.readFile(mem, 'utf8')).includes(added), 'undo of the undo puts it back');
    assert.equal((await fs.readFile(mem, 'utf8')).length, original.length);
    // the entry changed since the agent's write: its undo is refused, nothing written
    const again = (await core.listMemory({ stores: [store] })).stores[0].entries.find((e) => e.text === added)!;
    await core.editMemory({ store, entry: again.id, text: 'Release freeze starts on 2026-12-22' });
    const snap = await fs.readFile(mem, 'utf8');
    await assert.rejects(core.memoryUndoWrite({ stores: [store], write: w.id }), (e: Error & { kind?: string }) => {
      assert.equal(e.kind, 'Conflict');
      assert.match(e.message, /is not there any more: a later write changed or removed it/);
      return true;
    });
    assert.equal(await fs.readFile(mem, 'utf8'), snap);
    // an unknown write id is named
    const bad = await cli(['memory', 'undo-write', '--store', store, '--write', 'db:999:0']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /No write db:999:0/);
  });

  it('brings one entry back from a restore point without restoring the store', async () => {
    const core = new Core({ stateDir });
    const rp = await core.createRestorePoint({ target, stores: [store], label: 'before' });
    const entries = (await core.listMemory({ stores: [store] })).stores[0].entries;
    const gone = entries.find((e) => e.text === STAGING)!;
    await core.removeMemory({ store, entry: gone.id });
    await core.addMemory({ store, text: 'A newer fact learned after the restore point' });
    const r = await cli(['memory', 'restore-entry', '--store', store, '--from', rp.id, '--entry', gone.id.slice(0, 6)]);
    assert.equal(r.code, 0, r.err);
    const now = await fs.readFile(mem, 'utf8');
    assert.ok(now.includes(STAGING), 'the entry is back');
    assert.ok(now.includes('A newer fact learned after the restore point'), 'what came after stays');
    const twice = await core.memoryRestoreEntry({ target, from: rp.id, store, entry: gone.id });
    assert.equal(twice.alreadyPresent, true);
    const h = await core.memoryHistory({ stores: [store] });
    assert.equal(h.writes[h.writes.length - 1].restorePoint, rp.id);
  });

  it('forgets a fact in every file and store as one reviewed change, undone in one step', async () => {
    const home2 = path.join(tmp, 'hermes2');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home2);
    await fs.rm(path.join(home2, 'state.db'));
    const store2 = `hermes:${home2}`;
    await fs.appendFile(
      mem,
      `\n§\nstaging server 10.0.1.50 listens for SSH on port 2222,   key ~/.ssh/staging_ed25519`,
    );
    const before1 = await fs.readFile(mem, 'utf8');
    const before2 = await fs.readFile(path.join(home2, 'memories', 'MEMORY.md'), 'utf8');
    const core = new Core({ stateDir });
    const id = (await core.listMemory({ stores: [store] })).stores[0].entries.find((e) => e.text === STAGING)!.id;
    // the proposal writes nothing
    const p = await cli(['memory', 'forget', '--store', store, '--store', store2, '--entry', id]);
    assert.equal(p.code, 0, p.err);
    assert.match(p.out, /Nothing written/);
    assert.equal((p.out.match(/^remove /gm) ?? []).length, 3, p.out);
    assert.match(p.out, /^-Staging server 10\.0\.1\.50/m);
    assert.equal(await fs.readFile(mem, 'utf8'), before1);
    // declined at the prompt: nothing written; accepted: written
    assert.match(
      (await cli(['memory', 'forget', '--store', store, '--store', store2, '--entry', id, '--apply'])).out,
      /Nothing written/,
    );
    assert.equal(await fs.readFile(mem, 'utf8'), before1);
    const a = await cli(['memory', 'forget', '--store', store, '--store', store2, '--entry', id, '--apply'], true);
    assert.equal(a.code, 0, a.err);
    const group = /group (\S+)\./.exec(a.out)![1];
    assert.ok(!(await fs.readFile(mem, 'utf8')).includes('10.0.1.50'));
    assert.ok(!(await fs.readFile(path.join(home2, 'memories', 'MEMORY.md'), 'utf8')).includes('10.0.1.50'));
    // one undo step puts all three back
    const u = await core.memoryUndoWrite({ stores: [store, store2], write: group });
    assert.equal(u.writes.length, 3);
    assert.equal((await fs.readFile(mem, 'utf8')).split('10.0.1.50').length - 1, 2);
    assert.equal((await fs.readFile(path.join(home2, 'memories', 'MEMORY.md'), 'utf8')).length, before2.length);
  });

  it('lint --fix proposes one edit set as a diff, applies only with the proposal hashes, undone as one step', async () => {
    // the same fact in USER.md too (a copy across files)
    const user = path.join(home, 'memories', 'USER.md');
    await fs.appendFile(user, `\n§\n${STAGING}`);
    const count = async (): Promise<number> =>
      (await fs.readFile(mem, 'utf8')).split(STAGING).length -
      1 +
      (await fs.readFile(user, 'utf8')).split(STAGING).length -
      1;
    const before = await fs.readFile(mem, 'utf8');
    const core = new Core({ stateDir });
    const p = await core.memoryLintFix({ stores: [store] });
    assert.equal(p.applied, false);
    assert.equal(p.edits.length, 1, JSON.stringify(p.edits));
    assert.equal(p.edits[0].before, STAGING);
    assert.match(p.edits[0].reason, /^duplicate: a copy of/);
    assert.match(p.diff, /^@@ .* @@$/m);
    assert.match(p.diff, /^-Staging server/m);
    assert.equal(await fs.readFile(mem, 'utf8'), before);
    // a file changed since the proposal: refused, nothing written
    const expected = Object.fromEntries(p.files.map((f) => [f.file, f.contentHash]));
    const edited = p.files[0].file;
    await fs.appendFile(edited, '\n§\nSomething the agent wrote meanwhile');
    const changed = await fs.readFile(edited, 'utf8');
    await assert.rejects(core.memoryLintFix({ stores: [store], apply: true, expected }), /changed since the proposal/);
    const hashes = async (): Promise<Record<string, string>> =>
      Object.fromEntries((await core.memoryLintFix({ stores: [store] })).files.map((f) => [f.file, f.contentHash]));
    // a proposal file the change no longer touches (its copy was removed meanwhile): refused too
    await assert.rejects(
      core.memoryLintFix({
        stores: [store],
        apply: true,
        expected: { ...(await hashes()), '/elsewhere/MEMORY.md': 'ab' },
      }),
      /no longer touches it/,
    );
    assert.equal(await fs.readFile(edited, 'utf8'), changed);
    // the CLI: --fix --apply --yes writes it; the file keeps one copy
    const r = await cli(['memory', 'lint', '--store', store, '--fix', '--apply', '--yes']);
    assert.equal(r.code, 0, r.err);
    assert.equal(await count(), 1);
    const group = /group (\S+)\./.exec(r.out)![1];
    const u = await core.memoryUndoWrite({ stores: [store], write: group });
    assert.equal(u.writes.length, 1);
    assert.equal(await count(), 2, 'one undo step puts the copy back');
    // without a terminal --apply needs --yes
    const io: CliIO = { out: () => undefined, err: () => undefined, isTTY: false, confirm: async () => true };
    assert.notEqual(
      await runCli(
        ['memory', 'lint', '--store', store, '--fix', '--apply', '--state-dir', stateDir],
        (o) => new Core(o),
        io,
      ),
      0,
    );
  });

  it('unifiedDiff: hunks with context and line numbers', () => {
    const a = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', ''].join('\n');
    const b = ['a', 'b', 'c', 'd', 'e', 'g', 'h', 'i', 'j', 'k', ''].join('\n');
    assert.equal(
      unifiedDiff(a, b, 'a/x', 'b/x'),
      '--- a/x\n+++ b/x\n@@ -3,8 +3,8 @@\n c\n d\n e\n-f\n g\n h\n i\n j\n+k\n',
    );
    assert.equal(unifiedDiff(a, a, 'a/x', 'b/x'), '');
    // Hermes writes MEMORY.md without a final newline: the diff says so, as diff(1) and git do
    assert.match(unifiedDiff('x\ny', 'x\nz', 'a/m', 'b/m'), /-y\n\\ No newline at end of file\n\+z\n\\ No newline/);
  });
});
