/**
 * Restore scopes with a real Hermes home: inside the target (the usual ~/.hermes as the target) and
 * outside it. machine = the tree except agent state; agent = only agent state; both = everything.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { fixText } from './helpers/errors';
import { describeTree, makeHermesHome, put, tempSetup } from './dir-fixtures';

const describeTreeAll = describeTree;

const read = (p: string): string => fs.readFileSync(p, 'utf8');

describe('core: restore scopes with a Hermes home inside the target', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let home: string;
  let store: string;

  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
    home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    store = `hermes:${home}`;
    put(s.tree, 'workspace/package.json', '{"name":"demo","dependencies":{}}\n');
  });
  afterEach(() => s.cleanup());

  /** After the restore point: the agent learns things and a package install changes the machine. */
  function changeBoth(): void {
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nInstalled left-pad.\n');
    put(home, 'skills/npm/left-pad/SKILL.md', 'new skill');
    fs.writeFileSync(
      path.join(s.tree, 'workspace/package.json'),
      '{"name":"demo","dependencies":{"left-pad":"1.3.0"}}\n',
    );
    put(s.tree, 'workspace/node_modules/left-pad/index.js', 'module.exports = 1;\n');
    fs.writeFileSync(path.join(home, 'config.yaml'), 'memory:\n  memory_char_limit: 9999\n');
  }

  it('create captures the agent-state files of the store', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    assert.equal(rp.agent.length, 1);
    assert.equal(rp.agent[0].store, store);
    assert.deepEqual(
      rp.agent[0].files.map((f) => f.path),
      ['SOUL.md', 'memories/MEMORY.md', 'memories/USER.md', 'skills/devops/deploy-staging/SKILL.md'],
    );
    for (const f of rp.agent[0].files) assert.match(f.hash, /^[0-9a-f]{64}$/);
  });

  it('machine: rolls back the machine, current memory survives', async () => {
    const memBefore = read(path.join(home, 'memories/MEMORY.md'));
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    changeBoth();
    const memNow = read(path.join(home, 'memories/MEMORY.md'));
    assert.notEqual(memNow, memBefore);
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine', stores: [store] });
    assert.ok(!fs.existsSync(path.join(s.tree, 'workspace/node_modules')), 'package install rolled back');
    assert.match(read(path.join(s.tree, 'workspace/package.json')), /"dependencies":\{\}/);
    assert.match(read(path.join(home, 'config.yaml')), /2200/, 'config is machine state');
    assert.equal(read(path.join(home, 'memories/MEMORY.md')), memNow, 'memory kept');
    assert.ok(fs.existsSync(path.join(home, 'skills/npm/left-pad/SKILL.md')), 'new skill kept');
    assert.deepEqual(res.changes.agentChanged, []);
    assert.ok(!res.changes.changed.includes('.hermes/memories/MEMORY.md'));
  });

  it('agent: restores only agent-state files, removes agent state created since, leaves the machine', async () => {
    const memBefore = read(path.join(home, 'memories/MEMORY.md'));
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    changeBoth();
    fs.rmSync(path.join(home, 'SOUL.md'));
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] });
    assert.equal(read(path.join(home, 'memories/MEMORY.md')), memBefore);
    assert.equal(read(path.join(home, 'SOUL.md')), 'You are a careful agent.\n');
    assert.ok(!fs.existsSync(path.join(home, 'skills/npm/left-pad/SKILL.md')), 'skill created since is removed');
    assert.ok(!fs.existsSync(path.join(home, 'skills/npm')), 'emptied skill dirs pruned');
    assert.ok(fs.existsSync(path.join(s.tree, 'workspace/node_modules/left-pad/index.js')), 'machine untouched');
    assert.match(read(path.join(home, 'config.yaml')), /9999/, 'config is not agent state');
    assert.deepEqual(res.changes.agentChanged, [
      `${store}:SOUL.md`,
      `${store}:memories/MEMORY.md`,
      `${store}:skills/npm/left-pad/SKILL.md`,
    ]);
    assert.deepEqual(res.changes.added, []);
  });

  it('both: everything back; the pre-restore capture brings the new memory back', async () => {
    // Hermes' lock files are not restored; taking the lock creates them empty, as Hermes does
    const describeTree = (root: string): ReturnType<typeof describeTreeAll> =>
      Object.fromEntries(Object.entries(describeTreeAll(root)).filter(([k]) => !k.endsWith('.lock')));
    const before = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    changeBoth();
    const changed = describeTree(s.tree);
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [store] });
    assert.deepEqual(describeTree(s.tree), before);
    assert.equal(res.undo.agent[0].store, store);
    // undo only the agent part: the memory written after the restore point comes back
    await core.restoreRestorePoint({ target: s.target, id: res.undo.id, scope: 'agent', stores: [store] });
    assert.match(read(path.join(home, 'memories/MEMORY.md')), /Installed left-pad/);
    assert.ok(fs.existsSync(path.join(s.tree, 'workspace/package.json')));
    assert.ok(!fs.existsSync(path.join(s.tree, 'workspace/node_modules')));
    await core.restoreRestorePoint({ target: s.target, id: res.undo.id, scope: 'both', stores: [store] });
    assert.deepEqual(describeTree(s.tree), changed);
  });

  it('stores default to the ones the restore point captured', async () => {
    const memBefore = read(path.join(home, 'memories/MEMORY.md'));
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    changeBoth();
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent' });
    assert.equal(read(path.join(home, 'memories/MEMORY.md')), memBefore);
  });

  it('diff reports agent-state changes per store', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    changeBoth();
    const d = await core.diffRestorePoint({ target: s.target, id: rp.id, stores: [store] });
    assert.deepEqual(d.agentChanged, [`${store}:memories/MEMORY.md`, `${store}:skills/npm/left-pad/SKILL.md`]);
    assert.ok(d.changed.includes('.hermes/memories/MEMORY.md'));
    assert.ok(d.added.includes('workspace/node_modules/left-pad/index.js'));
  });

  it('scope agent with a store the restore point did not capture fails before touching anything', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [] }); // explicitly no store (no auto-detection)
    changeBoth();
    const now = describeTree(s.tree);
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] }),
      (e: AgentKeepError) => {
        assert.equal(e.kind, 'BadStore');
        assert.match(e.message, /no agent-state capture/);
        assert.match(fixText(e), /--scope machine/);
        return true;
      },
    );
    assert.deepEqual(describeTree(s.tree), now);
  });
});

describe('core: a Hermes home outside the target', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let home: string;
  let store: string;

  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
    home = path.join(s.base, 'hermes-home');
    makeHermesHome(home);
    store = `hermes:${home}`;
    put(s.tree, 'app/main.py', 'print(1)\n');
  });
  afterEach(() => s.cleanup());

  it('captures the store in the object store; agent and both restore it; machine does not', async () => {
    const memBefore = read(path.join(home, 'memories/MEMORY.md'));
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nlater\n');
    fs.writeFileSync(path.join(s.tree, 'app/main.py'), 'print(2)\n');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine', stores: [store] });
    assert.equal(read(path.join(s.tree, 'app/main.py')), 'print(1)\n');
    assert.match(read(path.join(home, 'memories/MEMORY.md')), /later/);
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] });
    assert.equal(read(path.join(home, 'memories/MEMORY.md')), memBefore);
    fs.appendFileSync(path.join(home, 'memories/USER.md'), '§\nlater\n');
    fs.writeFileSync(path.join(s.tree, 'app/main.py'), 'print(3)\n');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [store] });
    assert.equal(read(path.join(s.tree, 'app/main.py')), 'print(1)\n');
    assert.equal(read(path.join(home, 'memories/USER.md')), 'User prefers concise answers.\n');
  });

  it('agent-state objects survive garbage collection while referenced', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    const other = await core.createRestorePoint({ target: s.target });
    await core.deleteRestorePoint({ target: s.target, id: other.id });
    fs.writeFileSync(path.join(home, 'SOUL.md'), 'changed soul');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent' });
    assert.equal(read(path.join(home, 'SOUL.md')), 'You are a careful agent.\n');
  });
});
