/**
 * restorePoint.preview on real dir targets: the files a restore of each scope removes, reverts and
 * brings back, memory entries lost and kept (one rule for every front end), and git repositories
 * inside the target whose HEAD or branches the restore moves (real `git` commits; issue 13 item 6).
 * The preview changes nothing; the restore that follows does what it said.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { call } from '../../sidecar/core/dispatch';
import { parsePackedRefs } from '../../sidecar/core/gitrepos';
import { samplePaths } from '../../sidecar/core/preview';
import { describeTree, makeHermesHome, put, tempSetup } from './dir-fixtures';
import { expectAgentKeepError } from './helpers/errors';

/** Run git in `cwd` with a fixed identity and no user or system config; returns stdout trimmed. */
function git(cwd: string, ...args: string[]): string {
  const env = {
    ...process.env,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.invalid',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.invalid',
  };
  return execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
}

/** A commit of one file change; returns the new HEAD. */
function commit(repo: string, file: string, text: string): string {
  fs.writeFileSync(path.join(repo, file), text);
  git(repo, 'add', file);
  git(repo, 'commit', '-q', '-m', `write ${file}: ${text.trim()}`);
  return git(repo, 'rev-parse', 'HEAD');
}

describe('core: restorePoint.preview', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let repo: string;

  beforeEach(() => {
    s = tempSetup('ak-preview-');
    core = new Core({ stateDir: s.state });
    put(s.tree, 'workspace/setup.sh', '#!/bin/sh\nnpm install left-pad\n');
    repo = path.join(s.tree, 'workspace', 'proj');
    fs.mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
  });
  afterEach(() => s.cleanup());

  it('names a nested git repository whose HEAD a machine restore moves back, and the restore does it', async () => {
    const c1 = commit(repo, 'README.md', 'one\n');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    commit(repo, 'README.md', 'two\n');
    const c3 = commit(repo, 'README.md', 'three\n');
    git(repo, 'branch', 'feature');
    put(s.tree, 'workspace/new.txt', 'made after the restore point');
    fs.writeFileSync(path.join(s.tree, 'workspace/setup.sh'), '#!/bin/sh\n');

    const before = describeTree(s.tree);
    const p = await call(core, 'restorePointPreview', { target: s.target, id: rp.id, scope: 'machine' });
    assert.deepEqual(describeTree(s.tree), before, 'the preview changes nothing');
    assert.equal(p.restorePoint.id, rp.id);
    assert.equal(p.effects, undefined, 'a directory target has no VM effects');
    assert.ok(p.machine);
    assert.ok(p.machine.added.items.some((g) => g.path === 'workspace/new.txt'));
    assert.ok(p.machine.changed.items.some((g) => g.path === 'workspace/setup.sh'));
    assert.equal(p.agentFiles, undefined, 'scope machine puts no agent state back');
    assert.deepEqual(p.gitRepos, [
      {
        path: 'workspace/proj',
        effect: 'moved',
        head: { current: { ref: 'refs/heads/main', commit: c3 }, restored: { ref: 'refs/heads/main', commit: c1 } },
        branches: [
          { name: 'feature', current: c3 },
          { name: 'main', current: c3, restored: c1 },
        ],
      },
    ]);

    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.equal(git(repo, 'rev-parse', 'HEAD'), c1, 'the restore moved HEAD back as the preview said');
    assert.equal(git(repo, 'branch', '--list', 'feature'), '', 'and deleted the branch made since');
  });

  it('reads packed refs and a detached HEAD, and names a repository made since as removed', async () => {
    const c1 = commit(repo, 'a.txt', 'a\n');
    git(repo, 'tag', 'v1');
    git(repo, 'pack-refs', '--all');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const c2 = commit(repo, 'a.txt', 'b\n');
    git(repo, 'pack-refs', '--all');
    git(repo, 'checkout', '-q', '--detach', c2);
    const other = path.join(s.tree, 'other');
    fs.mkdirSync(other);
    git(other, 'init', '-q', '-b', 'trunk');
    const o1 = commit(other, 'x', 'x\n');

    const p = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    const byPath = new Map(p.gitRepos.map((r) => [r.path, r]));
    assert.deepEqual([...byPath.keys()], ['other', 'workspace/proj']);
    assert.deepEqual(byPath.get('other'), {
      path: 'other',
      effect: 'removed',
      head: { current: { ref: 'refs/heads/trunk', commit: o1 } },
      branches: [],
    });
    const proj = byPath.get('workspace/proj')!;
    assert.equal(proj.effect, 'moved');
    assert.deepEqual(proj.head, { current: { commit: c2 }, restored: { ref: 'refs/heads/main', commit: c1 } });
    assert.deepEqual(proj.branches, [{ name: 'main', current: c2, restored: c1 }], 'the tag is not a branch');
    // the parser on its own: peeled lines and the header are skipped
    const packed = parsePackedRefs(`# pack-refs with: peeled fully-peeled sorted\n${c1} refs/heads/main\n^${c2}\n`);
    assert.deepEqual([...packed], [['refs/heads/main', c1]]);
  });

  it('says nothing about git when only the work tree changed, and nothing for scope agent', async () => {
    commit(repo, 'a.txt', 'a\n');
    const home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    const store = `hermes:${home}`;
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.writeFileSync(path.join(repo, 'a.txt'), 'edited, not committed\n');
    const m = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.deepEqual(m.gitRepos, []);
    assert.ok(m.machine?.changed.items.some((g) => g.path === 'workspace/proj/a.txt'));
    commit(repo, 'a.txt', 'committed\n');
    const a = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'agent' });
    assert.equal(a.machine, undefined, 'scope agent leaves the machine alone');
    assert.deepEqual(a.gitRepos, []);
    assert.equal(a.agentFiles?.count, 0);
  });

  it('one memory rule: learned entries are lost with agent/both, kept with machine; removed come back', async () => {
    const home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    const store = `hermes:${home}`;
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    const list = async () => (await core.listMemory({ stores: [store] })).stores.flatMap((f) => f.entries);
    const first = (await list())[0]!;
    await core.removeMemory({ store, entry: first.id });
    await core.addMemory({ store, text: 'Staging moved to port 2222.' });

    for (const scope of ['agent', 'both'] as const) {
      const p = await core.previewRestorePoint({ target: s.target, id: rp.id, scope });
      assert.ok(p.memory, scope);
      assert.deepEqual(
        p.memory.lost.items.map((e) => e.text),
        ['Staging moved to port 2222.'],
        scope,
      );
      assert.equal(p.memory.lost.items[0]!.store, store);
      assert.deepEqual(
        p.memory.broughtBack.items.map((e) => e.text),
        [first.text],
        scope,
      );
      assert.equal(p.memory.kept.count, 0);
      assert.ok(
        p.agentFiles?.items.some((g) => g.path === `${store}:memories/MEMORY.md`),
        'MEMORY.md is put back',
      );
    }
    const m = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    assert.deepEqual(m.memory, {
      lost: { count: 0, items: [] },
      broughtBack: { count: 0, items: [] },
      kept: { count: 1, items: [m.memory!.kept.items[0]!] },
    });
    assert.equal(m.memory!.kept.items[0]!.text, 'Staging moved to port 2222.');
    assert.ok(
      !m.machine?.changed.items.some((g) => g.path.startsWith('.hermes/memories')),
      'scope machine spares the memory files',
    );
    assert.deepEqual(m.warnings, []);
  });

  it('refuses what the restore refuses, and says when a store cannot be compared', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    await expectAgentKeepError(
      core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'agent' }),
      'BadStore',
      /nothing to restore/,
    );
    await expectAgentKeepError(
      core.previewRestorePoint({ target: s.target, id: 'ak_nope', scope: 'both' }),
      'RestorePointNotFound',
    );
    const home = path.join(s.base, 'home');
    makeHermesHome(home);
    const store = `hermes:${home}`;
    await expectAgentKeepError(
      core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [store] }),
      'BadStore',
      /no agent-state capture/,
    );
    // scope machine with a store the restore point did not capture: the restore leaves it alone; the
    // preview says it could not compare it
    const p = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'machine', stores: [store] });
    assert.equal(p.memory, undefined, 'not shown as "no memory changes"');
    assert.equal(p.warnings.length, 1);
    assert.match(p.warnings[0]!, new RegExp(`memory of ${store} could not be compared`));
  });

  it('counts whole lists and samples them: directories fold their contents, at most `limit` items', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    for (let i = 0; i < 30; i++) put(s.tree, `workspace/node_modules/pkg${i}/index.js`, `${i}`);
    for (let i = 0; i < 5; i++) put(s.tree, `workspace/f${i}.txt`, `${i}`);
    const p = await core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'machine', limit: 3 });
    const added = p.machine!.added;
    assert.equal(added.count, 1 + 30 * 2 + 5, 'node_modules, its 30 folders and files, 5 files');
    assert.equal(added.groups, 6);
    assert.deepEqual(added.items, [
      { path: 'workspace/f0.txt', inside: 0 },
      { path: 'workspace/f1.txt', inside: 0 },
      { path: 'workspace/f2.txt', inside: 0 },
    ]);
    assert.deepEqual(samplePaths(['a/nm', 'a/nm/x', 'a/nm/x/y', 'a/p.json'], 10), {
      count: 4,
      groups: 2,
      items: [
        { path: 'a/nm', inside: 2 },
        { path: 'a/p.json', inside: 0 },
      ],
    });
  });
});
