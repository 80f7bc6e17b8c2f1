/**
 * Concurrency with real processes: a second create/restore on a locked target waits, or fails with
 * TargetBusy naming the holder; concurrent creates from two processes never interleave; a lock left
 * by a dead process is broken.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { parseTarget } from '../../sidecar/core/target';
import { describeTree, put, REPO_ROOT, tempSetup } from './dir-fixtures';

/** Start a child node process running TypeScript `code` (through tsx); resolves when it prints `ready`. */
function child(
  dir: string,
  name: string,
  code: string,
): { proc: ChildProcess; ready: Promise<void>; done: Promise<{ code: number | null; out: string }> } {
  const file = path.join(dir, `${name}.ts`);
  fs.writeFileSync(file, code);
  const proc = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready')) readyResolve();
  });
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ code: number | null; out: string }>((r) => proc.on('exit', (c) => r({ code: c, out })));
  return { proc, ready, done };
}

const lockMod = path.join(REPO_ROOT, 'sidecar/core/lock.ts');
const coreMod = path.join(REPO_ROOT, 'sidecar/core/core.ts');

describe('core: locks with two real processes', function () {
  this.timeout(60_000);
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup();
    for (let i = 0; i < 200; i++) put(s.tree, `d${i % 10}/f${i}.txt`, `content ${i}\n`);
  });
  afterEach(() => s.cleanup());

  function holdLock(ms: number): ReturnType<typeof child> {
    const lockFile = path.join(s.state, 'locks', `${parseTarget(s.target).key}.lock`);
    return child(
      s.base,
      'holder',
      `import { acquireLock } from ${JSON.stringify(lockMod)};
       (async () => {
         const l = await acquireLock(${JSON.stringify(lockFile)}, { op: 'test holder', what: 'x', timeoutMs: 5000 });
         console.log('ready');
         await new Promise((r) => setTimeout(r, ${ms}));
         await l.release();
       })();`,
    );
  }

  it('a second create fails with TargetBusy naming the holder when the wait times out', async () => {
    const h = holdLock(4000);
    await h.ready;
    const core = new Core({ stateDir: s.state, lockTimeoutMs: 300 });
    const t0 = Date.now();
    await assert.rejects(core.createRestorePoint({ target: s.target }), (e: AgentKeepError) => {
      assert.equal(e.kind, 'TargetBusy');
      assert.equal(e.code, 'target_busy');
      assert.match(e.message, new RegExp(`process ${h.proc.pid}`));
      assert.match(e.message, /test holder/);
      assert.ok(e.hint);
      return true;
    });
    assert.ok(Date.now() - t0 >= 280, 'waited for the timeout');
    assert.deepEqual(await core.listRestorePoints({ target: s.target }), []);
    h.proc.kill();
    await h.done;
  });

  it('a second create waits for the holder and then succeeds', async () => {
    const h = holdLock(700);
    await h.ready;
    const core = new Core({ stateDir: s.state, lockTimeoutMs: 20_000 });
    const t0 = Date.now();
    const rp = await core.createRestorePoint({ target: s.target });
    assert.ok(Date.now() - t0 >= 400, `waited (${Date.now() - t0} ms)`);
    assert.equal(rp.status, 'ready');
    assert.equal((await h.done).code, 0);
  });

  it('a lock left by a dead process is broken', async () => {
    const h = holdLock(60_000);
    await h.ready;
    h.proc.kill('SIGKILL');
    await h.done;
    const core = new Core({ stateDir: s.state, lockTimeoutMs: 2000 });
    const rp = await core.createRestorePoint({ target: s.target });
    assert.equal(rp.status, 'ready');
  });

  it('creates and restores from two processes at once never interleave', async () => {
    const core = new Core({ stateDir: s.state });
    const base = await core.createRestorePoint({ target: s.target, label: 'base' });
    const before = describeTree(s.tree);
    for (let i = 0; i < 200; i += 3) fs.writeFileSync(path.join(s.tree, `d${i % 10}/f${i}.txt`), `changed ${i}\n`);
    put(s.tree, 'new/one.txt', 'new');
    // process A restores, process B creates; each logs when its locked section ran
    const script = (what: string): string => `
      import { Core } from ${JSON.stringify(coreMod)};
      (async () => {
        const core = new Core({ stateDir: ${JSON.stringify(s.state)}, lockTimeoutMs: 30000 });
        console.log('ready');
        const r = ${what};
        console.log('RESULT ' + JSON.stringify(r));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const a = child(
      s.base,
      'a',
      script(
        `await core.restoreRestorePoint({ target: ${JSON.stringify(s.target)}, id: ${JSON.stringify(base.id)}, scope: 'both' })`,
      ),
    );
    const b = child(
      s.base,
      'b',
      script(`await core.createRestorePoint({ target: ${JSON.stringify(s.target)}, label: 'from b' })`),
    );
    const [ra, rb] = await Promise.all([a.done, b.done]);
    assert.equal(ra.code, 0, ra.out);
    assert.equal(rb.code, 0, rb.out);
    assert.deepEqual(describeTree(s.tree), before, 'the restore completed as a whole');
    const list = await core.listRestorePoints({ target: s.target });
    assert.equal(list.length, 3);
    const fromB = list.find((r) => r.label === 'from b')!;
    // B's snapshot is either all-before or all-after the restore, never a mix
    const d = await core.diffRestorePoint({ target: s.target, id: fromB.id });
    const mixed = d.changed.length > 0 && d.changed.length < 67;
    assert.ok(!mixed, `snapshot taken mid-restore: ${d.changed.length} changed`);
    assert.ok(
      d.changed.length === 0 || (d.changed.length === 67 && d.added.length === 0 && d.removed.length === 2),
      JSON.stringify(d),
    );
    assert.equal(
      fs.readdirSync(path.join(s.state, 'locks')).filter((n) => n.endsWith('.lock')).length,
      0,
      'locks released',
    );
    assert.equal(os.hostname().length > 0, true);
  });
});
