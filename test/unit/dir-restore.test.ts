/**
 * The dir backend on real trees: a restore makes the tree identical to the restore point (bytes,
 * modes, symlinks incl. dangling and symlink-to-dir, empty dirs, nested .git, large binary files,
 * unicode names), removes files created since, can itself be undone, and deduplicates contents.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { fixText } from './helpers/errors';
import { describeTree, pseudoRandom, put, tempLeftovers, tempSetup } from './dir-fixtures';
import { bytesOnlyIn } from './helpers/manifests';
import { looseObjects } from './helpers/loose';

describe('dir backend: restore makes the tree identical', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let outside: string;

  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
    outside = path.join(s.base, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'outside content');
  });
  afterEach(() => s.cleanup());

  function buildRichTree(): void {
    const t = s.tree;
    put(t, '.env', 'API_KEY=secret\n', 0o600);
    put(t, 'bin/run.sh', '#!/bin/sh\necho hi\n', 0o755);
    put(t, 'docs/readme.md', '# readme\n', 0o644);
    put(t, 'data/big.bin', pseudoRandom(20 * 1024 * 1024, 7));
    put(t, 'data/small.bin', Buffer.from([0, 1, 2, 255, 254, 0, 0, 10, 13]));
    put(t, 'ünïcödé/日本語 ファイル.txt', 'unicode content ✓\n');
    put(t, 'spaces in name/a b.txt', 'spaces\n');
    fs.mkdirSync(path.join(t, 'empty/nested-empty'), { recursive: true });
    fs.symlinkSync('docs/readme.md', path.join(t, 'link-to-file'));
    fs.symlinkSync('does/not/exist', path.join(t, 'dangling'));
    fs.symlinkSync(outside, path.join(t, 'link-to-outside-dir'));
    // a nested git repository with real objects
    const repo = path.join(t, 'project');
    fs.mkdirSync(repo);
    execFileSync('git', ['init', '-q', repo]);
    put(repo, 'main.py', 'print("v1")\n');
    execFileSync('git', ['-C', repo, 'add', '-A']);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'v1']);
  }

  function mutateEverything(): void {
    const t = s.tree;
    fs.writeFileSync(path.join(t, '.env'), 'API_KEY=changed\n');
    fs.chmodSync(path.join(t, '.env'), 0o644);
    fs.chmodSync(path.join(t, 'bin/run.sh'), 0o644);
    fs.rmSync(path.join(t, 'docs'), { recursive: true });
    const big = fs.openSync(path.join(t, 'data/big.bin'), 'r+');
    fs.writeSync(big, Buffer.from('CORRUPTED'), 0, 9, 10 * 1024 * 1024);
    fs.closeSync(big);
    fs.rmSync(path.join(t, 'ünïcödé'), { recursive: true });
    fs.rmSync(path.join(t, 'empty'), { recursive: true });
    fs.rmSync(path.join(t, 'dangling'));
    fs.symlinkSync('elsewhere', path.join(t, 'dangling'));
    fs.rmSync(path.join(t, 'link-to-file'));
    fs.writeFileSync(path.join(t, 'link-to-file'), 'now a regular file');
    // nested repo: a new commit
    const repo = path.join(t, 'project');
    put(repo, 'main.py', 'print("v2")\n');
    execFileSync('git', ['-C', repo, 'add', '-A']);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'v2']);
    // new things that must disappear
    put(t, 'new-file.txt', 'created after the restore point');
    put(t, 'new-dir/deep/x.txt', 'x');
    fs.mkdirSync(path.join(t, 'new-empty-dir'));
    // writing through the outside symlink changes the outside dir, which is not part of the tree
    fs.writeFileSync(path.join(outside, 'added-outside.txt'), 'outside');
  }

  it('restores bytes, modes, symlinks, empty dirs, nested .git, large and unicode files; removes new files', async () => {
    buildRichTree();
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target, label: 'before' });
    assert.match(rp.id, /^ak_\d{8}_\d{6}_[0-9a-f]{4}$/);
    assert.ok(rp.id.length <= 40);
    assert.equal(rp.status, 'ready');
    assert.equal(rp.machine.backend, 'dir');
    assert.equal(rp.machine.files, Object.keys(before).length);

    mutateEverything();
    assert.notDeepEqual(describeTree(s.tree), before);

    const diff = await core.diffRestorePoint({ target: s.target, id: rp.id });
    assert.ok(diff.added.includes('new-file.txt'));
    assert.ok(diff.removed.includes('docs/readme.md'));
    assert.ok(diff.changed.includes('data/big.bin'));
    assert.ok(diff.changed.includes('.env'));
    assert.ok(diff.changed.includes('link-to-file'));

    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    const after = describeTree(s.tree);
    assert.deepEqual(after, before);
    assert.equal(after['.env'].mode, 0o600);
    assert.equal(after['bin/run.sh'].mode, 0o755);
    assert.equal(after['dangling'].link, 'does/not/exist');
    assert.equal(after['link-to-outside-dir'].link, outside);
    assert.equal(after['empty/nested-empty'].type, 'dir');
    assert.ok(after['project/.git/HEAD'], 'nested .git kept under its own name');
    const again = await core.diffRestorePoint({ target: s.target, id: rp.id });
    assert.deepEqual(again, { added: [], removed: [], changed: [], agentChanged: [] });
    assert.equal(
      execFileSync('git', ['-C', path.join(s.tree, 'project'), 'log', '--format=%s'])
        .toString()
        .trim(),
      'v1',
    );
    assert.equal(execFileSync('git', ['-C', path.join(s.tree, 'project'), 'status', '--porcelain']).toString(), '');
    assert.ok(!fs.existsSync(path.join(s.tree, 'project/.git_disabled')));
    // symlink to a dir is never followed: the outside dir is untouched by snapshot and restore
    assert.ok(fs.existsSync(path.join(outside, 'added-outside.txt')));
    assert.equal(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'outside content');
    assert.ok(!Object.keys(after).some((p) => p.startsWith('link-to-outside-dir/')));
    assert.deepEqual(tempLeftovers(s.tree), []);
    // the result describes what happened
    assert.ok(res.changes.added.includes('new-file.txt'));
    assert.ok(res.changes.removed.includes('docs/readme.md'));
    assert.equal(res.restored.status, 'rolled-back');
    assert.equal(res.undo.kind, 'pre-restore');
    assert.equal(res.undo.restoredFrom, rp.id);
  });

  it('restoring the pre-restore capture undoes a restore', async () => {
    buildRichTree();
    const rp = await core.createRestorePoint({ target: s.target });
    mutateEverything();
    const mutated = describeTree(s.tree);
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    assert.notDeepEqual(describeTree(s.tree), mutated);
    await core.restoreRestorePoint({ target: s.target, id: res.undo.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), mutated);
    const list = await core.listRestorePoints({ target: s.target });
    assert.equal(list.length, 3);
    assert.deepEqual(
      list.map((r) => r.kind),
      ['pre-restore', 'pre-restore', 'manual'],
    );
  });

  it('only rewrites files that differ', async () => {
    for (let i = 0; i < 50; i++) put(s.tree, `f/${i}.txt`, `file ${i}`);
    const rp = await core.createRestorePoint({ target: s.target });
    await new Promise((r) => setTimeout(r, 80));
    fs.writeFileSync(path.join(s.tree, 'f/7.txt'), 'changed');
    const inoBefore = fs.statSync(path.join(s.tree, 'f/8.txt')).ino;
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.deepEqual(res.changes.changed, ['f/7.txt']);
    assert.equal(fs.readFileSync(path.join(s.tree, 'f/7.txt'), 'utf8'), 'file 7');
    assert.equal(fs.statSync(path.join(s.tree, 'f/8.txt')).ino, inoBefore, 'unchanged file not rewritten');
  });

  it('restores into a directory that became read-only, and type changes file <-> dir', async () => {
    put(s.tree, 'ro/a.txt', 'a');
    put(s.tree, 'x', 'x is a file');
    put(s.tree, 'y/inner.txt', 'y is a dir');
    fs.chmodSync(path.join(s.tree, 'ro'), 0o555);
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target });
    fs.chmodSync(path.join(s.tree, 'ro'), 0o755);
    fs.writeFileSync(path.join(s.tree, 'ro/a.txt'), 'changed');
    fs.chmodSync(path.join(s.tree, 'ro'), 0o555);
    fs.rmSync(path.join(s.tree, 'x'));
    put(s.tree, 'x/now-a-dir.txt', 'd');
    fs.rmSync(path.join(s.tree, 'y'), { recursive: true });
    put(s.tree, 'y', 'now a file');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), before);
  });

  it('a read-only directory replaced by the file or symlink of the snapshot: its mode lands nowhere (not through the link)', async () => {
    const victim = path.join(outside, 'keep.txt');
    fs.chmodSync(victim, 0o644);
    fs.symlinkSync(victim, path.join(s.tree, 'a'));
    put(s.tree, 'b', 'b is a file');
    fs.chmodSync(path.join(s.tree, 'b'), 0o640);
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target });
    // both become non-empty, non-writable directories
    for (const n of ['a', 'b']) {
      fs.rmSync(path.join(s.tree, n));
      put(s.tree, `${n}/in.txt`, 'z');
      fs.chmodSync(path.join(s.tree, n), 0o500);
    }
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.equal(fs.statSync(victim).mode & 0o7777, 0o644, 'the file outside the target keeps its mode');
    assert.equal(fs.readlinkSync(path.join(s.tree, 'a')), victim);
    assert.equal(fs.statSync(path.join(s.tree, 'b')).mode & 0o7777, 0o640, 'the file gets its own mode back');
    assert.deepEqual(describeTree(s.tree), before);
  });

  it('deduplicates: a second create of an unchanged tree stores no new bytes', async () => {
    put(s.tree, 'a.bin', pseudoRandom(3 * 1024 * 1024, 3));
    put(s.tree, 'copy-of-a.bin', pseudoRandom(3 * 1024 * 1024, 3));
    for (let i = 0; i < 30; i++) put(s.tree, `t/${i}.txt`, `text ${i % 3}`);
    const first = await core.createRestorePoint({ target: s.target });
    // identical contents are stored once
    assert.ok(first.machine.newBytes < 3 * 1024 * 1024 + 100, `first newBytes ${first.machine.newBytes}`);
    assert.equal(first.machine.bytes, 6 * 1024 * 1024 + 30 * 6);
    const second = await core.createRestorePoint({ target: s.target });
    assert.equal(second.machine.newBytes, 0);
    // a restore that rewrote files (new inodes) still dedups on the next create
    fs.writeFileSync(path.join(s.tree, 't/1.txt'), 'other');
    await core.restoreRestorePoint({ target: s.target, id: first.id, scope: 'both' });
    const third = await core.createRestorePoint({ target: s.target });
    assert.equal(third.machine.newBytes, 0);
  });

  it('delete garbage-collects objects only it used and reports freed bytes', async () => {
    put(s.tree, 'shared.txt', 'shared by both');
    put(s.tree, 'only-first.bin', pseudoRandom(200_000, 9));
    const first = await core.createRestorePoint({ target: s.target });
    fs.rmSync(path.join(s.tree, 'only-first.bin'));
    const second = await core.createRestorePoint({ target: s.target });
    const mf = (id: string): string =>
      path.join(s.state, 'dir', fs.readdirSync(path.join(s.state, 'dir'))[0], `${id}.json`);
    // its content only it used (200,000 bytes), and its root tree (format 2: the listing differs)
    const only = bytesOnlyIn(s.state, mf(first.id), [mf(second.id)]);
    assert.ok(only > 200_000 && only < 201_000, `${only}`);
    const del = await core.deleteRestorePoint({ target: s.target, id: first.id });
    assert.equal(del.deleted, first.id);
    assert.equal(del.freedBytes, only);
    // the second restore point still restores fine
    put(s.tree, 'junk.txt', 'junk');
    await core.restoreRestorePoint({ target: s.target, id: second.id, scope: 'both' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'shared.txt'), 'utf8'), 'shared by both');
    assert.ok(!fs.existsSync(path.join(s.tree, 'junk.txt')));
    await assert.rejects(
      core.deleteRestorePoint({ target: s.target, id: first.id }),
      (e: AgentKeepError) => e.kind === 'RestorePointNotFound',
    );
  });
});

describe('dir backend: damage', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
  });
  afterEach(() => s.cleanup());

  describe('(object files of their own)', () => {
    looseObjects();
    it('a missing object gives CorruptSnapshot and leaves the tree untouched', async () => {
      put(s.tree, 'a.txt', 'original a');
      put(s.tree, 'b.txt', 'original b');
      const rp = await core.createRestorePoint({ target: s.target });
      fs.writeFileSync(path.join(s.tree, 'a.txt'), 'new a');
      fs.writeFileSync(path.join(s.tree, 'b.txt'), 'new b');
      const hash = (await import('node:crypto')).createHash('sha256').update('original a').digest('hex');
      const obj = path.join(s.state, 'objects', hash.slice(0, 2), hash);
      assert.ok(fs.existsSync(obj));
      fs.chmodSync(obj, 0o644);
      fs.rmSync(obj);
      const before = describeTree(s.tree);
      await assert.rejects(
        core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' }),
        (e: AgentKeepError) => {
          assert.equal(e.kind, 'CorruptSnapshot');
          assert.match(e.message, /missing/);
          assert.match(e.message, /ak_\d{8}_\d{6}_[0-9a-f]{4}/, 'names the pre-restore id');
          assert.match(fixText(e), /restore-point restore ak_/);
          return true;
        },
      );
      assert.deepEqual(describeTree(s.tree), before);
      assert.deepEqual(tempLeftovers(s.tree), []);
    });
  });

  it('a damaged manifest gives CorruptSnapshot', async () => {
    put(s.tree, 'a.txt', 'a');
    const rp = await core.createRestorePoint({ target: s.target });
    const dir = path.join(s.state, 'dir');
    const key = fs.readdirSync(dir)[0];
    fs.writeFileSync(path.join(dir, key, `${rp.id}.json`), '{"v":1,"entries":[{"p":"../escape","t":"f"');
    const fresh = new Core({ stateDir: s.state }); // no in-memory manifest cache
    await assert.rejects(
      fresh.diffRestorePoint({ target: s.target, id: rp.id }),
      (e: AgentKeepError) => e.kind === 'CorruptSnapshot' && /damaged/.test(e.message),
    );
  });

  describe('(object files of their own)', () => {
    looseObjects();
    it('a failure halfway leaves no temp files and names the pre-restore id', async () => {
      put(s.tree, 'sub/a.txt', 'a');
      put(s.tree, 'sub/b.txt', 'b');
      const rp = await core.createRestorePoint({ target: s.target });
      fs.writeFileSync(path.join(s.tree, 'sub/a.txt'), 'a2');
      // Replace an object by a directory: copying it out fails in the middle of the restore.
      const hash = (await import('node:crypto')).createHash('sha256').update('a').digest('hex');
      const obj = path.join(s.state, 'objects', hash.slice(0, 2), hash);
      fs.chmodSync(obj, 0o644);
      fs.rmSync(obj);
      fs.mkdirSync(obj);
      await assert.rejects(
        core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' }),
        (e: AgentKeepError) => {
          assert.match(e.message, /stopped/);
          assert.match(e.message, /saved as restore point ak_/);
          return true;
        },
      );
      assert.deepEqual(tempLeftovers(s.tree), []);
      assert.equal(fs.readFileSync(path.join(s.tree, 'sub/a.txt'), 'utf8'), 'a2');
    });
  });
});
