/**
 * restorePoint.compare and restorePoint.readFile on real trees: a pre/post pair around a package
 * install (files added, changed, removed, agent memory changed), files read back from the object store
 * by hash (text, binary, symlink, agent-state capture), the size cap and bad input. Also through
 * dispatch, as the servers call it.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { compareCaptures, encodeContent, normalizeRelPath } from '../../sidecar/core/compare';
import { dispatch } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import { hasFix } from './helpers/errors';
import { makeHermesHome, pseudoRandom, put, tempSetup } from './dir-fixtures';
import { looseObjects } from './helpers/loose';

describe('core: compare two restore points and read files of a restore point', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let home: string;
  let store: string;

  beforeEach(() => {
    s = tempSetup('ak-compare-');
    core = new Core({ stateDir: s.state });
    home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    store = `hermes:${home}`;
    put(s.tree, 'workspace/package.json', '{"name":"demo","private":true}\n');
    put(s.tree, 'workspace/old-notes.txt', 'to be removed\n');
    put(s.tree, 'workspace/logo.bin', pseudoRandom(4096, 7));
    fs.symlinkSync('package.json', path.join(s.tree, 'workspace/pkg-link'));
  });
  afterEach(() => s.cleanup());

  /** The "command": an npm install of left-pad, a removed file, and a memory the agent wrote. */
  function install(): void {
    fs.writeFileSync(
      path.join(s.tree, 'workspace/package.json'),
      '{"name":"demo","private":true,"dependencies":{"left-pad":"^1.3.0"}}\n',
    );
    put(s.tree, 'workspace/node_modules/left-pad/package.json', '{"name":"left-pad","version":"1.3.0"}\n');
    put(s.tree, 'workspace/node_modules/left-pad/index.js', 'module.exports = leftPad;\n');
    fs.rmSync(path.join(s.tree, 'workspace/old-notes.txt'));
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nleft-pad 1.3.0 is installed.\n');
  }

  it('compares the pre and post of a command from their manifests and captures', async () => {
    const pre = await core.createRestorePoint({
      target: s.target,
      stores: [store],
      kind: 'pre',
      label: 'npm install left-pad',
    });
    install();
    const post = await core.createRestorePoint({
      target: s.target,
      stores: [store],
      kind: 'post',
      pairOf: pre.id,
      label: 'after: npm install left-pad',
    });
    assert.equal(post.pairOf, pre.id);
    // The live tree changes afterwards: compare must not look at it.
    put(s.tree, 'workspace/later.txt', 'after the post restore point');
    const c = await core.compareRestorePoints({ target: s.target, from: pre.id, to: post.id });
    assert.deepEqual(c.added, [
      'workspace/node_modules',
      'workspace/node_modules/left-pad',
      'workspace/node_modules/left-pad/index.js',
      'workspace/node_modules/left-pad/package.json',
    ]);
    assert.deepEqual(c.removed, ['workspace/old-notes.txt']);
    assert.deepEqual(c.changed, ['.hermes/memories/MEMORY.md', 'workspace/package.json']);
    assert.deepEqual(c.agentChanged, [`${store}:memories/MEMORY.md`]);
    // The other direction swaps added and removed.
    const back = await core.compareRestorePoints({ target: s.target, from: post.id, to: pre.id });
    assert.deepEqual(back.added, c.removed);
    assert.deepEqual(back.removed, c.added);
    // A restore point compared with itself: nothing.
    assert.deepEqual(await core.compareRestorePoints({ target: s.target, from: pre.id, to: pre.id }), {
      added: [],
      removed: [],
      changed: [],
      agentChanged: [],
    });
  });

  it('reads files as they were at each restore point (text, binary, symlink, directory, absent, agent state)', async () => {
    const pre = await core.createRestorePoint({ target: s.target, stores: [store], kind: 'pre' });
    install();
    const post = await core.createRestorePoint({ target: s.target, stores: [store], kind: 'post', pairOf: pre.id });
    fs.writeFileSync(path.join(s.tree, 'workspace/package.json'), 'changed again, live only\n');

    const before = await core.readRestorePointFile({ target: s.target, id: pre.id, path: 'workspace/package.json' });
    assert.deepEqual(before, {
      path: 'workspace/package.json',
      type: 'file',
      size: 31,
      encoding: 'utf8',
      content: '{"name":"demo","private":true}\n',
    });
    const after = await core.readRestorePointFile({ target: s.target, id: post.id, path: './workspace/package.json' });
    assert.match(after.content, /left-pad/);

    const bin = await core.readRestorePointFile({ target: s.target, id: pre.id, path: 'workspace/logo.bin' });
    assert.equal(bin.encoding, 'base64');
    assert.ok(Buffer.from(bin.content, 'base64').equals(pseudoRandom(4096, 7)), 'binary content round-trips');

    const link = await core.readRestorePointFile({ target: s.target, id: pre.id, path: 'workspace/pkg-link' });
    assert.deepEqual([link.type, link.content], ['symlink', 'package.json']);
    const dir = await core.readRestorePointFile({ target: s.target, id: pre.id, path: 'workspace' });
    assert.deepEqual([dir.type, dir.content], ['directory', '']);
    const absent = await core.readRestorePointFile({
      target: s.target,
      id: pre.id,
      path: 'workspace/node_modules/left-pad/index.js',
    });
    assert.deepEqual([absent.type, absent.size, absent.content], ['none', 0, '']);
    const removed = await core.readRestorePointFile({ target: s.target, id: pre.id, path: 'workspace/old-notes.txt' });
    assert.equal(removed.content, 'to be removed\n');

    const memPre = await core.readRestorePointFile({
      target: s.target,
      id: pre.id,
      path: `${store}:memories/MEMORY.md`,
    });
    const memPost = await core.readRestorePointFile({
      target: s.target,
      id: post.id,
      path: `${store}:memories/MEMORY.md`,
    });
    assert.equal(memPre.type, 'file');
    assert.doesNotMatch(memPre.content, /left-pad/);
    assert.match(memPost.content, /left-pad 1\.3\.0 is installed/);
    const noSkill = await core.readRestorePointFile({
      target: s.target,
      id: pre.id,
      path: `${store}:skills/none/SKILL.md`,
    });
    assert.equal(noSkill.type, 'none');
  });

  describe('(object files of their own)', () => {
    looseObjects();
    it('refuses files above the size cap, paths outside the target and unknown ids, with hints', async () => {
      put(s.tree, 'big.dat', pseudoRandom(3 * 1024 * 1024, 3));
      const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
      await assert.rejects(
        core.readRestorePointFile({ target: s.target, id: rp.id, path: 'big.dat' }),
        (e: unknown) => {
          assert.ok(e instanceof AgentKeepError);
          assert.equal(e.code, 'file_error');
          assert.match(e.message, /big\.dat is 3\.0 MiB \(3145728 bytes\), above the 2\.0 MiB limit/);
          assert.match(e.hint ?? '', /maxBytes/);
          return true;
        },
      );
      const ok = await core.readRestorePointFile({
        target: s.target,
        id: rp.id,
        path: 'big.dat',
        maxBytes: 4 * 1024 * 1024,
      });
      assert.equal(ok.size, 3 * 1024 * 1024);
      await assert.rejects(
        core.readRestorePointFile({ target: s.target, id: rp.id, path: '../etc/passwd' }),
        (e: unknown) =>
          e instanceof AgentKeepError && e.code === 'invalid_params' && /not a path inside the target/.test(e.message),
      );
      for (const abs of ['/etc/passwd', path.join(s.tree, 'a.txt')]) {
        await assert.rejects(
          core.readRestorePointFile({ target: s.target, id: rp.id, path: abs }),
          (e: unknown) =>
            e instanceof AgentKeepError && e.code === 'invalid_params' && /no leading "\/"/.test(e.hint ?? ''),
        );
      }
      await assert.rejects(
        core.compareRestorePoints({ target: s.target, from: rp.id, to: 'ak_20990101_000000_zzzz' }),
        (e: unknown) => e instanceof AgentKeepError && e.code === 'restore_point_not_found' && hasFix(e),
      );
      // A damaged snapshot (object gone) is reported as such, not as an empty file.
      const h = rp.agent[0]!.files.find((f) => f.path === 'SOUL.md')!.hash;
      fs.chmodSync(path.join(s.state, 'objects', h.slice(0, 2)), 0o755);
      fs.rmSync(path.join(s.state, 'objects', h.slice(0, 2), h), { force: true });
      await assert.rejects(
        core.readRestorePointFile({ target: s.target, id: rp.id, path: `${store}:SOUL.md` }),
        (e: unknown) => e instanceof AgentKeepError && e.code === 'corrupt_snapshot',
      );
    });
  });

  it('is served through dispatch with validated params', async () => {
    const a = await core.createRestorePoint({ target: s.target });
    put(s.tree, 'new.txt', 'x');
    const b = await core.createRestorePoint({ target: s.target });
    const c = (await dispatch(core, 'agentkeep/restorePoint.compare', { target: s.target, from: a.id, to: b.id })) as {
      added: string[];
    };
    assert.deepEqual(c.added, ['new.txt']);
    const f = (await dispatch(core, 'agentkeep/restorePoint.readFile', {
      target: s.target,
      id: b.id,
      path: 'new.txt',
    })) as { content: string };
    assert.equal(f.content, 'x');
    await assert.rejects(
      dispatch(core, 'agentkeep/restorePoint.readFile', { target: s.target, id: b.id, path: '' }),
      /params\.path: the path is empty/,
    );
  });

  it('helpers: captures compared by store, paths normalised, text vs base64', () => {
    const cap = (store: string, files: Array<[string, string]>) => ({
      store,
      files: files.map(([p, h]) => ({ path: p, size: 1, hash: h })),
    });
    const same = (x: string, y: string) => x === y;
    assert.deepEqual(
      compareCaptures(
        [
          cap('hermes:/h', [
            ['a', '1'],
            ['b', '2'],
          ]),
          cap('hermes:/other', [['z', '9']]),
        ],
        [
          cap('hermes:/h', [
            ['a', '1'],
            ['b', '3'],
            ['c', '4'],
          ]),
        ],
        same,
      ),
      ['hermes:/h:b', 'hermes:/h:c'],
    );
    assert.deepEqual(compareCaptures([cap('hermes:/h', [['a', '1']])], [cap('hermes:/h', [])], same), ['hermes:/h:a']);
    assert.equal(normalizeRelPath('workspace//a/./b/'), 'workspace/a/b');
    assert.throws(() => normalizeRelPath('/workspace/a'), /not a path inside the target/);
    assert.equal(normalizeRelPath('workspace\\a.txt'), 'workspace/a.txt');
    assert.throws(() => normalizeRelPath('./'), /not a path inside the target/);
    assert.deepEqual(encodeContent(Buffer.from('héllo\n')), { encoding: 'utf8', content: 'héllo\n' });
    assert.equal(encodeContent(Buffer.from([0x61, 0, 0x62])).encoding, 'base64');
    assert.equal(encodeContent(Buffer.from([0xff, 0xfe, 0x41])).encoding, 'base64');
  });
});
