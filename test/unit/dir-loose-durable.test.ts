/**
 * Objects a create writes as files of their own (fewer than the pack threshold, e.g. a mode change
 * in the top directory that makes only a new root tree; contents larger than SMALL_FILE_LIMIT) are
 * fsynced, with their fanout directory and `objects/`, before the journal entry that lists the
 * restore point is renamed in: without it, a power loss could leave a listed restore point whose
 * object is empty or gone (a loose object is only checked to exist by a restore). Real files, a real
 * Core; every fsync and rename recorded in order (helpers/fsRecord.ts).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { targetKey } from '../../sidecar/core/target';
import { makeHermesHome, put, tempSetup } from './dir-fixtures';
import { recordFsWrites, type FsEv as Ev } from './helpers/fsRecord';

describe('dir backend: objects written as files of their own are durable before the restore point is listed', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-loose-');
    for (let i = 0; i < 20; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `file ${i}\n`);
    put(s.tree, 'top.txt', 'top\n');
  });
  afterEach(() => s.cleanup());

  /** Object files of their own under objects/<hh>/ (absolute, real paths). */
  const looseObjects = (): Set<string> => {
    const dir = fs.realpathSync(path.join(s.state, 'objects'));
    const out = new Set<string>();
    for (const fo of fs.readdirSync(dir).filter((n) => /^[0-9a-f]{2}$/.test(n)))
      for (const n of fs.readdirSync(path.join(dir, fo))) out.add(path.join(dir, fo, n));
    return out;
  };

  /** Make a restore point with every fsync and every synchronous rename recorded. */
  const recordedCreate = async (core: Core, stores: string[] = []): Promise<{ ev: Ev[]; id: string }> => {
    const { ev, result } = await recordFsWrites(() => core.createRestorePoint({ target: s.target, stores }));
    return { ev, id: result.id };
  };

  const check = (ev: Ev[], id: string, fresh: string[]): void => {
    const journal = fs.realpathSync(path.join(s.state, 'journal', targetKey(`dir:${fs.realpathSync(s.tree)}`)));
    const entry = ev.find((e) => e.k === 'rename' && e.to === path.join(journal, `${id}.json`));
    assert.ok(entry, `the entry's rename: ${JSON.stringify(ev)}`);
    const synced = (p: string): number => ev.find((e) => e.k === 'fsync-end' && e.p === p)?.n ?? Infinity;
    assert.ok(fresh.length > 0, 'the create wrote an object file of its own');
    for (const f of fresh) {
      assert.ok(
        synced(f) < entry.n,
        `${path.basename(f).slice(0, 12)} fsynced before the entry: ${JSON.stringify(ev)}`,
      );
      assert.ok(synced(path.dirname(f)) < entry.n, `its fanout fsynced before the entry: ${JSON.stringify(ev)}`);
    }
    assert.ok(synced(path.dirname(path.dirname(fresh[0]))) < entry.n, 'objects/ fsynced before the entry');
  };

  it('one new object (the root tree of a mode change at the top): fsynced with its fanout before the entry', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    const before = looseObjects();
    fs.chmodSync(path.join(s.tree, 'top.txt'), 0o600);
    const { ev, id } = await recordedCreate(core);
    check(
      ev,
      id,
      [...looseObjects()].filter((f) => !before.has(f)),
    );
  });

  it("the agent state's captured files: stored and fsynced before the entry names them", async () => {
    const home = path.join(s.base, 'home');
    makeHermesHome(home);
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    fs.appendFileSync(path.join(home, 'memories', 'MEMORY.md'), '\n§\nA memory written just now.\n');
    const before = new Set([...looseObjects()]);
    const packDir = fs.realpathSync(path.join(s.state, 'objects', 'pack'));
    const packsBefore = new Set(fs.readdirSync(packDir));
    const { ev, id } = await recordedCreate(core, [`hermes:${home}`]);
    const journal = fs.realpathSync(path.join(s.state, 'journal', targetKey(`dir:${fs.realpathSync(s.tree)}`)));
    const entry = ev.find((e) => e.k === 'rename' && e.to === path.join(journal, `${id}.json`))!;
    const synced = (p: string): number => ev.find((e) => e.k === 'fsync-end' && e.p === p)?.n ?? Infinity;
    const loose = [...looseObjects()].filter((f) => !before.has(f));
    const packs = fs.readdirSync(packDir).filter((n) => !packsBefore.has(n));
    assert.ok(loose.length + packs.length > 0, 'the capture stored something');
    for (const f of loose) assert.ok(synced(f) < entry.n, `${f} fsynced before the entry: ${JSON.stringify(ev)}`);
    if (packs.length) {
      // a pack is fsynced as its temp file (objects/tmp/), then renamed in and its directory fsynced
      const tmp = ev.find((e) => e.k === 'fsync-end' && e.p.includes('/objects/tmp/'));
      assert.ok(tmp && tmp.n < entry.n, `a pack fsynced before the entry: ${JSON.stringify(ev)}`);
      assert.ok(synced(packDir) < entry.n, 'objects/pack/ fsynced before the entry');
    }
    const rp = (await core.listRestorePoints({ target: s.target })).find((r) => r.id === id)!;
    assert.ok(
      rp.agent?.some((a) => a.files.some((x) => x.path.endsWith('MEMORY.md'))),
      'MEMORY.md captured',
    );
  });

  it('a content larger than 1 MiB: fsynced with its fanout before the entry', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    const before = looseObjects();
    put(s.tree, 'd1/big.bin', Buffer.alloc(2 * 1024 * 1024, 7));
    const { ev, id } = await recordedCreate(core);
    check(
      ev,
      id,
      [...looseObjects()].filter((f) => !before.has(f)),
    );
    // and it restores
    fs.rmSync(path.join(s.tree, 'd1/big.bin'));
    await core.restoreRestorePoint({ target: s.target, id, scope: 'machine' });
    assert.equal(fs.statSync(path.join(s.tree, 'd1/big.bin')).size, 2 * 1024 * 1024);
  });
});
