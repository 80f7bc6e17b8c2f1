/**
 * The dir backend's change journal (issue 14, sidecar/machine/dir/journal.ts) on real trees with
 * real inotify: a Core with `changeJournal: true` (as `serve` runs it) lstats only what inotify
 * reported, and every restore point it makes is identical (same root tree: names, types, modes,
 * sizes, times, inodes, contents) to the one a full walk makes of the same state. The count bound,
 * a dead watch worker and a barrier that does not arrive all make the next create walk in full;
 * AGENTKEEP_DIR_JOURNAL=0 turns the journal off.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { closeJournals, existingJournal, journalTuning, type ChangeJournal } from '../../sidecar/machine/dir/journal';
import { readManifest } from '../../sidecar/machine/dir/manifest';
import { describeTree, put, tempSetup } from './dir-fixtures';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('dir backend: change journal (inotify)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let full: Core;
  const tuning = { ...journalTuning };
  beforeEach(async () => {
    s = tempSetup('ak-journal-');
    for (let i = 0; i < 40; i++) put(s.tree, `d${i % 4}/sub${i % 2}/f${i}.txt`, `content ${i}\n`);
    put(s.tree, 'top.txt', 'top\n');
    fs.symlinkSync('d0', path.join(s.tree, 'link'));
    core = new Core({ stateDir: s.state, changeJournal: true });
    full = new Core({ stateDir: s.state }); // no journal: the full walk
    await sleep(60); // file times outside the racy window
  });
  afterEach(() => {
    closeJournals();
    Object.assign(journalTuning, tuning);
    delete process.env.AGENTKEEP_DIR_JOURNAL;
    s.cleanup();
  });

  const manifestFile = (id: string): string =>
    path.join(s.state, 'dir', fs.readdirSync(path.join(s.state, 'dir'))[0], `${id}.json`);
  const rootTree = async (id: string): Promise<string> => {
    const m = await readManifest(manifestFile(id));
    assert.ok(m?.tree, `manifest of ${id}`);
    return m.tree;
  };
  const journal = (): ChangeJournal => {
    const j = existingJournal(s.tree);
    assert.ok(j, 'the Core keeps a journal for the target');
    return j;
  };
  /** A create through the journal; returns its id and how it scanned. */
  const create = async (): Promise<{ id: string; note: string }> => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    return { id: rp.id, note: journal().lastNote };
  };
  /** A create through the journal, then one by the full walk: both restore points must be the same tree. */
  const createAndCheck = async (what: string): Promise<string> => {
    const j = await create();
    assert.match(j.note, /^journal: /, `${what}: the create used the journal (${j.note})`);
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(j.id), await rootTree(f.id), `${what}: journal scan = full walk`);
    return j.note;
  };

  it('sees edits, adds, deletes, renames, chmod, symlink retargets and new nested dirs filled right after mkdir', async () => {
    const first = await create();
    assert.match(first.note, /^full walk: journal starting/);
    assert.equal(journal().watchedDirs, 1 + 4 + 4, `watched ${journal().watchedDirs} dirs`);

    fs.appendFileSync(path.join(s.tree, 'd0/sub0/f0.txt'), 'edited\n');
    assert.match(await createAndCheck('edit'), /1 paths|[2-9] paths/);

    put(s.tree, 'd1/sub1/added.txt', 'added\n');
    await createAndCheck('add');

    fs.rmSync(path.join(s.tree, 'd2/sub0/f2.txt'));
    await createAndCheck('delete');

    fs.renameSync(path.join(s.tree, 'd3/sub1/f3.txt'), path.join(s.tree, 'd0/renamed.txt'));
    fs.renameSync(path.join(s.tree, 'd1/sub1'), path.join(s.tree, 'd2/moved'));
    await createAndCheck('rename of a file and of a directory');
    fs.appendFileSync(path.join(s.tree, 'd2/moved/f5.txt'), 'in the moved dir\n');
    await createAndCheck('edit inside the moved directory');

    // mkdir -p, and files written at once (before the worker can watch the new directories)
    for (let i = 0; i < 5; i++) put(s.tree, `new/a/b${i}/c/file${i}.txt`, `new ${i}\n`);
    await createAndCheck('new nested directories');
    put(s.tree, 'new/a/b0/c/later.txt', 'later\n');
    await createAndCheck('a file in a new directory, one create later');

    fs.chmodSync(path.join(s.tree, 'd0/sub0/f4.txt'), 0o600);
    fs.chmodSync(path.join(s.tree, 'd3'), 0o700);
    await createAndCheck('chmod of a file and of a directory');

    fs.unlinkSync(path.join(s.tree, 'link'));
    fs.symlinkSync('d1', path.join(s.tree, 'link'));
    await createAndCheck('symlink retarget');

    // same size, mtime put back: inotify still reports it
    const p = path.join(s.tree, 'top.txt');
    const st = fs.statSync(p);
    fs.writeFileSync(p, 'TOP\n');
    fs.utimesSync(p, st.atime, st.mtime);
    await createAndCheck('same-size edit with the mtime put back');

    // a directory moved away, changed there (a new subdirectory), moved back, then changed again
    fs.renameSync(path.join(s.tree, 'd3'), path.join(s.tree, 'd3-away'));
    put(s.tree, 'd3-away/fresh/x.txt', 'x\n');
    await sleep(20);
    fs.renameSync(path.join(s.tree, 'd3-away'), path.join(s.tree, 'd3'));
    await createAndCheck('a directory moved away and back');
    fs.appendFileSync(path.join(s.tree, 'd3/fresh/x.txt'), 'more\n');
    await createAndCheck('a file in a subdirectory made while its parent was elsewhere');

    // a directory replaced by a file and back
    fs.rmSync(path.join(s.tree, 'd2/sub0'), { recursive: true });
    put(s.tree, 'd2/sub0', 'now a file\n');
    await createAndCheck('directory replaced by a file');
  });

  it('a directory deleted and made again at its path (often with the same inode number) is watched again', async () => {
    await create();
    const d = path.join(s.tree, 'd1');
    for (let i = 0; i < 5; i++) {
      fs.rmSync(d, { recursive: true });
      fs.mkdirSync(path.join(d, 'sub9'), { recursive: true });
      fs.writeFileSync(path.join(d, 'sub9', 'k.txt'), `again ${i}\n`);
      await createAndCheck(`d1 made again (${i})`);
      // the new directory and the one below it report their changes (before the fix: "0 paths")
      fs.writeFileSync(path.join(d, 'sub9', 'k.txt'), `edited by the agent ${i}\n`);
      fs.writeFileSync(path.join(d, 'new.txt'), `new ${i}\n`);
      await sleep(60);
      assert.match(await createAndCheck(`edit inside the new d1 (${i})`), /^journal: [1-9]\d* paths/);
    }
  });

  it('random edits, moves, chmods, links and deletes of whole directories: every journal create = the full walk', async () => {
    await create();
    let seed = 7;
    const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    const dirs = ['', 'd0/', 'd1/sub1/', 'd2/', 'n/m/'];
    for (let round = 0; round < 40; round++) {
      for (let k = 0; k <= rnd(4); k++) {
        const dir = dirs[rnd(dirs.length)];
        const f = path.join(s.tree, `${dir}f${rnd(5)}`);
        const op = rnd(7);
        try {
          if (op === 0) put(s.tree, `${dir}f${rnd(5)}`, `v${rnd(1000)}\n`);
          else if (op === 1) fs.chmodSync(f, [0o600, 0o644, 0o755][rnd(3)]);
          else if (op === 2) fs.renameSync(f, path.join(s.tree, `${dir}g${rnd(5)}`));
          else if (op === 3) fs.rmSync(path.join(s.tree, dir || 'd3'), { recursive: true, force: true });
          else if (op === 4) {
            fs.rmSync(path.join(s.tree, 'n'), { recursive: true, force: true });
            put(s.tree, 'n/m/f0', `r${rnd(9)}\n`);
          } else if (op === 5) fs.utimesSync(f, new Date(2001, rnd(9), 1), new Date(2001, rnd(9), 1));
          else {
            fs.mkdirSync(path.join(s.tree, dir), { recursive: true });
            fs.rmSync(path.join(s.tree, `${dir}l`), { force: true });
            fs.symlinkSync(`t${rnd(3)}`, path.join(s.tree, `${dir}l`));
          }
        } catch {
          /* the path is not there in this round: nothing to do */
        }
      }
      const j = await create();
      const f = await full.createRestorePoint({ target: s.target, stores: [] });
      assert.equal(await rootTree(j.id), await rootTree(f.id), `round ${round}: journal scan = full walk (${j.note})`);
    }
  });

  it('a file system mounted inside the target after it was watched makes the next create walk in full', async () => {
    await create();
    const at = path.join(s.tree, 'd0', 'sub0');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', at]);
    try {
      fs.writeFileSync(path.join(at, 'on-the-mount.txt'), 'inotify of d0/sub0 does not see this\n');
      await sleep(60);
      const j = await create();
      assert.match(j.note, /^full walk: journal invalid: a file system was mounted or unmounted inside the target/);
      const f = await full.createRestorePoint({ target: s.target, stores: [] });
      assert.equal(await rootTree(j.id), await rootTree(f.id), 'the mount is captured as the full walk sees it');
      const m = await readManifest(manifestFile(j.id));
      assert.ok(
        m?.entries.some((e) => e.p === 'd0/sub0/on-the-mount.txt'),
        'the file on the mount is in it',
      );
    } finally {
      execFileSync('umount', ['-l', at]);
    }
    // unmounted again: one more full walk, then the journal as before
    assert.match((await create()).note, /^full walk: journal invalid: a file system was mounted or unmounted/);
    put(s.tree, 'd1/after.txt', 'after\n');
    await sleep(60);
    await createAndCheck('after the umount');
  });

  it('a file with a second hard link outside the target, written through that link, is still seen', async () => {
    const outside = path.join(s.base, 'outside-link');
    fs.linkSync(path.join(s.tree, 'd1/sub1/f1.txt'), outside);
    await create();
    await createAndCheck('no change');
    fs.appendFileSync(outside, 'written through the other link\n');
    await createAndCheck('write through the outside link');
  });

  it('a hard link made inside the target: the create walks in full, then writes through either name are seen', async () => {
    await create();
    const a = path.join(s.tree, 'd0/sub0/f0.txt');
    const b = path.join(s.tree, 'd2/linked.txt');
    fs.linkSync(a, b); // link(2) raises no event in d0/sub0
    const j = await create();
    assert.match(journal().lastNote, /^journal: /);
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(j.id), await rootTree(f.id), 'the new link is captured as the full walk sees it');
    fs.writeFileSync(b, 'written through the new name\n');
    await createAndCheck('write through the second name');
    fs.appendFileSync(a, 'and through the first\n');
    await createAndCheck('write through the first name');
  });

  it('a directory renamed, then deleted and made again under its new name, is watched again', async () => {
    await create();
    fs.renameSync(path.join(s.tree, 'd3'), path.join(s.tree, 'd3-renamed'));
    await createAndCheck('rename');
    fs.rmSync(path.join(s.tree, 'd3-renamed'), { recursive: true });
    fs.mkdirSync(path.join(s.tree, 'd3-renamed'));
    await createAndCheck('deleted and made again');
    await sleep(60);
    fs.writeFileSync(path.join(s.tree, 'd3-renamed', 'f.txt'), 'in the directory made again\n');
    assert.match(await createAndCheck('a file in it'), /^journal: [1-9]\d* paths/);
  });

  it("each process has its own barrier folder: another process's barrier files are not its epochs", async () => {
    await create();
    const base = path.join(
      s.state,
      'locks',
      fs.readdirSync(path.join(s.state, 'locks')).find((n) => n.endsWith('.barrier'))!,
    );
    assert.deepEqual(fs.readdirSync(base), [String(process.pid)]);
    // another live process (pid 1) writes its barriers next to ours: our changes stay ours
    fs.mkdirSync(path.join(base, '1'), { recursive: true });
    put(s.tree, 'd1/mine.txt', 'mine\n');
    await sleep(30);
    fs.writeFileSync(path.join(base, '1', 'b-1-1'), '');
    await sleep(30);
    assert.match(await createAndCheck('after a foreign barrier'), /^journal: [1-9]\d* paths/);
    fs.rmSync(path.join(base, '1'), { recursive: true });
  });

  it('one barrier file per process, renamed from create to create (no new inode each time), removed when the journal stops', async () => {
    await create();
    const mine = path.join(
      s.state,
      'locks',
      fs.readdirSync(path.join(s.state, 'locks')).find((n) => n.endsWith('.barrier'))!,
      String(process.pid),
    );
    const inodes = new Set<number>();
    for (let i = 0; i < 4; i++) {
      put(s.tree, `d1/barrier-${i}.txt`, `round ${i}\n`);
      assert.match(await createAndCheck(`barrier round ${i}`), /^journal: [1-9]\d* paths/);
      const files = fs.readdirSync(mine);
      assert.equal(files.length, 1, files.join(', '));
      assert.match(files[0], new RegExp(`^b-${process.pid}-\\d+$`));
      inodes.add(fs.statSync(path.join(mine, files[0])).ino);
    }
    assert.equal(inodes.size, 1, 'the same file each time');
    closeJournals();
    assert.deepEqual(fs.readdirSync(mine), []);
  });

  it('walks in full every fullWalkCreates journal creates (what inotify cannot see stays out for a bounded time)', async () => {
    journalTuning.fullWalkCreates = 2;
    await create();
    assert.match((await create()).note, /^journal: /);
    assert.match((await create()).note, /^journal: /);
    assert.match((await create()).note, /^full walk: the periodic one \(every 2 creates/);
    assert.match((await create()).note, /^journal: /);
  });

  it('restores byte for byte through the journal, and the undo point and the next create use it', async () => {
    const original = describeTree(s.tree);
    const first = await create();
    put(s.tree, 'd0/sub0/f0.txt', 'changed\n');
    fs.rmSync(path.join(s.tree, 'd1'), { recursive: true });
    put(s.tree, 'other/x.txt', 'x\n');
    const r = await core.restoreRestorePoint({ target: s.target, id: first.id, scope: 'machine' });
    assert.match(journal().lastNote, /^journal: /, 'the undo point used the journal');
    assert.deepEqual(describeTree(s.tree), original);
    const undo = await rootTree(r.undo.id);
    assert.notEqual(undo, await rootTree(first.id));
    await createAndCheck('the create after a restore (the restore wrote through the journal)');
  });

  it('the count bound (max_queued_events / 2 events in two epochs) forces the full walk', async () => {
    journalTuning.maxEvents = 50;
    await create();
    fs.appendFileSync(path.join(s.tree, 'top.txt'), 'x\n');
    assert.match((await create()).note, /^journal: /);
    // a burst: many more events than the bound
    for (let i = 0; i < 60; i++) put(s.tree, `d0/burst-${i}.txt`, `${i}\n`);
    const after = await create();
    assert.match(after.note, /^full walk: \d+ events in two epochs \(limit 50/);
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(after.id), await rootTree(f.id));
    // the epoch before counts too: still over the bound right after the burst
    assert.match((await create()).note, /^full walk: \d+ events in two epochs/);
    // then quiet again: back to the journal
    fs.appendFileSync(path.join(s.tree, 'top.txt'), 'y\n');
    await createAndCheck('after the burst');
  });

  it('a burst of thousands of events under the real bound is journaled correctly', async () => {
    await create();
    for (let i = 0; i < 1500; i++) put(s.tree, `burst/d${i % 30}/f${i}.txt`, `${i}\n`);
    for (let i = 0; i < 1500; i += 3) fs.rmSync(path.join(s.tree, `burst/d${i % 30}/f${i}.txt`));
    const j = await create();
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(j.id), await rootTree(f.id));
    assert.match(j.note, /^(journal: |full walk: \d+ events)/);
  });

  it('a watch worker that dies makes the next create walk in full, then the journal starts again', async () => {
    await create();
    const worker = (journal() as unknown as { worker: { terminate(): Promise<number> } }).worker;
    await worker.terminate();
    put(s.tree, 'd2/after-death.txt', 'unseen by any watcher\n');
    const next = await create();
    assert.match(next.note, /^full walk: journal invalid: the watch worker exited/);
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(next.id), await rootTree(f.id), 'the full walk found the change');
    put(s.tree, 'd2/after-restart.txt', 'seen\n');
    await createAndCheck('after the restart');
  });

  it('the barrier: a change made just before the create is seen; no barrier event in time means the full walk', async () => {
    await create();
    for (let i = 0; i < 5; i++) {
      fs.appendFileSync(path.join(s.tree, `d${i % 4}/sub${i % 2}/f${i % 4}.txt`), `round ${i}\n`);
      put(s.tree, `d${i % 4}/just-before-${i}.txt`, `${i}\n`);
      await createAndCheck(`round ${i}: changes right before the call`);
    }
    // the watched barrier directory replaced by another one: the barrier event never arrives
    journalTuning.barrierTimeoutMs = 300;
    const key = fs.readdirSync(path.join(s.state, 'dir'))[0];
    const barrierDir = path.join(s.state, 'locks', `${key}.barrier`);
    fs.renameSync(barrierDir, `${barrierDir}-old`);
    fs.mkdirSync(barrierDir);
    put(s.tree, 'd1/late.txt', 'late\n');
    const t = await create();
    assert.match(t.note, /^full walk: journal invalid: no barrier event within 300 ms/);
    const f = await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(await rootTree(t.id), await rootTree(f.id));
    journalTuning.barrierTimeoutMs = tuning.barrierTimeoutMs;
    assert.match((await create()).note, /^full walk: journal invalid: no barrier event/, 'restarted: full walk once');
    put(s.tree, 'd1/later.txt', 'later\n');
    await createAndCheck('after the barrier timeout');
  });

  it('a parent that is not the journal base (a restore point of another process) gets the full walk', async () => {
    await create();
    // the journal's base is deleted: the next parent is another restore point
    const other = await full.createRestorePoint({ target: s.target, stores: [] });
    const base = (await core.listRestorePoints({ target: s.target })).find((r) => r.id !== other.id);
    assert.ok(base);
    await core.deleteRestorePoint({ target: s.target, id: base.id });
    put(s.tree, 'd3/x.txt', 'x\n');
    const t = await create();
    assert.match(t.note, /^full walk: (the parent|no scan)/);
  });

  it('AGENTKEEP_DIR_JOURNAL=0 turns it off; a Core without changeJournal (the CLI) keeps none', async () => {
    process.env.AGENTKEEP_DIR_JOURNAL = '0';
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(existingJournal(s.tree), undefined);
    delete process.env.AGENTKEEP_DIR_JOURNAL;
    await full.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(existingJournal(s.tree), undefined);
  });
});
