/**
 * Issue 10 item 7, the proof (store half): a throwaway store kind registered from a test folder
 * (test/fixtures/throwaway-store/: one folder, one registration line, loaded with AGENTKEEP_PLUGINS)
 * is treated like the real stores by the CLI binary (memory list / lint, a create + restore of scope
 * agent capturing it), by the protocol over the real WebSocket server, and by the extension's tree
 * and inspector logic: its capabilities are shown, nothing is special-cased. It is an API-like store:
 * its location is a URL and it has no local root, so the core can only reach it through the adapter.
 *
 * The backend half goes next to it: a throwaway backend plugin (api.registerBackend) in its own
 * test folder, built by buildPlugin() below and added to AGENTKEEP_PLUGINS (path.delimiter-separated).
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { createMessageConnection, type MessageConnection } from 'vscode-languageserver/node';
import WebSocket from 'ws';
import { riskyConfigOf } from '../../extension/configScope';
import { compareItems, livePath } from '../../extension/format';
import { isLocalMemoryFile, storeItemView } from '../../extension/storeView';
import type { MemoryFile, ResultOf, StoreDescription } from '../../sidecar/protocol';
import { describeStore } from '../../sidecar/memory';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../sidecar/server/wsTransport';
import { storeName } from '../../webview-ui/memory/logic';
import { REPO } from './helpers/paths';
import { buildSidecar, runSidecar, startSidecar, waitForStderr, type RunResult } from './helpers/sidecar';

/** Bundle a plugin folder (TypeScript) to one CommonJS file, as a plugin author would ship it. */
async function buildPlugin(folder: string, outDir: string): Promise<string> {
  const outfile = path.join(outDir, `${path.basename(folder)}.js`);
  await build({
    absWorkingDir: REPO,
    entryPoints: [path.join(folder, 'index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'error',
  });
  return outfile;
}

/** The capabilities every store description carries, throwaway or real. */
const CAPABILITY_KEYS = ['actions', 'budgets', 'diff', 'drift', 'edit', 'lock', 'provenance', 'textFiles'];

describe('registry proof: a throwaway store registered from a test folder', function () {
  this.timeout(120000);
  let pluginDir: string;
  let plugin: string;
  let tmp: string;
  let db: string;
  let store: string;
  let target: string;
  let original: Buffer;
  const env = (): NodeJS.ProcessEnv => ({ AGENTKEEP_PLUGINS: plugin });
  const ak = (...args: string[]): Promise<RunResult> =>
    runSidecar(['--state-dir', path.join(tmp, 'state'), ...args], env());
  const json = async (...args: string[]): Promise<any> => {
    const r = await ak(...args, '--json');
    assert.equal(r.code, 0, `agentkeep ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };

  before(async () => {
    await buildSidecar();
    pluginDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-plugins-'));
    plugin = await buildPlugin(path.join(REPO, 'test', 'fixtures', 'throwaway-store'), pluginDir);
  });
  after(async () => {
    await fs.rm(pluginDir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-proof-'));
    db = path.join(tmp, 'service', 'notes.json');
    await fs.mkdir(path.dirname(db), { recursive: true });
    const memories = [
      { id: 'a1b2c3d4e5f6', text: 'Deploys go to staging first, then production after a manual check.' },
      { id: 'b2c3d4e5f6a1', text: 'Deploys go to staging first, then production after a manual check.' },
      { id: 'c3d4e5f6a1b2', text: 'The user prefers short answers.' },
    ];
    original = Buffer.from(JSON.stringify({ memories }, null, 2) + '\n');
    await fs.writeFile(db, original);
    store = `throwaway://notes?db=${db}`;
    await fs.mkdir(path.join(tmp, 'agent', 'workspace'), { recursive: true });
    await fs.writeFile(path.join(tmp, 'agent', 'workspace', 'package.json'), '{"name":"x"}\n');
    target = `dir:${path.join(tmp, 'agent')}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('the CLI lists it with its description and capabilities, like a real store', async () => {
    const r = await json('memory', 'list', '--store', store);
    assert.deepEqual(
      r.stores.map((f: MemoryFile) => [f.kind, f.file, f.store, f.entries.length]),
      [['throwaway', 'throwaway://notes/memories', store, 3]],
    );
    assert.deepEqual(r.descriptions, [
      {
        store,
        kind: 'throwaway',
        kindName: 'Throwaway notes',
        name: 'notes',
        location: 'throwaway://notes',
        capabilities: {
          edit: true,
          provenance: false,
          budgets: true,
          drift: false,
          diff: true,
          actions: false,
          lock: false,
          textFiles: false,
        },
      },
    ]);
    // a real store is described by the same code, with the same fields (plus its local root)
    const hermes = describeStore(`hermes:${tmp}`);
    assert.deepEqual(Object.keys(hermes.capabilities).sort(), CAPABILITY_KEYS);
    assert.deepEqual(Object.keys(r.descriptions[0].capabilities).sort(), CAPABILITY_KEYS);
    assert.equal(hermes.localRoot, tmp);
    assert.ok(!('localRoot' in r.descriptions[0]), 'an API store has no local root');

    const human = await ak('memory', 'list', '--store', store);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /^Store throwaway:\/\/notes\?db=\S+: Throwaway notes at throwaway:\/\/notes \(not local files\): editable, char budgets, memory diff$/m,
    );
    assert.match(
      human.stdout,
      /^throwaway:\/\/notes\/memories \(throwaway\): 3 entries, \d+\/120 chars \(\d+%\) OVER LIMIT$/m,
    );
    assert.match(human.stdout, /^ {2}c3d4e5f6a1b2 {2}The user prefers short answers\.$/m);

    // the registration line is all it takes: without the plugin the kind is unknown, and the hint
    // lists the registered kinds (which then include it)
    const without = await runSidecar(
      ['--state-dir', path.join(tmp, 'state'), 'memory', 'list', '--store', store, '--json'],
      { AGENTKEEP_PLUGINS: '' },
    );
    assert.equal(without.code, 1);
    const err = JSON.parse(without.stdout).error;
    assert.equal(err.code, 'bad_store');
    assert.match(err.message, /Unknown store kind "throwaway"/);
    assert.doesNotMatch(err.hint, /throwaway/);
    const unknown = await ak('memory', 'list', '--store', 'foo:/x', '--json');
    assert.match(
      JSON.parse(unknown.stdout).error.hint,
      /hermes \(hermes:\/abs\/path\/to\/\.hermes\), .*throwaway \(throwaway:\/\/NAME\?db=\/abs\/path\.json\)/,
    );
    // its own parse errors come back as BadStore with its hint
    const bad = await ak('memory', 'list', '--store', 'throwaway://notes', '--json');
    assert.deepEqual(
      [JSON.parse(bad.stdout).error.code, JSON.parse(bad.stdout).error.hint],
      ['bad_store', 'Write it as throwaway://notes?db=/abs/path/notes.json.'],
    );
    // help lists its form next to the real ones
    assert.match((await ak('memory', 'lint', '--help')).stdout, /throwaway:\/\/NAME\?db=\/abs\/path\.json/);
  });

  it('refuses a plugin path that is relative or does not load, with one line naming it', async () => {
    for (const [value, re] of [
      [
        'plugins/x.js',
        /AGENTKEEP_PLUGINS: "plugins\/x\.js" is not an absolute path\. Name each plugin module by its absolute path/,
      ],
      [path.join(tmp, 'missing.js'), /AGENTKEEP_PLUGINS: cannot load .*missing\.js/],
    ] as const) {
      const r = await runSidecar(['memory', 'list', '--store', store], { AGENTKEEP_PLUGINS: value });
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, re);
    }
  });

  it('memory lint runs the same rules on it (duplicate, over budget), naming the store', async () => {
    const { findings } = await json('memory', 'lint', '--store', store);
    const kinds = findings.map((f: { kind: string }) => f.kind).sort();
    assert.deepEqual(kinds, ['duplicate', 'over-budget']);
    const dup = findings.find((f: { kind: string }) => f.kind === 'duplicate');
    assert.deepEqual(dup.entries.sort(), ['a1b2c3d4e5f6', 'b2c3d4e5f6a1']);
    assert.deepEqual(dup.stores, [store]);
    assert.ok(
      !findings.some((f: { kind: string }) => f.kind === 'untraceable'),
      'no provenance capability: entries are not called untraceable',
    );
  });

  it('a restore point captures it through the adapter; diff, memory diff and restores see it', async () => {
    const rp = await json('restore-point', 'create', '--target', target, '--store', store);
    assert.deepEqual(
      rp.agent.map((a: { store: string; files: Array<{ path: string; size: number }> }) => [
        a.store,
        a.files.map((f) => [f.path, f.size]),
      ]),
      [[store, [['memories.json', original.length]]]],
    );

    // change it through its own edit capability (the core keeps the replaced bytes, as for Hermes)
    const added = await json('memory', 'add', '--store', store, '--text', 'Staging is at 10.0.0.5.');
    assert.equal(added.entry.text, 'Staging is at 10.0.0.5.');
    const diff = await json('restore-point', 'diff', rp.id, '--target', target);
    assert.deepEqual(diff.agentChanged, [`${store}:memories.json`]);
    const mdiff = await json('memory', 'diff', '--from', rp.id, '--target', target);
    assert.deepEqual(
      mdiff.added.map((c: { store: string; after: { text: string } }) => [c.store, c.after.text]),
      [[store, 'Staging is at 10.0.0.5.']],
    );
    assert.deepEqual([mdiff.removed.length, mdiff.changed.length], [0, 0]);

    // scope machine rolls back the target's files and leaves the API store alone (it is not inside)
    await fs.writeFile(path.join(tmp, 'agent', 'workspace', 'package.json'), '{"name":"changed"}\n');
    const machine = await json('restore-point', 'restore', rp.id, '--target', target, '--scope', 'machine', '--yes');
    assert.deepEqual(machine.changes.changed, ['workspace/package.json']);
    assert.deepEqual(machine.changes.agentChanged, []);
    assert.match(await fs.readFile(db, 'utf8'), /10\.0\.0\.5/, 'scope machine kept the store as it is now');

    // scope agent puts the store back through its restore(), after a pre-restore capture of it
    const res = await json('restore-point', 'restore', rp.id, '--target', target, '--scope', 'agent', '--yes');
    assert.deepEqual(res.changes.agentChanged, [`${store}:memories.json`]);
    assert.ok((await fs.readFile(db)).equals(original), 'the store is byte-identical to the capture');
    assert.deepEqual(
      res.undo.agent.map((a: { store: string }) => a.store),
      [store],
    );
    assert.deepEqual((await json('restore-point', 'diff', rp.id, '--target', target)).agentChanged, []);
    // and the undo restore point brings the added entry back
    await json('restore-point', 'restore', res.undo.id, '--target', target, '--scope', 'agent', '--yes');
    assert.match(await fs.readFile(db, 'utf8'), /10\.0\.0\.5/);
  });

  describe('over the protocol (agentkeep serve --ws)', () => {
    let child: ChildProcess | undefined;
    afterEach(async () => {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill();
        await new Promise((r) => child!.once('exit', r));
      }
      child = undefined;
    });

    it('store.describe, agent.status and memory.list describe it like a real store', async () => {
      const token = 'proof-token-0123456789abcdef';
      const tokenFile = path.join(tmp, 'token');
      await fs.writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
      child = startSidecar(
        ['serve', '--ws', '127.0.0.1:0', '--token-file', tokenFile, '--state-dir', path.join(tmp, 'state')],
        env(),
      );
      const url = (await waitForStderr(child, /agentkeep: listening on (ws:\/\/127\.0\.0\.1:\d+)\n/))[1]!;
      const ws = await new Promise<WebSocket>((resolve, reject) => {
        const s = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
        s.once('open', () => resolve(s));
        s.once('error', reject);
      });
      const conn: MessageConnection = createMessageConnection(
        new WebSocketMessageReader(ws),
        new WebSocketMessageWriter(ws),
      );
      conn.listen();
      try {
        await conn.sendRequest('initialize', { processId: null, capabilities: {} });
        const hermesStore = `hermes:${tmp}`;
        const described = (await conn.sendRequest('agentkeep/store.describe', {
          stores: [store, hermesStore],
        })) as ResultOf<'storeDescribe'>;
        assert.deepEqual(
          described.map((d) => [d.kind, d.name, d.location, d.localRoot]),
          [
            ['throwaway', 'notes', 'throwaway://notes', undefined],
            ['hermes', path.basename(path.dirname(tmp)) + '/' + path.basename(tmp), tmp, tmp],
          ],
        );
        const status = (await conn.sendRequest('agentkeep/agent.status', {
          target,
          stores: [store],
        })) as ResultOf<'agentStatus'>;
        assert.deepEqual(
          status.stores.map((s) => [s.store, s.ok, s.description?.kind, s.description?.capabilities.edit]),
          [[store, true, 'throwaway', true]],
        );
        const list = (await conn.sendRequest('agentkeep/memory.list', { stores: [store] })) as ResultOf<'memoryList'>;
        assert.deepEqual(list.descriptions, [described[0]]);
        assert.equal(list.stores[0]!.entries.length, 3);
        await assert.rejects(
          conn.sendRequest('agentkeep/store.describe', { stores: ['foo:/x'] }),
          (e: { data?: { code?: string; hint?: string } }) =>
            e.data?.code === 'bad_store' && /throwaway/.test(e.data.hint ?? ''),
        );
      } finally {
        conn.dispose();
        ws.close();
      }
    });
  });

  it('the extension tree, compare views and inspector show it from its description, nothing special-cased', async () => {
    const d = (await json('memory', 'list', '--store', store)).descriptions[0] as StoreDescription;
    const hermesHome = path.join(tmp, 'agent', '.hermes');
    const hermes = describeStore(`hermes:${hermesHome}`);

    // the store's tree item: kind, where it is, findings, and what it can do in the tooltip
    const item = storeItemView(store, d, 2);
    assert.equal(item.label, 'throwaway');
    assert.equal(item.description, 'throwaway://notes · 2 findings');
    assert.equal(
      item.tooltip.split('\n')[1],
      'Throwaway notes at throwaway://notes (not local files): editable, char budgets, memory diff',
    );
    assert.equal(
      storeItemView(`hermes:${hermesHome}`, hermes, 0).label,
      'hermes',
      'the real store goes through the same function',
    );
    assert.match(
      storeItemView(`hermes:${hermesHome}`, hermes, 0).tooltip,
      /Hermes at .*\.hermes: editable, provenance, char budgets, drift check, memory diff, outside actions, store lock, text files/,
    );
    // its files are not local files: the tree gives them no "open in editor"; a Hermes file is one
    assert.equal(isLocalMemoryFile({ file: 'throwaway://notes/memories' }, d), false);
    assert.equal(isLocalMemoryFile({ file: path.join(hermesHome, 'memories', 'MEMORY.md') }, hermes), true);
    // the inspector's store label
    assert.equal(storeName({ store, description: d }), 'throwaway · notes');

    // a compare view lists its captured file as agent state, with no live side on disk
    const changes = {
      added: [],
      removed: [],
      changed: ['workspace/package.json'],
      agentChanged: [`${store}:memories.json`],
    };
    const { items } = compareItems(changes, { localRoot: path.join(tmp, 'agent'), stores: [d] });
    assert.deepEqual(
      items.map((i) => [i.path, i.agent?.store, i.agent?.rel]),
      [
        [`${store}:memories.json`, store, 'memories.json'],
        ['workspace/package.json', undefined, undefined],
      ],
    );
    assert.equal(livePath(path.join(tmp, 'agent'), items[0]!), undefined);
    assert.equal(livePath(path.join(tmp, 'agent'), items[1]!), path.join(tmp, 'agent', 'workspace', 'package.json'));
    // config-file scoping: an API store adds no agent home
    assert.equal(riskyConfigOf('/elsewhere/config.yaml', { stores: [d] }), undefined);
  });
});
