/**
 * A create's writes and bookkeeping (issue 14, the 1,000-file create): the order of its fsyncs and
 * renames (docs/dir-backend.md "State-dir layout": a restore point is never listed without its
 * snapshot, even after a power loss), the size-cap summary kept as a log appended to (right after
 * many creates, folded, torn lines, an older summary alone), the journal directory made again when
 * removed under a running process, packs not listed again when no merge is due, and the tree bytes
 * of directories whose unchanged entries are not serialised again. Real files, a real Core.
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { ObjectStore } from '../../sidecar/core/objects';
import { geometricSplit, PACK_MERGE_AT, packDirOf, readPackIndex } from '../../sidecar/core/packs';
import { targetKey } from '../../sidecar/core/target';
import type { Entry } from '../../sidecar/machine/dir/manifest';
import { treeBytesOf } from '../../sidecar/machine/dir/tree';
import { HELD_LOG_NAME, HELD_NAME, HeldBound, heldTuning } from '../../sidecar/machine/dir/usage';
import { put, tempSetup } from './dir-fixtures';
import { recordFsWrites, type FsEv as Ev } from './helpers/fsRecord';

/** The node:fs module object itself (the namespace import's properties are read-only getters), to record calls. */
const nodeFs = createRequire(__filename)('node:fs') as typeof fs;

describe('dir backend: a create writes in the documented order and keeps its bookkeeping small (issue 14)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-createorder-');
    for (let i = 0; i < 40; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `file ${i}\n`);
  });
  afterEach(() => s.cleanup());
  const key = (): string => targetKey(`dir:${fs.realpathSync(s.tree)}`);
  const manifestDir = (): string => path.join(s.state, 'dir', key());
  const journalDir = (): string => path.join(s.state, 'journal', key());

  it('pack and manifest fsynced (at the same time) and renamed, both directories fsynced, then the journal entry renamed and its directory fsynced', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    for (let i = 0; i < 6; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `changed ${i}\n`);
    // record every fsync (by the path its descriptor names now) and every rename, in order
    const {
      ev,
      done,
      result: rp,
    } = await recordFsWrites(() => core.createRestorePoint({ target: s.target, stores: [] }));
    const objects = path.join(fs.realpathSync(s.state), 'objects');
    const renameTo = (test: (to: string) => boolean, what: string): Ev & { k: 'rename' } => {
      const r = ev.find((e): e is Ev & { k: 'rename' } => e.k === 'rename' && test(e.to));
      assert.ok(r, `a rename of ${what}: ${JSON.stringify(ev)}`);
      return r;
    };
    const fsyncOf = (k: 'fsync-start' | 'fsync-end', p: string, after = -1): number => {
      const e = ev.find((x) => x.k === k && 'p' in x && x.p === p && x.n > after);
      assert.ok(e, `${k} of ${p}: ${JSON.stringify(ev)}`);
      return e.n;
    };
    const pack = renameTo((to) => to.startsWith(packDirOf(objects) + '/') && to.endsWith('.pack'), 'the pack');
    const manifest = renameTo(
      (to) => to === path.join(fs.realpathSync(manifestDir()), `${rp.id}.json`),
      'the manifest',
    );
    const entry = renameTo((to) => to === path.join(fs.realpathSync(journalDir()), `${rp.id}.json`), 'the entry');
    // each file's content is on disk before its rename
    assert.ok(fsyncOf('fsync-end', pack.from) < pack.n, 'pack fsynced before its rename');
    assert.ok(fsyncOf('fsync-end', manifest.from) < manifest.n, 'manifest fsynced before its rename');
    assert.ok(fsyncOf('fsync-end', entry.from) < entry.n, 'entry fsynced before its rename');
    // the manifest only after the pack holding its objects is in place
    assert.ok(pack.n < manifest.n, 'pack renamed before the manifest');
    // both names durable before the journal entry lists the restore point
    const packDir = fsyncOf('fsync-end', packDirOf(objects), pack.n);
    const mDir = fsyncOf('fsync-end', fs.realpathSync(manifestDir()), manifest.n);
    assert.ok(packDir < entry.n && mDir < entry.n, 'both directories fsynced before the entry is renamed');
    // and the entry's name durable before the create returns
    assert.ok(fsyncOf('fsync-end', fs.realpathSync(journalDir()), entry.n) < done, "the entry's directory fsynced");
    // the overlap itself: the manifest's fsync starts before the pack's has finished
    assert.ok(fsyncOf('fsync-start', manifest.from) < fsyncOf('fsync-end', pack.from), 'the two fsyncs run together');
    // the restore point restores what it captured
    put(s.tree, 'd0/f0.txt', 'later\n');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'd0/f0.txt'), 'utf8'), 'changed 0\n');
  });

  it("a restore's undo point is durable (its entry's directory fsynced) before the restore touches the tree", async () => {
    const core = new Core({ stateDir: s.state });
    const first = await core.createRestorePoint({ target: s.target, stores: [] });
    for (let i = 0; i < 6; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `changed ${i}\n`);
    const { ev, result } = await recordFsWrites(() =>
      core.restoreRestorePoint({ target: s.target, id: first.id, scope: 'machine' }),
    );
    const undo = result.undo?.id;
    assert.ok(undo);
    const jdir = fs.realpathSync(journalDir());
    const entry = ev.find(
      (e): e is Ev & { k: 'rename' } => e.k === 'rename' && e.to === path.join(jdir, `${undo}.json`),
    );
    assert.ok(entry, `the undo point's entry renamed in: ${JSON.stringify(ev.filter((e) => e.k === 'rename'))}`);
    const synced = ev.find((e) => e.k === 'fsync-end' && e.p === jdir && e.n > entry.n);
    const tree = fs.realpathSync(s.tree);
    const firstWrite = ev.find((e) => e.k === 'rename' && fs.realpathSync(path.dirname(e.to)).startsWith(tree));
    assert.ok(synced, `the journal directory fsynced after the rename of ${entry.to}: ${JSON.stringify(ev)}`);
    assert.ok(firstWrite, `a file of the tree replaced: ${JSON.stringify(ev.filter((e) => e.k === 'rename'))}`);
    assert.ok(synced.n < firstWrite.n, 'the undo point is durable before the first file is replaced');
    assert.equal(fs.readFileSync(path.join(s.tree, 'd0/f0.txt'), 'utf8'), 'file 0\n');
  });

  it('a pack whose fsync fails: no manifest, no journal entry, no temp file left', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    for (let i = 0; i < 6; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `changed again ${i}\n`);
    const realFsync = nodeFs.fsync;
    (nodeFs as { fsync: unknown }).fsync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void): void => {
      if (/\/objects\/tmp\//.test(fs.readlinkSync(`/proc/self/fd/${fd}`))) {
        const e: NodeJS.ErrnoException = new Error('EIO: i/o error, fsync');
        e.code = 'EIO';
        setImmediate(() => cb(e));
        return;
      }
      realFsync(fd, cb);
    };
    const before = fs.readdirSync(manifestDir()).filter((f) => !f.startsWith('.'));
    try {
      await assert.rejects(core.createRestorePoint({ target: s.target, stores: [] }), /EIO|i\/o/i);
    } finally {
      (nodeFs as { fsync: unknown }).fsync = realFsync;
    }
    assert.deepEqual(
      fs.readdirSync(manifestDir()).filter((f) => !f.startsWith('.')),
      before,
      'no manifest renamed in, no manifest temp left',
    );
    assert.equal((await core.listRestorePoints({ target: s.target })).length, 1, 'no restore point listed');
    assert.deepEqual(fs.readdirSync(path.join(s.state, 'objects', 'tmp')), [], 'no pack temp left');
    // and the next create works and restores
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    put(s.tree, 'd1/f1.txt', 'later\n');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'd1/f1.txt'), 'utf8'), 'changed again 1\n');
  });

  describe('the size-cap summary', () => {
    const saved = heldTuning.logMax;
    afterEach(() => {
      heldTuning.logMax = saved;
    });
    const records = (): Map<string, unknown> => {
      const out = new Map<string, unknown>();
      try {
        const x = JSON.parse(fs.readFileSync(path.join(manifestDir(), HELD_NAME), 'utf8')) as {
          m: Record<string, unknown>;
        };
        for (const [k, v] of Object.entries(x.m)) out.set(k, v);
      } catch {
        /* none */
      }
      const log = path.join(manifestDir(), HELD_LOG_NAME);
      if (fs.existsSync(log))
        for (const line of fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
          let row: [string, ...unknown[]];
          try {
            row = JSON.parse(line) as [string, ...unknown[]];
          } catch {
            continue; // the torn line this test writes
          }
          out.set(row[0], row.slice(1));
        }
      return out;
    };
    const live = (): string[] =>
      fs
        .readdirSync(manifestDir())
        .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
        .map((n) => n.slice(0, -5));
    const noFull = async (id: string): Promise<number> => {
      throw new Error(`the summary does not know ${id}`);
    };

    it('one line appended per create (no new file), folded when long; every snapshot known; a torn line only widens the bound', async () => {
      const core = new Core({ stateDir: s.state });
      await core.createRestorePoint({ target: s.target, stores: [] });
      const log = path.join(manifestDir(), HELD_LOG_NAME);
      const ino = fs.statSync(log).ino;
      put(s.tree, 'd0/a.txt', 'a\n');
      await core.createRestorePoint({ target: s.target, stores: [] });
      assert.equal(fs.statSync(log).ino, ino, 'the log is appended to, not replaced');
      assert.equal(fs.existsSync(path.join(manifestDir(), HELD_NAME)), false, 'no summary rewritten yet');
      assert.equal(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length, 2);
      heldTuning.logMax = 300; // about three lines
      const ids: string[] = [];
      for (let r = 0; r < 12; r++) {
        put(s.tree, `d${r % 4}/f${r}.txt`, `round ${r}\n`);
        ids.push((await core.createRestorePoint({ target: s.target, stores: [] })).id);
        if (r === 5) await core.deleteRestorePoint({ target: s.target, id: ids[2] });
      }
      assert.ok(fs.existsSync(path.join(manifestDir(), HELD_NAME)), 'folded into the summary');
      assert.ok(!fs.existsSync(log) || fs.statSync(log).size < 300 + 200, 'the log was emptied when folded');
      const rec = records();
      for (const id of live()) assert.ok(rec.has(id), `a record of ${id}`);
      const folded = JSON.parse(fs.readFileSync(path.join(manifestDir(), HELD_NAME), 'utf8')) as {
        m: Record<string, unknown>;
      };
      assert.ok(!(ids[2] in folded.m), 'the deleted snapshot is dropped when folded');
      // the bound needs no manifest and is at least what the snapshots hold
      const held = new HeldBound(manifestDir());
      const bound = await held.bound(live(), noFull);
      const usage = await core.usageRestorePoints({ target: s.target });
      const objectBytes = usage.bytes - usage.metaBytes;
      assert.ok(bound > 0 && bound >= objectBytes, `bound ${bound} >= ${objectBytes}`);
      // a torn last line (a crash while appending): that snapshot counts all its bytes, nothing fails
      const last = live().sort().pop() as string;
      fs.appendFileSync(log, '\n["ak_torn'); // a record cut short (each starts with its newline)
      assert.equal(await held.bound(live(), noFull), bound);
      fs.writeFileSync(
        log,
        fs
          .readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => !l.includes(last))
          .join('\n'),
      );
      const summary = JSON.parse(fs.readFileSync(path.join(manifestDir(), HELD_NAME), 'utf8')) as {
        m: Record<string, unknown>;
      };
      delete summary.m[last];
      fs.writeFileSync(path.join(manifestDir(), HELD_NAME), JSON.stringify(summary));
      let asked = '';
      const wider = await held.bound(live(), async (id) => {
        asked = id;
        return 1e9;
      });
      assert.equal(asked, last, 'the snapshot without a record counts in full');
      assert.ok(wider > bound);
      // the create after that still works, and its record is appended after the torn line
      put(s.tree, 'd3/z.txt', 'z\n');
      const rp = await core.createRestorePoint({ target: s.target, stores: [] });
      assert.ok(records().has(rp.id));
    });

    it('a summary an older version wrote (no log) is still used', async () => {
      const core = new Core({ stateDir: s.state });
      const a = await core.createRestorePoint({ target: s.target, stores: [] });
      put(s.tree, 'd0/a.txt', 'a\n');
      const b = await core.createRestorePoint({ target: s.target, stores: [] });
      const rec = records();
      fs.rmSync(path.join(manifestDir(), HELD_LOG_NAME));
      fs.writeFileSync(
        path.join(manifestDir(), HELD_NAME),
        JSON.stringify({ v: 1, m: { [a.id]: rec.get(a.id), [b.id]: rec.get(b.id) } }),
      );
      const held = new HeldBound(manifestDir());
      const [, addedB] = rec.get(b.id) as [string, number, number];
      const [, , fullA] = rec.get(a.id) as [string, number, number];
      assert.equal(await held.bound([a.id, b.id], noFull), fullA + addedB);
    });
  });

  it('a journal directory removed while the process runs is made again (with its target.json) by the next create', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.ok(fs.existsSync(path.join(journalDir(), 'target.json')));
    fs.rmSync(path.join(journalDir(), 'target.json'));
    put(s.tree, 'd0/a.txt', 'a\n');
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.ok(fs.existsSync(path.join(journalDir(), 'target.json')), 'target.json written again');
    fs.rmSync(journalDir(), { recursive: true });
    put(s.tree, 'd0/b.txt', 'b\n');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.ok(fs.existsSync(path.join(journalDir(), 'target.json')), 'journal made again');
    assert.deepEqual(
      (await core.listRestorePoints({ target: s.target })).map((r) => r.id),
      [rp.id],
    );
  });

  it('packs are listed again only when a merge may be due; a due merge still happens', async () => {
    const objects = path.join(s.state, 'objects');
    const store = new ObjectStore(objects);
    await store.init();
    let body = 0;
    const addPack = async (st: ObjectStore, count: number): Promise<void> => {
      const w = await st.openPack();
      for (let k = 0; k < count; k++) await st.putBuffer(Buffer.from(`object ${body++}\n`), w);
      assert.equal((await st.commitPack(w)).packed, true);
    };
    // a geometric progression: nothing to merge
    for (const c of [64, 16, 4]) await addPack(store, c);
    const realReaddir = nodeFs.readdirSync;
    let listed = 0;
    (nodeFs as { readdirSync: unknown }).readdirSync = (p: fs.PathLike, o?: unknown): unknown => {
      if (String(p) === packDirOf(objects)) listed++;
      return (realReaddir as (p: fs.PathLike, o?: unknown) => unknown)(p, o);
    };
    try {
      assert.equal(await store.consolidatePacks(), undefined);
      assert.equal(listed, 0, 'objects/pack/ not listed when the known packs call for no merge');
      // another process's small packs: seen by the next create's openPack, then merged
      const other = new ObjectStore(objects);
      for (let k = 0; k < PACK_MERGE_AT; k++) await addPack(other, 2);
      (await store.openPack()).close();
      const r = await store.consolidatePacks();
      assert.ok(r && r.merged >= PACK_MERGE_AT, JSON.stringify(r));
      assert.ok(listed >= 2, 'listed by openPack and before the merge');
    } finally {
      (nodeFs as { readdirSync: unknown }).readdirSync = realReaddir;
    }
    const counts = fs.readdirSync(packDirOf(objects)).length;
    assert.ok(counts <= 4, `${counts} packs left`);
    const idx = new ObjectStore(objects);
    for (let k = 0; k < body; k++) assert.ok(idx.hasSync(createHash('sha256').update(`object ${k}\n`).digest('hex')));
    const left = fs.readdirSync(packDirOf(objects)).map((f) => readPackIndex(path.join(packDirOf(objects), f))!.count);
    assert.equal(geometricSplit(left.sort((a, b) => a - b)), 0, `a geometric progression: ${left.join(', ')}`);
  });

  it('tree bytes are the JSON of the sorted rows, whether the entries were serialised before or not', () => {
    const h = (c: string): string => c.repeat(64);
    const kids: Entry[] = [
      { p: 'a/zé"\\x', t: 'f', m: 0o644, s: 3, mt: 1.5, ct: 2.25, i: 9, h: h('a') },
      { p: 'a/b', t: 'd', m: 0o755, s: 0, mt: 1, ct: 2, i: 3, h: h('b'), z: 10, x: 1 },
      { p: 'a/\u{1F600}', t: 'l', m: 0o777, s: 3, mt: 1, ct: 2, i: 4, l: 'x\n"y' },
      { p: 'a/c', t: 'd', m: 0o700, s: 0, mt: 1, ct: 2, i: 5, h: h('c') },
      { p: 'a/B', t: 'f', m: 0o600, s: 0, mt: 1e12 + 0.123456, ct: 1e12, i: 2 ** 40, h: h('d') },
    ];
    const rows = kids
      .map((e) => {
        const name = e.p.slice(e.p.lastIndexOf('/') + 1);
        return e.t === 'd'
          ? [name, 'd', e.m, 0, e.mt, e.ct, e.i, e.h, e.z ?? 0, e.x ? 1 : 0]
          : [name, e.t, e.m, e.s, e.mt, e.ct, e.i, e.t === 'f' ? e.h : e.l];
      })
      .sort((x, y) => ((x[0] as string) < (y[0] as string) ? -1 : (x[0] as string) > (y[0] as string) ? 1 : 0));
    const want = JSON.stringify(rows);
    assert.equal(treeBytesOf(kids).toString(), want, 'first time');
    assert.equal(treeBytesOf([...kids].reverse()).toString(), want, 'again, entries reused, other order');
    // a changed entry is a new object: its new row, not the old one
    const changed = { ...kids[0], s: 4, h: h('e') };
    assert.notEqual(treeBytesOf([changed, ...kids.slice(1)]).toString(), want);
    assert.equal(treeBytesOf([]).toString(), '[]');
  });
});
