/**
 * Applying a reviewed edit set (memory forget --apply, memory lint --fix --apply) is all-or-nothing
 * per file, on real parts: a real Hermes home, the state dir on a real small tmpfs (the fault
 * harness's helpers, test/unit/helpers/tmpfs.ts) filled up so that exactly one more backup of a
 * memory file fits. The backup of the bytes a write replaces is kept before each write, so the
 * disk-full error lands at the second write: between two entries of one file when the apply writes
 * entry by entry, between two files when it writes file by file. Needs root (mount), as CI runs.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { copyFixture } from './helpers/hermes-db';
import { FIXTURES } from './helpers/paths';
import { fillUp, mountTmpfs, type SmallFs } from './helpers/tmpfs';

const PAGE = 4096;
const KEY = 'staging_ed25519';

describe('memory edit sets: each file written whole or not at all; a partial apply says what was written', function () {
  this.timeout(60_000);
  let tmp: string;
  let home: string;
  let store: string;
  let small: SmallFs;
  let mem: string;
  let user: string;
  let ballast: string;

  beforeEach(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-editset-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home);
    fs.rmSync(path.join(home, 'state.db'));
    store = `hermes:${home}`;
    mem = path.join(home, 'memories', 'MEMORY.md');
    user = path.join(home, 'memories', 'USER.md');
    // the key is in two entries of MEMORY.md and one of USER.md
    fs.appendFileSync(mem, `\n§\nDeploys to staging use the key ~/.ssh/${KEY} as user deploy`);
    fs.appendFileSync(user, `\n§\nDana keeps the staging key at ~/.ssh/${KEY}`);
    small = mountTmpfs(512 * 1024);
    ballast = path.join(small.mnt, 'ballast');
  });
  afterEach(() => {
    small.cleanup();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** A core on the small state dir, whose backup dir and write log exist (one real write, then undone). */
  const warmCore = async (): Promise<Core> => {
    const core = new Core({ stateDir: path.join(small.mnt, 'state') });
    const added = await core.addMemory({ store, text: 'A warm-up entry.' });
    await core.removeMemory({ store, entry: added.entry.id });
    return core;
  };
  /** Fill the state dir's file system, then free `pages` pages (each backup of these small files takes one). */
  const leavePages = (pages: number): void => {
    const n = fillUp(small.mnt, ballast);
    fs.truncateSync(ballast, n - pages * PAGE);
    const st = fs.statfsSync(small.mnt);
    assert.equal(st.bavail * st.bsize, pages * PAGE, 'exactly that much is free');
  };

  it('two entries of one file: the file goes from its bytes before to its bytes after in one write', async () => {
    const core = await warmCore();
    const before = fs.readFileSync(user, 'utf8');
    fs.writeFileSync(user, before.replace(`\n§\nDana keeps the staging key at ~/.ssh/${KEY}`, ''));
    const p = await core.memoryForget({ stores: [store], text: KEY });
    assert.deepEqual(
      p.files.map((f) => f.file),
      [mem],
    );
    assert.equal(p.edits.length, 2, 'two entries of MEMORY.md');
    const expected = Object.fromEntries(p.files.map((f) => [f.file, f.contentHash]));
    leavePages(1); // one backup fits: written entry by entry, the second entry would fail
    const r = await core.memoryForget({ stores: [store], text: KEY, apply: true, expected });
    assert.equal(r.applied, true);
    assert.equal(fs.readFileSync(mem, 'utf8'), p.files[0].after, 'exactly the proposal, never half of it');
    fs.rmSync(ballast);
    const u = await core.memoryUndoWrite({ stores: [store], write: r.group! });
    assert.equal(u.writes.length, 2, 'the undo covers both entries');
    assert.equal(fs.readFileSync(mem, 'utf8').split(KEY).length - 1, 2);
  });

  it('between two files: the first stays written whole, the second untouched; the error names both and the undo', async () => {
    const core = await warmCore();
    const p = await core.memoryForget({ stores: [store], text: KEY });
    assert.deepEqual(
      p.files.map((f) => f.file),
      [mem, user],
    );
    const userBefore = fs.readFileSync(user);
    const expected = Object.fromEntries(p.files.map((f) => [f.file, f.contentHash]));
    leavePages(1); // the backup of MEMORY.md fits, the one of USER.md does not
    let err: AgentKeepError | undefined;
    try {
      await core.memoryForget({ stores: [store], text: KEY, apply: true, expected });
    } catch (e) {
      err = e as AgentKeepError;
    }
    assert.ok(err instanceof AgentKeepError, `an AgentKeepError, got ${String(err)}`);
    assert.equal(err.kind, 'DiskFull', err.message);
    assert.equal(fs.readFileSync(mem, 'utf8'), p.files[0].after, 'MEMORY.md: the whole change');
    assert.ok(fs.readFileSync(user).equals(userBefore), 'USER.md: not a byte changed');
    assert.match(err.message, new RegExp(`Written: ${mem} \\(2 edits\\)`));
    assert.match(err.message, new RegExp(`not written: ${user} \\(1 edit\\)`));
    const undo = err.actions?.find((a) => a.method === 'agentkeep/memory.undoWrite');
    assert.ok(undo, JSON.stringify(err.actions));
    const group = (undo.params as { write: string }).write;
    assert.match(err.message, new RegExp(`write group ${group}`));
    assert.match(err.hint ?? '', /undo/i);
    // the undo named covers what was written: MEMORY.md back as it was
    fs.rmSync(ballast);
    const u = await core.memoryUndoWrite(undo.params as { stores: string[]; write: string });
    assert.equal(u.writes.length, 2);
    assert.equal(fs.readFileSync(mem, 'utf8').split(KEY).length - 1, 2);
    assert.ok(fs.readFileSync(user).equals(userBefore));
  });

  it('no room for the first backup: nothing written, and the error says so', async () => {
    const core = await warmCore();
    const p = await core.memoryForget({ stores: [store], text: KEY });
    const before = [fs.readFileSync(mem), fs.readFileSync(user)];
    const expected = Object.fromEntries(p.files.map((f) => [f.file, f.contentHash]));
    leavePages(0);
    await assert.rejects(core.memoryForget({ stores: [store], text: KEY, apply: true, expected }), (e: unknown) => {
      assert.ok(e instanceof AgentKeepError && e.kind === 'DiskFull', String(e));
      assert.match(e.message, /Nothing was written/);
      assert.ok(!e.actions?.some((a) => a.method === 'agentkeep/memory.undoWrite'), 'nothing to undo');
      return true;
    });
    assert.ok(fs.readFileSync(mem).equals(before[0]) && fs.readFileSync(user).equals(before[1]));
  });
});
