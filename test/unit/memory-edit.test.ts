/**
 * memory.show / edit / remove / add on real Hermes homes (copies of the shared fixtures and the
 * issue inputs), through the core: ids and prefixes, compare-and-swap, drift, budget, the lock,
 * backups and undo. Every refused write is checked byte-for-byte against the whole home.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { findHermesHomes } from '../../sidecar/memory/hermes';
import { lockHermesFile } from '../../sidecar/memory/hermes/lock';
import { expectAgentKeepError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';
import { hashTree, copyFixture } from './helpers/hermes-db';

const FIXTURE = path.join(FIXTURES, 'memory', 'hermes');
const ISSUES = path.join(FIXTURES, 'memory', 'issues');

const rejectsKind = expectAgentKeepError;

describe('memory show/edit/remove/add (Hermes, real files)', () => {
  let tmp: string;
  let home: string;
  let store: string;
  let core: Core;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-memedit-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(FIXTURE, home);
    store = `hermes:${home}`;
    core = new Core({ stateDir: path.join(tmp, 'state') });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const memFile = (): string => path.join(home, 'memories', 'MEMORY.md');
  const idOf = async (needle: string): Promise<string> => {
    const r = await core.listMemory({ stores: [store] });
    const e = r.stores.flatMap((f) => f.entries).find((x) => x.text.includes(needle));
    assert.ok(e, `entry with ${needle}`);
    return e.id;
  };

  it('show resolves a unique prefix; returns file usage, content hash and entry area', async () => {
    const id = await idOf('Staging server');
    const r = await core.showMemory({ stores: [store], entry: id.slice(0, 5) });
    assert.equal(r.entry.id, id);
    assert.equal(r.entry.area, 'memory');
    assert.equal(r.store, store);
    assert.equal(r.file.kind, 'hermes-memory');
    assert.equal(r.file.usage?.limit, 2200);
    assert.equal(
      r.contentHash,
      createHash('sha256')
        .update(await fs.readFile(memFile()))
        .digest('hex'),
    );
    assert.ok(!('entries' in r.file));
    await rejectsKind(core.showMemory({ stores: [store], entry: 'abc' }), 'InvalidParams', /at least 4/);
    await rejectsKind(core.showMemory({ stores: [store], entry: 'ffffffff' }), 'EntryNotFound', /memory list/);
  });

  it('an ambiguous prefix is a Conflict naming the candidates', async () => {
    // two entries whose ids share a 4-char prefix: search a small space for a collision
    const texts: string[] = [];
    const seen = new Map<string, string>();
    for (let i = 0; texts.length < 2; i++) {
      const t = `fact number ${i}`;
      const p = createHash('sha256').update(t).digest('hex').slice(0, 4);
      const other = seen.get(p);
      if (other) texts.push(other, t);
      seen.set(p, t);
    }
    await fs.writeFile(memFile(), texts.join('\n§\n'));
    const prefix = createHash('sha256').update(texts[0]).digest('hex').slice(0, 4);
    const e = await rejectsKind(
      core.showMemory({ stores: [store], entry: prefix }),
      'Conflict',
      /ambiguous.*more characters/s,
    );
    assert.match(e.message, new RegExp(createHash('sha256').update(texts[1]).digest('hex').slice(0, 12)));
  });

  it('edit replaces the whole entry, backs up the replaced bytes, and its undo puts them back byte for byte', async () => {
    const before = await fs.readFile(memFile());
    const id = await idOf('Staging server');
    const shown = await core.showMemory({ stores: [store], entry: id });
    const r = await core.editMemory({
      store,
      entry: id,
      text: 'Staging server 10.0.1.50 listens for SSH on port 2223',
      expectedHash: shown.contentHash,
    });
    assert.equal(r.previous.id, id);
    assert.notEqual(r.entry.id, id);
    const after = await fs.readFile(memFile(), 'utf8');
    assert.match(after, /port 2223\n§\nProject uses tabs/);
    assert.equal(r.contentHash, createHash('sha256').update(after).digest('hex'));
    // backup of the exact bytes replaced
    const bdir = path.join(tmp, 'state', 'memory-backups');
    const [sub] = await fs.readdir(bdir);
    const backups = (await fs.readdir(path.join(bdir, sub))).filter((n) => n.endsWith('MEMORY.md'));
    assert.equal(backups.length, 1);
    assert.deepEqual(await fs.readFile(path.join(bdir, sub, backups[0])), before);
    // undo
    const u = await core.editMemory(r.undo);
    assert.equal(u.entry.id, id);
    assert.deepEqual(await fs.readFile(memFile()), before);
    // the lock file Hermes uses exists and is empty
    assert.equal((await fs.stat(`${memFile()}.lock`)).size, 0);
  });

  it('remove and add (its undo) work on USER.md too', async () => {
    const userFile = path.join(home, 'memories', 'USER.md');
    const before = await fs.readFile(userFile, 'utf8');
    const id = await idOf('Vim keybindings');
    const r = await core.removeMemory({ store, entry: id });
    assert.equal(r.removed.text, 'Uses VS Code with Vim keybindings.');
    assert.equal(r.undo.file, 'user');
    assert.doesNotMatch(await fs.readFile(userFile, 'utf8'), /Vim/);
    const a = await core.addMemory(r.undo);
    assert.equal(a.entry.id, id);
    assert.equal(await fs.readFile(userFile, 'utf8'), before);
    // exact duplicate: not added twice (as Hermes)
    await core.addMemory(r.undo);
    assert.equal(await fs.readFile(userFile, 'utf8'), before);
    // add into a missing file creates it
    await fs.rm(userFile);
    await core.addMemory({ store, text: 'Likes tea', file: 'user' });
    assert.equal(await fs.readFile(userFile, 'utf8'), 'Likes tea');
    await rejectsKind(core.addMemory({ store, text: 'x', file: 'soul' }), 'InvalidParams', /memory .*or user/);
  });

  it('a concurrent write (hermes-26045 external append after show) is a Conflict; the home stays byte-identical', async () => {
    await fs.copyFile(path.join(ISSUES, 'hermes-26045-before.MEMORY.md'), memFile());
    const id = await idOf('staging port');
    const shown = await core.showMemory({ stores: [store], entry: id });
    await fs.copyFile(path.join(ISSUES, 'hermes-26045-external-append.MEMORY.md'), memFile());
    const snap = await hashTree(home);
    await rejectsKind(
      core.editMemory({
        store,
        entry: shown.entry.id,
        text: 'Entry B: staging port 2223',
        expectedHash: shown.contentHash,
      }),
      'Conflict',
      /changed since it was read/,
    );
    await rejectsKind(core.removeMemory({ store, entry: shown.entry.id, expectedHash: shown.contentHash }), 'Conflict');
    await rejectsKind(core.addMemory({ store, text: 'new', expectedHash: shown.contentHash }), 'Conflict');
    // without the hash: the old id no longer exists (the append changed entry B's text): not found
    await rejectsKind(
      core.editMemory({ store, entry: shown.entry.id, text: 'Entry B: staging port 2223' }),
      'EntryNotFound',
    );
    assert.deepEqual(await hashTree(home), snap);
    // the appended paragraph is reported as a hand edit Hermes' own drift rule misses
    const list = await core.listMemory({ stores: [store] });
    assert.ok(
      list.stores[0].warnings?.some((w) => /absorbed/.test(w)),
      JSON.stringify(list.stores[0].warnings),
    );
    assert.ok(!list.stores[0].warnings?.some((w) => /^Drift/.test(w)));
  });

  it('drift (the file no longer parses back to its entries): refused, a .bak kept, MEMORY.md untouched', async () => {
    const drifted = 'Entry A: user prefers tabs\n§\n\nEntry B: staging port 2222';
    await fs.writeFile(memFile(), drifted);
    const id = await idOf('staging port');
    const snap = await hashTree(home);
    const e = await rejectsKind(
      core.editMemory({ store, entry: id, text: 'Entry B: staging port 2223' }),
      'Conflict',
      /drifted.*\.bak/s,
    );
    const after = await hashTree(home);
    const added = Object.keys(after).filter((k) => !(k in snap));
    assert.equal(added.length, 1);
    assert.match(added[0], /^memories\/MEMORY\.md\.bak\.\d+$/);
    assert.ok(e.message.includes(added[0].split('/')[1]));
    for (const k of Object.keys(snap)) assert.equal(after[k], snap[k], k);
    assert.equal(await fs.readFile(path.join(home, added[0]), 'utf8'), drifted);
    // list says so
    const list = await core.listMemory({ stores: [store] });
    assert.ok(list.stores[0].warnings?.some((w) => /^Drift/.test(w)));
  });

  it('over budget: OverBudget and nothing written; a shrinking edit of an over-budget file is allowed', async () => {
    await fs.writeFile(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: 400\n');
    const snap = await hashTree(home);
    await rejectsKind(
      core.addMemory({ store, text: 'x'.repeat(100) }),
      'OverBudget',
      /400-char limit.*Nothing was written/s,
    );
    const id = await idOf('Staging server');
    await rejectsKind(core.editMemory({ store, entry: id, text: 'y'.repeat(200) }), 'OverBudget');
    assert.deepEqual(await hashTree(home), snap);
    await fs.writeFile(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: 300\n'); // now 378 > 300
    await core.editMemory({ store, entry: id, text: 'Staging SSH port 2222' });
    assert.match(await fs.readFile(memFile(), 'utf8'), /Staging SSH port 2222/);
  });

  it('read-only files (skills, SOUL.md) refuse edits with the reason; bad text is refused', async () => {
    await fs.writeFile(
      path.join(home, 'SOUL.md'),
      '# Soul\n\nYou are a careful agent.\n\n- Never push to main.\n- Ask before sudo.\n',
    );
    const files = (await core.listMemory({ stores: [store] })).stores;
    const soul = files.find((f) => f.kind === 'hermes-soul')!;
    assert.deepEqual(
      soul.entries.map((e) => e.text),
      ['You are a careful agent.', 'Never push to main.', 'Ask before sudo.'],
    );
    const snap = await hashTree(home);
    await rejectsKind(core.editMemory({ store, entry: soul.entries[0].id, text: 'x' }), 'Unsupported', /SOUL\.md/);
    const skill = files.find((f) => f.kind === 'hermes-skill')!;
    await rejectsKind(core.removeMemory({ store, entry: skill.entries[0].id }), 'Unsupported', /skill/i);
    const id = await idOf('Staging server');
    await rejectsKind(core.editMemory({ store, entry: id, text: 'a\n§\nb' }), 'InvalidParams', /delimiter/);
    await rejectsKind(core.editMemory({ store, entry: id, text: '   ' }), 'InvalidParams', /empty/);
    assert.deepEqual(await hashTree(home), snap);
    // provenance says why it is not traced
    const shown = await core.showMemory({ stores: [store], entry: soul.entries[1].id });
    assert.match(shown.provenance.note ?? '', /SOUL\.md is written by hand/);
  });

  it('waits for the flock Hermes holds on MEMORY.md.lock (python fcntl.flock), then writes', async () => {
    const lockFile = `${memFile()}.lock`;
    const py = spawn(
      'python3',
      [
        '-c',
        'import fcntl,sys,time\nf=open(sys.argv[1],"a")\nfcntl.flock(f,fcntl.LOCK_EX)\nprint("held",flush=True)\ntime.sleep(0.8)\nf.write("")\nfcntl.flock(f,fcntl.LOCK_UN)\nprint("released",flush=True)\nsys.stdin.read()',
        lockFile,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      const events: Array<[string, number]> = [];
      await new Promise<void>((resolve) =>
        py.stdout.on('data', (d: Buffer) => {
          for (const w of d.toString().split(/\s+/).filter(Boolean)) events.push([w, Date.now()]);
          if (d.toString().includes('held')) resolve();
        }),
      );
      const id = await idOf('Staging server');
      await core.editMemory({ store, entry: id, text: 'Staging SSH port 2224' });
      const done = Date.now();
      const released = events.find((e) => e[0] === 'released');
      assert.ok(released, 'python released the lock before the edit finished');
      assert.ok(released[1] <= done);
      assert.match(await fs.readFile(memFile(), 'utf8'), /Staging SSH port 2224/);
    } finally {
      py.kill('SIGKILL');
    }
  });
});

describe('Hermes memory lock (real flock)', () => {
  it('a holder that keeps the lock past the wait is TargetBusy; our lock blocks a python fcntl.flock until released', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-lock-'));
    const lockFile = path.join(dir, 'MEMORY.md.lock');
    const mine = await lockHermesFile(lockFile);
    try {
      assert.equal(mine.held, true);
      await rejectsKind(lockHermesFile(lockFile, 1), 'TargetBusy', /holds the memory lock/);
      // python (as Hermes) cannot take it without blocking while we hold it
      const r = spawnSync('python3', [
        '-c',
        'import fcntl,sys\nf=open(sys.argv[1],"a")\ntry:\n  fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print("got")\nexcept BlockingIOError: print("blocked")',
        lockFile,
      ]);
      assert.equal(r.stdout.toString().trim(), 'blocked');
      await mine.release();
      const r2 = spawnSync('python3', [
        '-c',
        'import fcntl,sys\nf=open(sys.argv[1],"a")\nfcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print("got")',
        lockFile,
      ]);
      assert.equal(r2.stdout.toString().trim(), 'got');
    } finally {
      await mine.release();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('Hermes homes, archive and skills (real files)', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-homes-'));
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('findHermesHomes: HERMES_HOME, ~/.hermes and their profiles that are homes', async () => {
    const user = path.join(tmp, 'user');
    const custom = path.join(tmp, 'custom');
    await fs.mkdir(path.join(user, '.hermes', 'memories'), { recursive: true });
    await fs.mkdir(path.join(user, '.hermes', 'profiles', 'work', 'memories'), { recursive: true });
    await fs.mkdir(path.join(user, '.hermes', 'profiles', 'empty'), { recursive: true });
    await fs.mkdir(custom, { recursive: true });
    await fs.writeFile(path.join(custom, 'config.yaml'), 'model: x\n');
    assert.deepEqual(await findHermesHomes({ HERMES_HOME: custom }, user), [
      custom,
      path.join(user, '.hermes'),
      path.join(user, '.hermes', 'profiles', 'work'),
    ]);
    assert.deepEqual(await findHermesHomes({}, path.join(tmp, 'nobody')), []);
  });

  it('ARCHIVE.jsonl is read leniently; skills without front matter are named by their directory', async () => {
    const h = path.join(tmp, 'h');
    await fs.mkdir(path.join(h, 'memories'), { recursive: true });
    await fs.mkdir(path.join(h, 'skills', 'ops', 'no-fm'), { recursive: true });
    await fs.writeFile(
      path.join(h, 'memories', 'ARCHIVE.jsonl'),
      '{"content":"Old fact","evicted_at":1767000000}\nnot json\n"bare string entry"\n{"other":1}\n\n',
    );
    await fs.writeFile(path.join(h, 'skills', 'ops', 'no-fm', 'SKILL.md'), '# Just a body\n');
    const core = new Core({ stateDir: path.join(tmp, 'state') });
    const files = (await core.listMemory({ stores: [`hermes:${h}`] })).stores;
    const arch = files.find((f) => f.kind === 'hermes-archive')!;
    assert.deepEqual(
      arch.entries.map((e) => e.text),
      ['Old fact', 'bare string entry'],
    );
    assert.equal(arch.entries[0].updatedAt, new Date(1767000000 * 1000).toISOString());
    assert.equal(arch.warnings?.length, 2);
    assert.match(arch.warnings![0], /line 2 is not JSON/);
    const sk = files.find((f) => f.kind === 'hermes-skill')!;
    assert.equal(sk.entries[0].text, 'no-fm');
    assert.match(sk.warnings![0], /no YAML front matter/);
  });
});
