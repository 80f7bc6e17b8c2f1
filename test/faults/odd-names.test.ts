/**
 * Odd trees through the real CLI: names with spaces, newlines, tabs, quotes, backslashes, leading
 * dashes, 255-byte ASCII and multibyte names, deep paths at PATH_MAX, FIFOs (left out and
 * counted), sparse files (restored with the same bytes), empty files and folders, modes 000-777,
 * symlinks to odd names; and unreadable files read as a non-root user. The tree is wiped or changed
 * and restored, then compared byte for byte.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PATH_MAX_BYTES } from '../../sidecar/core/fsutil';
import {
  AS_NOBODY,
  assertSameTree,
  buildSidecar,
  checkState,
  describeTree,
  N,
  NOBODY,
  orphanObjects,
  pseudoRandom,
  put,
  report,
  rng,
  runSidecar,
  SEED,
  storedObjects,
  tempSetup,
} from './harness';

function nameOf(bytes: number, unit: string): string {
  const u = Buffer.byteLength(unit);
  const n = Math.floor(bytes / u);
  return unit.repeat(n) + 'z'.repeat(bytes - n * u);
}

/** Build the odd tree under `root`; returns the FIFOs made (never captured). */
function makeOddTree(root: string, seed: number): string[] {
  const names = [
    'with space.txt',
    ' leading space',
    'trailing space ',
    'new\nline',
    'tab\tname',
    "quote'single",
    'quote"double',
    'back\\slash',
    '-rf',
    '--help',
    '-',
    '$(touch pwned)',
    '*glob?[x]',
    '.hidden',
    '..dots',
    'ünïcödé-ñame.md',
    '日本語のファイル名.txt',
    '🙂 emoji.txt',
    'ctl\x01char',
    nameOf(255, 'a'),
    nameOf(255, '日'),
    nameOf(254, 'é'),
    nameOf(255, '🙂'),
  ];
  for (const n of names) put(root, path.join('names', n), `content of ${JSON.stringify(n)} ${seed}\n`);
  fs.mkdirSync(path.join(root, 'links'), { recursive: true });
  for (const [i, n] of names.slice(0, 6).entries())
    fs.symlinkSync(`../names/${n}`, path.join(root, 'links', `l${i}-${n}`));
  put(root, 'empty-file', '');
  fs.mkdirSync(path.join(root, 'empty-dir', 'nested'), { recursive: true });
  for (const m of [0o000, 0o400, 0o444, 0o600, 0o640, 0o700, 0o755, 0o777, 0o4755, 0o1777 & 0o777])
    put(root, `modes/m${m.toString(8)}`, `mode ${m.toString(8)}\n`, m);
  // deep paths: directories of 250-byte names down to PATH_MAX, short and long leaves
  let dir = path.join(root, 'deep');
  fs.mkdirSync(dir);
  for (;;) {
    const room = PATH_MAX_BYTES - Buffer.byteLength(dir) - 1 - 2;
    if (room <= 0) break;
    dir = path.join(dir, nameOf(Math.min(250, room), 'd'));
    fs.mkdirSync(dir);
  }
  put(dir, 'f', 'at PATH_MAX\n');
  // sparse: 8 MiB with data at both ends
  const sparse = path.join(root, 'sparse.img');
  const fd = fs.openSync(sparse, 'w');
  fs.writeSync(fd, pseudoRandom(4096, seed), 0, 4096, 0);
  fs.writeSync(fd, pseudoRandom(4096, seed + 1), 0, 4096, 8 * 1024 * 1024 - 4096);
  fs.closeSync(fd);
  put(root, 'bin/large.bin', pseudoRandom(3 * 1024 * 1024, seed + 2));
  const fifos = [path.join(root, 'names', 'a fifo'), path.join(root, 'fifo')];
  for (const f of fifos) execFileSync('mkfifo', [f]);
  return fifos.map((f) => path.relative(root, f));
}

describe(`odd names and file types (${Math.max(1, Math.ceil(N / 10))} rounds, seed ${SEED})`, function () {
  this.timeout(0);
  before(() => buildSidecar());

  it('every odd name, deep path and sparse file restores byte for byte; FIFOs are counted, not captured', async () => {
    const r = rng(SEED + 5);
    const rounds = Math.max(1, Math.ceil(N / 10));
    const counts = { rounds, entries: 0, fifosSkipped: 0, restores: 0 };
    for (let round = 0; round < rounds; round++) {
      const s = tempSetup('ak-faults-odd-');
      try {
        const fifos = makeOddTree(s.tree, round + 1);
        const want = describeTree(s.tree);
        for (const f of fifos) delete want[f];
        const ak = (...a: string[]) => runSidecar(['--state-dir', s.state, ...a]);
        const c = await ak('restore-point', 'create', '--target', s.target, '--json');
        assert.equal(c.code, 0, c.stderr);
        const rp = JSON.parse(c.stdout);
        assert.equal(rp.machine.skipped, fifos.length);
        assert.equal(rp.machine.files, Object.keys(want).length);
        counts.entries += rp.machine.files;
        counts.fifosSkipped += rp.machine.skipped;
        checkState(s.state);
        // the agent wipes half the tree (or all of it) and writes garbage
        const wipeAll = r() < 0.5;
        for (const n of fs.readdirSync(s.tree))
          if (wipeAll || r() < 0.5) execFileSync('rm', ['-rf', '--', path.join(s.tree, n)]);
        put(s.tree, 'names/with space.txt', 'overwritten\n');
        put(s.tree, 'garbage/-x', 'new\n');
        const wiped = describeTree(s.tree);
        // FIFOs are neither captured nor removed by a restore: the ones left by the wipe stay
        const expected = { ...want };
        for (const f of fifos) if (wiped[f]) expected[f] = wiped[f];
        const res = await ak(
          'restore-point',
          'restore',
          rp.id,
          '--target',
          s.target,
          '--scope',
          'both',
          '--yes',
          '--json',
        );
        assert.equal(res.code, 0, res.stderr);
        assertSameTree(describeTree(s.tree), expected, `round ${round}: restored tree`);
        const st = fs.statSync(path.join(s.tree, 'sparse.img'));
        assert.equal(st.size, 8 * 1024 * 1024);
        counts.restores++;
        // and the undo gives back the wiped state exactly
        const undoId = JSON.parse(res.stdout).undo.id;
        const u = await ak('restore-point', 'restore', undoId, '--target', s.target, '--scope', 'both', '--yes');
        assert.equal(u.code, 0, u.stderr);
        assertSameTree(describeTree(s.tree), wiped, `round ${round}: the undo`);
        counts.restores++;
      } finally {
        execFileSync('rm', ['-rf', s.base]); // deep paths: rm(1), which walks with openat
      }
    }
    report('odd names and file types', { ...counts, lost: 0 });
  });

  it('unreadable files read as a non-root user: create fails naming the file and the fix, nothing left; readable again, it captures', async () => {
    const s = tempSetup('ak-faults-unreadable-');
    try {
      fs.chmodSync(s.base, 0o755);
      for (let i = 0; i < 50; i++) put(s.tree, `ok/${i}.txt`, `readable ${i}\n`);
      put(s.tree, 'secret/key.pem', 'private\n', 0o000);
      fs.mkdirSync(path.join(s.tree, 'locked'), { mode: 0o000 });
      fs.chmodSync(path.join(s.tree, 'locked'), 0o000);
      fs.mkdirSync(s.state, { mode: 0o700 });
      fs.chownSync(s.state, NOBODY, NOBODY);
      const run = () =>
        runSidecar(
          ['--state-dir', s.state, 'restore-point', 'create', '--target', s.target, '--json'],
          {},
          undefined,
          AS_NOBODY,
        );
      const r1 = await run();
      assert.equal(r1.code, 1);
      const err = JSON.parse(r1.stdout || r1.stderr).error;
      assert.equal(err.code, 'file_error');
      assert.match(err.message, /(locked|key\.pem): permission denied/);
      assert.match(err.hint, /permissions/);
      assert.deepEqual(storedObjects(s.state), []);
      fs.chmodSync(path.join(s.tree, 'locked'), 0o755);
      fs.chmodSync(path.join(s.tree, 'secret', 'key.pem'), 0o644);
      const r2 = await run();
      assert.equal(r2.code, 0, r2.stderr);
      assert.deepEqual(orphanObjects(s.state), []);
      report('unreadable files as nobody', {
        files: 51,
        refusedFirst: 1,
        capturedAfterFix: 1,
        objectsLeftAfterRefusal: 0,
      });
    } finally {
      s.cleanup();
    }
  });
});
