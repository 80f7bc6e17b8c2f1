/**
 * Pure helpers of the extension's compare view and notifications (extension/format.ts): which files
 * a ChangeSummary shows (directories left out, agent state first and once), store roots (from the
 * stores' descriptions, as store.describe gives them), short command text, and the reason of a post
 * restore point.
 */
import * as assert from 'node:assert/strict';
import { compareItems, shortCommand, shortReason, storeLocalRoot } from '../../extension/format';
import { describeStore } from '../../sidecar/memory';

describe('extension: compare items', () => {
  const store = 'hermes:/home/me/agent/.hermes';

  it('leaves out directories, lists changed, added, removed files, agent state first and once', () => {
    const changes = {
      added: [
        'workspace/node_modules',
        'workspace/node_modules/left-pad',
        'workspace/node_modules/left-pad/index.js',
        'workspace/node_modules/left-pad/package.json',
        'workspace/package-lock.json',
      ],
      removed: ['workspace/old.txt'],
      changed: ['.hermes/memories/MEMORY.md', 'workspace/package.json'],
      agentChanged: [`${store}:memories/MEMORY.md`],
    };
    const { items, total } = compareItems(changes, { localRoot: '/home/me/agent', stores: [describeStore(store)] });
    assert.equal(total, 6);
    assert.deepEqual(
      items.map((i) => [i.path, i.status]),
      [
        [`${store}:memories/MEMORY.md`, 'changed'],
        ['workspace/package.json', 'changed'],
        ['workspace/node_modules/left-pad/index.js', 'added'],
        ['workspace/node_modules/left-pad/package.json', 'added'],
        ['workspace/package-lock.json', 'added'],
        ['workspace/old.txt', 'removed'],
      ],
    );
    assert.deepEqual(items[0]!.agent, { store, rel: 'memories/MEMORY.md', localRoot: '/home/me/agent/.hermes' });
  });

  it('keeps a file whose name extends a directory name ("a.txt" next to "a/"), and caps the rows', () => {
    const changes = { added: ['a', 'a.txt', 'a/b', 'c'], removed: [], changed: [], agentChanged: [] };
    assert.deepEqual(
      compareItems(changes, { localRoot: '/t', stores: [] }).items.map((i) => i.path),
      ['a.txt', 'a/b', 'c'],
    );
    const many = { added: Array.from({ length: 250 }, (_, i) => `f${i}`), removed: [], changed: [], agentChanged: [] };
    const r = compareItems(many, { localRoot: '/t', stores: [], max: 200 });
    assert.equal(r.items.length, 200);
    assert.equal(r.total, 250);
  });

  it('an agent-state file added since (store outside the target) is shown as added agent state', () => {
    const s = 'hermes:/srv/hermes';
    const changes = { added: ['x'], removed: [], changed: [], agentChanged: [`${s}:skills/new/SKILL.md`] };
    const { items } = compareItems(changes, { localRoot: '/home/me/agent', stores: [describeStore(s)] });
    assert.deepEqual(
      items.map((i) => [i.path, i.status]),
      [
        [`${s}:skills/new/SKILL.md`, 'changed'],
        ['x', 'added'],
      ],
    );
  });

  it('store roots, short commands, post reasons', () => {
    // the root comes from the store's description (store.describe), never from the store string
    assert.equal(storeLocalRoot(describeStore('hermes:/home/me/.hermes/')), '/home/me/.hermes');
    assert.throws(() => describeStore('hermes:relative'), /not absolute/);
    assert.equal(storeLocalRoot('hermes:/home/me/.hermes'), undefined, 'a store not described has no known root');
    assert.equal(shortCommand('apt-get update\napt-get install -y jq'), 'apt-get update && apt-get install -y jq');
    assert.equal(shortCommand('x'.repeat(80)).length, 60);
    const reason = { command: 'npm install left-pad', file: '/w/setup.sh', line: 5 };
    assert.equal(shortReason({ label: 'after: npm install left-pad', kind: 'post', reason }), 'from setup.sh:5');
    assert.equal(shortReason({ label: 'npm install left-pad', kind: 'pre', reason }), 'from setup.sh:5');
  });
});
