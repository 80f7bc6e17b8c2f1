/**
 * The store registry (sidecar/memory/index.ts): each kind parses its own strings, the unknown-kind
 * hint lists the registered kinds, detection lives with each kind (Hermes homes, Agent Zero roots,
 * ~/.mem0) and only trusts sure markers, and a create without --store captures what they find.
 * Real files (the synthesized fixtures), a real core on a dir: target.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import {
  describeStore,
  detectStores,
  openStore,
  registerStore,
  storeFactories,
  type MemoryStoreAdapter,
  type StoreFactory,
} from '../../sidecar/memory';
import { expectAgentKeepError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';

async function copyDir(from: string, to: string): Promise<void> {
  await fs.cp(from, to, { recursive: true });
}

describe('memory store registry', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-registry-'));
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('registers the three kinds in order, each with its forms; unknown kinds list them', async () => {
    assert.deepEqual(
      storeFactories()
        .slice(0, 3)
        .map((f) => [f.kind, f.forms[0]]),
      [
        ['hermes', 'hermes:/abs/path/to/.hermes'],
        ['agent-zero', 'agent-zero:/abs/root'],
        ['mem0', 'mem0:/abs/dir'],
      ],
    );
    const e = await expectAgentKeepError(
      Promise.resolve().then(() => openStore('zzz:/x')),
      'BadStore',
      /Unknown store kind "zzz"/,
    );
    assert.match(
      e.hint ?? '',
      /^Registered kinds: hermes \(hermes:\/abs\/path\/to\/\.hermes\), agent-zero \(agent-zero:\/abs\/root\), mem0 \(mem0:\/abs\/dir\)/,
    );
    await expectAgentKeepError(
      Promise.resolve().then(() => openStore('zep:/x')),
      'BadStore',
      /not supported yet.*Registered kinds/,
    );
    // each kind parses its own options
    assert.deepEqual(
      (openStore('agent-zero:///srv/a0?url=http://127.0.0.1:50001') as MemoryStoreAdapter & { root: string }).root,
      '/srv/a0',
    );
    await expectAgentKeepError(
      Promise.resolve().then(() => openStore('mem0:/m?collection=x&bogus=1')),
      'BadStore',
      /Unknown option "bogus".*mem0 stores take \?qdrant=, \?collection=/,
    );
  });

  it('describes each kind from what its adapter implements', () => {
    const caps = (spec: string) => describeStore(spec).capabilities;
    assert.deepEqual(caps('hermes:/h'), {
      edit: true,
      provenance: true,
      budgets: true,
      drift: true,
      diff: true,
      actions: true,
      lock: true,
      textFiles: true,
    });
    assert.deepEqual(caps('agent-zero:/a'), {
      edit: true,
      provenance: true,
      budgets: false,
      drift: false,
      diff: true,
      actions: false,
      lock: false,
      textFiles: false,
    });
    assert.deepEqual(caps('mem0:/m'), {
      edit: true, // issue 12 item 7: edits through mem0's REST API (read-only without its URL, saying why)
      provenance: true,
      budgets: false,
      drift: false,
      diff: true,
      actions: false,
      lock: false,
      textFiles: false,
    });
    assert.deepEqual(describeStore('hermes:/home/me/.hermes/'), {
      store: 'hermes:/home/me/.hermes/',
      kind: 'hermes',
      kindName: 'Hermes',
      name: 'me/.hermes',
      location: '/home/me/.hermes',
      localRoot: '/home/me/.hermes',
      capabilities: caps('hermes:/h'),
    });
  });

  it('a factory registered in-process is opened, described and detected like the built-in ones', async () => {
    const marker = path.join(tmp, 'root', 'notes.txt');
    await fs.mkdir(path.dirname(marker), { recursive: true });
    await fs.writeFile(marker, 'x');
    const f: StoreFactory<{ dir: string }> = {
      kind: 'testnotes',
      kindName: 'Test notes',
      forms: ['testnotes:/abs/dir'],
      example: 'testnotes:/tmp/n',
      parse: (rest) => ({ dir: rest }),
      create: (p): MemoryStoreAdapter => ({
        kind: 'testnotes',
        spec: p.spec,
        location: p.options.dir,
        localRoot: p.options.dir,
        check: async () => undefined,
        list: async () => [],
        agentStateFiles: async () => ['notes.txt'],
        isAgentStatePath: (rel) => rel === 'notes.txt',
        capture: async () => [],
        restore: async () => [],
        changedFiles: async () => [],
      }),
      detect: async (root) =>
        (await fs.stat(path.join(root, 'notes.txt')).catch(() => undefined)) ? [`testnotes:${root}`] : [],
    };
    registerStore(f);
    try {
      assert.equal(describeStore('testnotes:/n').kindName, 'Test notes');
      assert.deepEqual(
        (await detectStores(path.join(tmp, 'root'))).map((s) => s.spec),
        [`testnotes:${path.join(tmp, 'root')}`],
      );
    } finally {
      // registering a kind again replaces it; leave a kind that finds nothing for the other tests
      registerStore({ ...f, detect: async () => [] });
    }
  });

  it('detects Hermes homes, Agent Zero roots (an index.pkl) and .mem0 (a SQLite history.db) in a local root', async () => {
    const root = path.join(tmp, 'machine');
    await fs.mkdir(path.join(root, '.hermes', 'memories'), { recursive: true });
    await fs.mkdir(path.join(root, '.hermes', 'profiles', 'work', 'memories'), { recursive: true });
    await copyDir(path.join(FIXTURES, 'memory', 'agent-zero', 'usr'), path.join(root, 'a0', 'usr'));
    await fs.mkdir(path.join(root, '.mem0'), { recursive: true });
    await fs.copyFile(path.join(FIXTURES, 'memory', 'mem0', 'history.db'), path.join(root, '.mem0', 'history.db'));
    assert.deepEqual(
      (await detectStores(root)).map((s) => s.spec),
      [
        `hermes:${path.join(root, '.hermes')}`,
        `hermes:${path.join(root, '.hermes', 'profiles', 'work')}`,
        `agent-zero:${path.join(root, 'a0')}`,
        `mem0:${path.join(root, '.mem0')}`,
      ],
    );
    // no sure marker, no store: an empty usr/memory, a history.db that is not SQLite, a missing root
    const bare = path.join(tmp, 'bare');
    await fs.mkdir(path.join(bare, 'usr', 'memory', 'default'), { recursive: true });
    await fs.mkdir(path.join(bare, '.mem0'), { recursive: true });
    await fs.writeFile(path.join(bare, '.mem0', 'history.db'), 'not a database');
    assert.deepEqual(await detectStores(bare), []);
    assert.deepEqual(await detectStores(path.join(tmp, 'nope')), []);
    assert.deepEqual(await detectStores(''), []);
  });

  it('a create without --store captures every detected store; store.detect answers the same for a folder', async () => {
    const root = path.join(tmp, 'agent');
    await fs.mkdir(path.join(root, '.hermes', 'memories'), { recursive: true });
    await fs.writeFile(path.join(root, '.hermes', 'memories', 'MEMORY.md'), 'Uses pnpm.');
    await copyDir(path.join(FIXTURES, 'memory', 'agent-zero', 'usr'), path.join(root, 'usr'));
    const core = new Core({ stateDir: path.join(tmp, 'state') });
    const rp = await core.createRestorePoint({ target: `dir:${root}` });
    assert.deepEqual(
      rp.agent.map((a) => a.store),
      [`hermes:${path.join(root, '.hermes')}`, `agent-zero:${root}`],
    );
    assert.ok(rp.agent[1]!.files.some((f) => f.path === 'usr/memory/default/index.pkl'));
    const found = await core.detectStoresIn({ root });
    assert.deepEqual(
      found.map((d) => [d.kind, d.localRoot]),
      [
        ['hermes', path.join(root, '.hermes')],
        ['agent-zero', root],
      ],
    );
    await expectAgentKeepError(core.detectStoresIn({ root: 'relative' }), 'InvalidParams', /absolute/);
  });
});
