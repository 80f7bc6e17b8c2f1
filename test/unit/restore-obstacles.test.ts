/**
 * A restore of agent state onto a store where something is in the way of a captured file (issue 13
 * #5: MEMORY.md that is now a directory): the restore never deletes what its undo point would not
 * hold. A non-empty directory (or a file where a directory must be) is refused before anything is
 * written (no undo point, no file changed, no temp file; restorePoint.preview refuses too); an empty
 * directory is replaced by the file;
 * scope both over a store inside the target restores it, and its undo brings the directory back.
 * Real files, the real core and dir backend.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { describeTree, makeHermesHome, tempSetup } from './dir-fixtures';

const read = (p: string): string => fs.readFileSync(p, 'utf8');

describe('core: agent-state restore onto a path that is in the way', function () {
  this.timeout(30000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let home: string;
  let store: string;
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');

  beforeEach(() => {
    s = tempSetup('ak-obstacle-');
    core = new Core({ stateDir: s.state });
    home = path.join(s.base, 'hermes'); // outside the target: scope agent is the only way back
    makeHermesHome(home);
    store = `hermes:${home}`;
  });
  afterEach(() => s.cleanup());

  /** MEMORY.md replaced by a directory holding a user's file. */
  function memoryBecomesDirectory(): void {
    fs.rmSync(mem());
    fs.mkdirSync(mem());
    fs.writeFileSync(path.join(mem(), 'notes.txt'), 'the user keeps notes here\n');
  }

  it('scope agent, MEMORY.md now a non-empty directory: refused before anything is written', async () => {
    const memBefore = read(mem());
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.appendFileSync(path.join(home, 'memories', 'USER.md'), '§\nLikes tea.\n'); // would be reverted
    memoryBecomesDirectory();
    const before = describeTree(home);
    const points = (await core.listRestorePoints({ target: s.target })).length;
    // the confirmation's preview refuses as the restore does
    await assert.rejects(
      core.previewRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] }),
      (e: AgentKeepError) => e.kind === 'FileError' && /is now a directory holding 1 entry/.test(e.message),
    );
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] }),
      (e: AgentKeepError) => {
        assert.ok(e instanceof AgentKeepError, String(e));
        assert.equal(e.kind, 'FileError', e.message);
        assert.ok(e.message.includes(mem()), e.message);
        assert.match(e.message, /memories\/MEMORY\.md of hermes:.* is now a directory holding 1 entry \(notes\.txt\)/);
        assert.match(e.message, /nothing was changed/);
        assert.match(e.hint ?? '', /^Move it away \(mv .*MEMORY\.md .*MEMORY\.md\.moved\).*restore again/);
        return true;
      },
    );
    assert.deepEqual(describeTree(home), before, 'no file of the store changed, none left behind');
    assert.equal(read(path.join(mem(), 'notes.txt')), 'the user keeps notes here\n');
    assert.equal((await core.listRestorePoints({ target: s.target })).length, points, 'no undo point made');
    assert.equal((await core.agentStatus({ target: s.target })).interruptedRestore, undefined);

    // the fix the error names: move it away, restore again
    fs.renameSync(mem(), `${mem()}.moved`);
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] });
    assert.equal(read(mem()), memBefore);
    assert.ok(res.changes.agentChanged.includes(`${store}:memories/MEMORY.md`));
    assert.equal(read(path.join(`${mem()}.moved`, 'notes.txt')), 'the user keeps notes here\n');
  });

  it('scope agent, MEMORY.md now an empty directory: replaced by the captured file', async () => {
    const memBefore = read(mem());
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.rmSync(mem());
    fs.mkdirSync(mem());
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] });
    assert.ok(fs.lstatSync(mem()).isFile());
    assert.equal(read(mem()), memBefore);
    assert.ok(res.undo, 'an undo point was made');
    assert.deepEqual(
      fs.readdirSync(path.dirname(mem())).filter((n) => n.includes('ak-tmp')),
      [],
      'no temp file left',
    );
  });

  it('scope agent, memories/ now a file: refused (a file where a directory must be), nothing written', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [store] });
    fs.rmSync(path.join(home, 'memories'), { recursive: true });
    fs.writeFileSync(path.join(home, 'memories'), 'a file the user put here\n');
    fs.rmSync(path.join(home, 'SOUL.md')); // would come back
    const before = describeTree(home);
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'agent', stores: [store] }),
      (e: AgentKeepError) => {
        assert.equal(e.kind, 'FileError', e.message);
        assert.match(e.message, /memories is a file, where the restore needs the directory memories/);
        return true;
      },
    );
    assert.deepEqual(describeTree(home), before);
  });

  it('scope both, store inside the target: restored, and the undo point brings the directory back', async () => {
    const inside = path.join(s.tree, '.hermes');
    makeHermesHome(inside);
    const st = `hermes:${inside}`;
    const m = path.join(inside, 'memories', 'MEMORY.md');
    const memBefore = read(m);
    const rp = await core.createRestorePoint({ target: s.target, stores: [st] });
    fs.rmSync(m);
    fs.mkdirSync(m);
    fs.writeFileSync(path.join(m, 'notes.txt'), 'the user keeps notes here\n');
    const res = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [st] });
    assert.equal(read(m), memBefore, 'the machine restore put the file back');
    await core.restoreRestorePoint({ target: s.target, id: res.undo!.id, scope: 'both', stores: [st] });
    assert.ok(fs.lstatSync(m).isDirectory(), 'undo: the directory is back');
    assert.equal(read(path.join(m, 'notes.txt')), 'the user keeps notes here\n', 'with what it held');
  });
});
