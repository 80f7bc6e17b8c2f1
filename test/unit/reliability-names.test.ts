/**
 * Issue 13 #1: every captured name restores: names of 1..255 bytes (multibyte included), paths up
 * to PATH_MAX, with the restore's temp files (`.ak-tmp-<hex>`) and its undo. Real trees, real Core.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { isTempName, PATH_MAX_BYTES, tempNameFor } from '../../sidecar/core/fsutil';
import { describeTree, put, tempLeftovers, tempSetup } from './dir-fixtures';
import { expectAgentKeepError } from './helpers/errors';

/** A name of exactly `bytes` UTF-8 bytes made of `unit` (plus ASCII padding). */
function nameOf(bytes: number, unit = 'x'): string {
  const u = Buffer.byteLength(unit);
  const n = Math.floor(bytes / u);
  return unit.repeat(n) + 'y'.repeat(bytes - n * u);
}

/** A chain of directories of 250-byte names under `root` whose depth leaves `leave` bytes of PATH_MAX. */
function deepDir(root: string, leave: number): string {
  let dir = root;
  for (;;) {
    const room = PATH_MAX_BYTES - Buffer.byteLength(dir) - 1 - leave;
    if (room <= 0) return dir;
    const name = nameOf(Math.min(250, room), 'd');
    dir = path.join(dir, name);
    fs.mkdirSync(dir);
  }
}

describe('long names and deep paths (issue 13 #1)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup('ak-names-');
    core = new Core({ stateDir: s.state });
  });
  afterEach(() => s.cleanup());

  it('tempNameFor: a short hidden name in the same directory, whatever the length of the file name', () => {
    for (const name of ['a', nameOf(255), nameOf(255, '日'), nameOf(240, '日')]) {
      const t = tempNameFor(path.join(s.tree, name));
      assert.equal(path.dirname(t), s.tree);
      assert.match(path.basename(t), /^\.ak-tmp-[0-9a-f]{12}$/);
      assert.ok(isTempName(path.basename(t)));
    }
    // older versions' leftovers are still ours; look-alikes of users are not
    assert.ok(isTempName('.data.txt.ak-tmp-0123456789ab'));
    assert.ok(!isTempName('not-ours.ak-tmp-0123456789ab'));
    assert.ok(!isTempName('.ak-tmp-notahexname!'));
    assert.ok(!isTempName('.ak-tmp-0123456789abcd'));
  });

  it('tempNameFor near PATH_MAX: the deepest ancestor where the temp fits, never above the root', () => {
    const deep = deepDir(s.tree, 2); // room for a 1-byte name only
    const file = path.join(deep, 'f');
    assert.ok(Buffer.byteLength(file) <= PATH_MAX_BYTES);
    const t = tempNameFor(file, s.tree);
    assert.ok(Buffer.byteLength(t) <= PATH_MAX_BYTES, 'fits');
    assert.ok(t.startsWith(s.tree + '/') && deep.startsWith(path.dirname(t)), 'an ancestor inside the root');
    assert.throws(() => tempNameFor(file, deep), /name too long/);
  });

  it('names of 1, 254 and 255 bytes (ASCII and CJK, 80 and 85 characters) restore, and so does the undo', async () => {
    const names = [
      'a',
      nameOf(254),
      nameOf(255),
      nameOf(240, '日'),
      nameOf(255, '日'),
      nameOf(255, 'é'),
      nameOf(255, '🙂'),
    ];
    for (const [i, n] of names.entries()) put(s.tree, path.join('dir', n), `content ${i}\n`);
    fs.mkdirSync(path.join(s.tree, nameOf(255, '目')));
    put(s.tree, path.join(nameOf(255, '目'), nameOf(255, '文')), 'nested\n');
    fs.symlinkSync('dir/a', path.join(s.tree, nameOf(255, 'l')));
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(rp.machine.files, Object.keys(before).length);
    // the agent changes and removes them
    for (const n of names) fs.writeFileSync(path.join(s.tree, 'dir', n), 'changed\n');
    fs.rmSync(path.join(s.tree, nameOf(255, '目')), { recursive: true });
    fs.rmSync(path.join(s.tree, nameOf(255, 'l')));
    const changed = describeTree(s.tree);
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), before, 'every long name is back, byte for byte');
    assert.deepEqual(tempLeftovers(s.tree), []);
    await core.restoreRestorePoint({ target: s.target, id: res.undo.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), changed, 'the undo restores them too');
  });

  it('a deep tree up to PATH_MAX restores (a 1-byte name at the bottom: its temp goes into an ancestor)', async () => {
    const deep = deepDir(s.tree, 2);
    put(deep, 'f', 'at the bottom\n');
    fs.mkdirSync(path.join(s.tree, 'b'));
    const mid = deepDir(path.join(s.tree, 'b'), 40);
    put(mid, nameOf(39, 'n'), 'long name near the limit\n');
    assert.equal(Buffer.byteLength(path.join(deep, 'f')), PATH_MAX_BYTES, 'the longest path the kernel takes');
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    fs.rmSync(path.join(deep, 'f'));
    fs.writeFileSync(path.join(mid, nameOf(39, 'n')), 'changed\n');
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.deepEqual(describeTree(s.tree), before);
    assert.deepEqual(tempLeftovers(s.tree), []);
    assert.deepEqual(res.changes.removed, [path.relative(s.tree, path.join(deep, 'f'))]);
  });

  it('a path longer than PATH_MAX cannot be captured: the error says "name too long", not permissions', async () => {
    // Only reachable relative to a deeper working directory (what the kernel refuses as one path).
    const script =
      'import os,sys\nos.chdir(sys.argv[1])\nfor i in range(20):\n  n="p"*250\n  os.mkdir(n)\n  os.chdir(n)\nopen("f","w").write("x")\n';
    execFileSync('python3', ['-c', script, s.tree]);
    try {
      const e = await expectAgentKeepError(
        core.createRestorePoint({ target: s.target, stores: [] }),
        'FileError',
        /name too long/,
      );
      assert.match(e.message, /longer than the 4096 bytes \(PATH_MAX/);
      assert.doesNotMatch(`${e.message} ${e.hint}`, /permission/i);
      assert.match(e.hint ?? '', /Shorten that name or move the file/);
      assert.equal((await core.listRestorePoints({ target: s.target })).length, 0);
    } finally {
      execFileSync('rm', ['-rf', path.join(s.tree, 'p'.repeat(250))]); // rm(1) walks with openat; Node's rm cannot
    }
  });

  it('a stray temp of the new form in the tree is never captured and the next restore removes it', async () => {
    put(s.tree, 'a/data.txt', 'data\n');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    put(s.tree, 'a/.ak-tmp-0123456789ab', 'partial write of a killed restore');
    put(s.tree, '.ak-tmp-abcdefabcdef', 'partial');
    const d = await core.diffRestorePoint({ target: s.target, id: rp.id });
    assert.deepEqual([...d.added, ...d.changed, ...d.removed], [], 'temps are not changes');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    assert.deepEqual(tempLeftovers(s.tree), []);
    assert.deepEqual(Object.keys(describeTree(s.tree)), ['a', 'a/data.txt']);
  });
});
