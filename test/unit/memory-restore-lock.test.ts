/**
 * Restores and Hermes' memory lock (QA issue 4 #1), with a real python3 fcntl.flock holder as Hermes
 * takes it: a restore of any scope never creates, deletes or modifies memories/*.lock; scopes agent
 * and both take the same flock as edits, wait for it, and fail TargetBusy naming the holder (nothing
 * written) when it stays held.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { HermesStore } from '../../sidecar/memory/hermes';
import { makeHermesHome, tempSetup } from './dir-fixtures';

/** A python3 process holding fcntl.flock(LOCK_EX) on `file` for `seconds`, as Hermes' memory tool does. */
async function holdLock(file: string, seconds: number): Promise<{ py: ChildProcess; events: Array<[string, number]> }> {
  const py = spawn(
    'python3',
    [
      '-c',
      'import fcntl,sys,time\nf=open(sys.argv[1],"a+")\nfcntl.flock(f,fcntl.LOCK_EX)\nprint("held",flush=True)\ntime.sleep(float(sys.argv[2]))\nfcntl.flock(f,fcntl.LOCK_UN)\nprint("released",flush=True)\nsys.stdin.read()',
      file,
      String(seconds),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const events: Array<[string, number]> = [];
  await new Promise<void>((resolve, reject) => {
    py.once('error', reject);
    py.stdout!.on('data', (d: Buffer) => {
      for (const w of d.toString().split(/\s+/).filter(Boolean)) events.push([w, Date.now()]);
      if (d.toString().includes('held')) resolve();
    });
  });
  return { py, events };
}

/** Whether a non-blocking flock on `file` would block now (someone holds it). */
function isLocked(file: string): boolean {
  const r = spawnSync('python3', [
    '-c',
    'import fcntl,sys\nf=open(sys.argv[1],"a")\ntry:\n  fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print("free")\nexcept BlockingIOError: print("blocked")',
    file,
  ]);
  return r.stdout.toString().trim() === 'blocked';
}

describe('restore and Hermes memory lock (real flock)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let home: string;
  let store: string;
  let holder: ChildProcess | undefined;
  const mem = (): string => path.join(home, 'memories/MEMORY.md');
  const lockFile = (): string => `${mem()}.lock`;

  beforeEach(() => {
    s = tempSetup('ak-rlock-');
    core = new Core({ stateDir: s.state });
    home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    store = `hermes:${home}`;
  });
  afterEach(() => {
    holder?.kill('SIGKILL');
    holder = undefined;
    s.cleanup();
  });

  it('lock files are volatile, not agent state', async () => {
    const h = new HermesStore(home);
    fs.writeFileSync(lockFile(), '');
    assert.equal(h.isVolatilePath('memories/MEMORY.md.lock'), true);
    assert.equal(h.isVolatilePath('memories/USER.md.lock'), true);
    assert.equal(h.isVolatilePath('memories/MEMORY.md'), false);
    assert.ok(!(await h.agentStateFiles()).some((f) => f.endsWith('.lock')));
  });

  it('machine: keeps a lock file created since the restore point, and Hermes keeps holding it', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    assert.ok(!fs.existsSync(lockFile()));
    ({ py: holder } = await holdLock(lockFile(), 60));
    const ino = fs.statSync(lockFile()).ino;
    // the preview agrees with the restore: the lock file is not listed as something it removes
    const preview = await core.diffRestorePoint({ target: s.target, id: rp.id, stores: [store] });
    assert.ok(
      ![...preview.added, ...preview.changed, ...preview.removed].some((p) => p.endsWith('MEMORY.md.lock')),
      JSON.stringify(preview),
    );
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine', stores: [store] });
    assert.ok(fs.existsSync(lockFile()), 'lock file not removed');
    assert.equal(fs.statSync(lockFile()).ino, ino, 'same inode: the held flock still guards it');
    assert.ok(isLocked(lockFile()), 'Hermes still holds the lock');
  });

  it('both: a lock file present at the restore point but gone now is not recreated by the tree restore', async () => {
    fs.writeFileSync(path.join(home, 'memories/USER.md.lock'), 'stale');
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.rmSync(path.join(home, 'memories/USER.md.lock'));
    fs.appendFileSync(mem(), '§\nLearned later.\n');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [store] });
    assert.doesNotMatch(fs.readFileSync(mem(), 'utf8'), /Learned later/);
    // taking the lock creates USER.md.lock empty, as Hermes does; the tree restore did not bring back
    // the snapshot's copy ("stale")
    assert.equal(fs.readFileSync(path.join(home, 'memories/USER.md.lock'), 'utf8'), '');
  });

  for (const scope of ['agent', 'both'] as const) {
    it(`${scope}: waits for Hermes' flock, writes MEMORY.md only after it is released`, async () => {
      const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
      fs.appendFileSync(mem(), '§\nLearned later.\n');
      const h = await holdLock(lockFile(), 1.5);
      holder = h.py;
      const ino = fs.statSync(lockFile()).ino;
      let writtenAt = 0;
      const watcher = setInterval(() => {
        if (!writtenAt && !fs.readFileSync(mem(), 'utf8').includes('Learned later')) writtenAt = Date.now();
      }, 20);
      try {
        await core.restoreRestorePoint({ target: s.target, id: rp.id, scope, stores: [store] });
      } finally {
        clearInterval(watcher);
      }
      const released = h.events.find((e) => e[0] === 'released');
      assert.ok(released, 'python released before the restore finished');
      assert.ok(writtenAt === 0 || writtenAt >= released[1], 'MEMORY.md not rewritten while Hermes held the lock');
      assert.doesNotMatch(fs.readFileSync(mem(), 'utf8'), /Learned later/);
      assert.equal(fs.statSync(lockFile()).ino, ino, 'lock file untouched');
      assert.ok(!isLocked(lockFile()), 'AgentKeep released its lock');
    });
  }

  it('agent: a holder that keeps the lock is TargetBusy naming the process; memory byte-identical', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.appendFileSync(mem(), '§\nLearned later.\n');
    const before = fs.readFileSync(mem());
    ({ py: holder } = await holdLock(lockFile(), 60));
    try {
      await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] });
      assert.fail('expected TargetBusy');
    } catch (e) {
      assert.ok(e instanceof AgentKeepError, String(e));
      assert.equal(e.kind, 'TargetBusy', e.message);
      assert.match(e.message, new RegExp(`Process ${holder!.pid} \\([^)]*python3`));
      assert.match(e.message, /MEMORY\.md\.lock/);
      assert.match(e.hint ?? '', /Nothing was changed/);
    }
    assert.deepEqual(fs.readFileSync(mem()), before);
    assert.ok(isLocked(lockFile()), 'holder still holds it');
  });
});
