/**
 * Issue 13 #3: objects a killed or failed create left behind are collected (at once when the
 * failure allows it, else by the next create), safely next to running creates: real processes
 * killed with SIGKILL, a real unreadable file read as nobody, real in-flight markers.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { forgetManifest } from '../../sidecar/machine/dir/manifest';
import { describeTree, pseudoRandom, put, tempSetup } from './dir-fixtures';
import { buildSidecar, runSidecar, SIDECAR } from './helpers/sidecar';
import { AS_NOBODY, NOBODY, orphanObjects, storedObjects, tempObjects } from './helpers/tmpfs';
import { bytesOnlyIn, manifestObjects } from './helpers/manifests';
import { looseObjects } from './helpers/loose';

const KiB = 1024;

describe('orphaned objects are collected (issue 13 #3)', function () {
  this.timeout(120000);
  let s: ReturnType<typeof tempSetup>;
  before(() => buildSidecar());
  beforeEach(() => {
    s = tempSetup('ak-gc-');
  });
  afterEach(() => s.cleanup());
  const inflight = (): string[] => fs.readdirSync(path.join(s.state, 'locks', 'inflight'));

  describe('(object files of their own)', () => {
    looseObjects();
    it('kill -9 in the middle of a create: the next create collects what it stored', async () => {
      for (let i = 0; i < 60; i++) put(s.tree, `f${String(i).padStart(2, '0')}.bin`, pseudoRandom(256 * KiB, i + 1));
      const before = describeTree(s.tree);
      const child = spawn(
        process.execPath,
        [SIDECAR, '--state-dir', s.state, 'restore-point', 'create', '--target', s.target, '--json'],
        { stdio: 'ignore' },
      );
      const objects = path.join(s.state, 'objects');
      await new Promise<void>((resolve, reject) => {
        const t = setInterval(() => {
          if (storedObjects(s.state).length >= 3 || child.exitCode !== null) {
            clearInterval(t);
            child.kill('SIGKILL');
            resolve();
          }
        }, 1);
        child.on('error', reject);
      });
      await new Promise((r) => child.on('exit', r));
      assert.ok(fs.existsSync(objects));
      const left = orphanObjects(s.state);
      assert.ok(left.length >= 3, `the killed create left ${left.length} objects`);
      assert.equal(inflight().length, 1, 'its marker (dead pid) says so');

      const next = await runSidecar([
        '--state-dir',
        s.state,
        'restore-point',
        'create',
        '--target',
        s.target,
        '--json',
      ]);
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(orphanObjects(s.state), [], 'collected by the next create');
      assert.deepEqual(tempObjects(s.state), []);
      assert.deepEqual(inflight(), []);
      const rp = JSON.parse(next.stdout);
      fs.rmSync(path.join(s.tree, 'f00.bin'));
      await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
      assert.deepEqual(describeTree(s.tree), before);
    });
  });

  it('a create that fails on an unreadable file (as nobody) collects what it stored at once', async () => {
    fs.chmodSync(s.base, 0o755);
    for (let i = 0; i < 50; i++) put(s.tree, `ok-${String(i).padStart(2, '0')}.txt`, `readable ${i}\n`);
    put(s.tree, 'zz-secret.txt', 'nobody may read this\n', 0o000);
    fs.mkdirSync(s.state, { mode: 0o700 });
    fs.chownSync(s.state, NOBODY, NOBODY);
    const r = await runSidecar(
      ['--state-dir', s.state, 'restore-point', 'create', '--target', s.target, '--json'],
      {},
      undefined,
      AS_NOBODY,
    );
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const err = JSON.parse(r.stdout || r.stderr).error;
    assert.equal(err.code, 'file_error');
    assert.match(err.message, /zz-secret\.txt: permission denied/);
    assert.match(err.hint, /Fix the permissions of that path/);
    assert.deepEqual(storedObjects(s.state), [], 'none of the 50 objects it stored is left');
    assert.deepEqual(inflight(), []);
  });

  describe('(object files of their own)', () => {
    looseObjects();
    it('a failed create while another create runs: nothing is collected then; the next create collects it', async () => {
      for (let i = 0; i < 30; i++) put(s.tree, `f${i}.bin`, pseudoRandom(64 * KiB, i + 1));
      // another create in flight (this process: a live pid), as a second core's marker would be
      fs.mkdirSync(path.join(s.state, 'locks', 'inflight'), { recursive: true });
      const other = path.join(s.state, 'locks', 'inflight', `${process.pid}-aaaaaaaaaaaa`);
      fs.writeFileSync(
        other,
        JSON.stringify({ pid: process.pid, host: os.hostname(), op: 'create restore point', target: 'dir:/elsewhere' }),
      );
      const ctl = new AbortController();
      const core = new Core({
        stateDir: s.state,
        signal: ctl.signal,
        onProgress: (p) => p.stage === 'store' && (p.done ?? 0) >= 5 && ctl.abort(),
      });
      await assert.rejects(
        core.createRestorePoint({ target: s.target, stores: [], progressToken: 't' }),
        /Interrupted: the restore point was not created/,
      );
      assert.ok(orphanObjects(s.state).length >= 5, 'kept while the other create runs (it may be about to use them)');
      assert.ok(
        inflight().some((n) => n.startsWith('failed-')),
        'a failed marker calls for a collection',
      );
      fs.rmSync(other); // the other create ends
      const rp = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      assert.deepEqual(orphanObjects(s.state), []);
      assert.deepEqual(inflight(), []);
      const [key] = fs.readdirSync(path.join(s.state, 'dir'));
      const named = manifestObjects(s.state, path.join(s.state, 'dir', key, `${rp.id}.json`));
      assert.equal(named.filter((o) => !o.what.startsWith('tree of')).length, 30, '30 contents');
      // the new restore point has all its objects: 30 contents and its trees (format 2), nothing else
      assert.deepEqual(storedObjects(s.state).sort(), [...new Set(named.map((o) => o.hash))].sort());
      assert.equal(rp.machine.files, 30);
    });
  });

  it('a failure before anything was stored (an unknown restore point) leaves no marker and runs no collection', async () => {
    const core = new Core({ stateDir: s.state });
    put(s.tree, 'a.txt', 'a\n');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const [key] = fs.readdirSync(path.join(s.state, 'dir'));
    forgetManifest(path.join(s.state, 'dir', key, `${rp.id}.json`));
    // a collection reads every manifest: count manifest reads while the restore fails
    const reads: string[] = [];
    const orig = fs.promises.readFile;
    fs.promises.readFile = (async (p: Parameters<typeof orig>[0], ...rest: unknown[]) => {
      if (String(p).startsWith(path.join(s.state, 'dir'))) reads.push(String(p));
      return (orig as (...a: unknown[]) => Promise<unknown>)(p, ...rest);
    }) as typeof orig;
    try {
      await assert.rejects(
        core.restoreRestorePoint({ target: s.target, id: 'ak_20200101_000000_dead', scope: 'both' }),
        /No restore point/,
      );
    } finally {
      fs.promises.readFile = orig;
    }
    assert.deepEqual(reads, [], 'no collection ran');
    assert.deepEqual(inflight(), [], 'no failed- marker: nothing to collect');
  });

  it('a manifest without a journal entry (create killed between the two writes) is dropped with its objects', async () => {
    const core = new Core({ stateDir: s.state });
    put(s.tree, 'unique.bin', pseudoRandom(100 * KiB, 3));
    put(s.tree, 'shared.txt', 'shared\n');
    const a = await core.createRestorePoint({ target: s.target, stores: [] });
    fs.rmSync(path.join(s.tree, 'unique.bin'));
    const b = await core.createRestorePoint({ target: s.target, stores: [] });
    const [key] = fs.readdirSync(path.join(s.state, 'journal'));
    fs.rmSync(path.join(s.state, 'journal', key, `${a.id}.json`)); // as if killed before the journal write
    // a state-write temp of a writer long gone, and a fresh one (maybe a writer now): only the old one goes
    const oldTemp = path.join(s.state, 'journal', key, '.ak-tmp-0123456789ab');
    const newTemp = path.join(s.state, 'dir', key, '.ak-tmp-abcdefabcdef');
    fs.writeFileSync(oldTemp, 'partial');
    fs.writeFileSync(newTemp, 'partial');
    const hourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(oldTemp, hourAgo, hourAgo);
    // the content only it held (100 KiB), and its root tree (format 2)
    const only = bytesOnlyIn(s.state, path.join(s.state, 'dir', key, `${a.id}.json`), [
      path.join(s.state, 'dir', key, `${b.id}.json`),
    ]);
    assert.ok(only > 100 * KiB && only < 101 * KiB, `${only}`);
    const r = await core.pruneRestorePoints({ target: s.target });
    assert.equal(r.freedBytes, only);
    assert.ok(!fs.existsSync(path.join(s.state, 'dir', key, `${a.id}.json`)), 'orphan manifest dropped');
    assert.ok(fs.existsSync(path.join(s.state, 'dir', key, `${b.id}.json`)));
    assert.ok(!fs.existsSync(oldTemp));
    assert.ok(fs.existsSync(newTemp));
    assert.deepEqual(orphanObjects(s.state), []);
    const u = await core.usageRestorePoints({ target: s.target });
    assert.deepEqual(
      u.points.map((p) => p.id),
      [b.id],
    );
  });
});
