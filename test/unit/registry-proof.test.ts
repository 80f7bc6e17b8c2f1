/**
 * Issue 10 item 7, the proof (store half first): a throwaway store kind registered from a test folder
 * (test/fixtures/throwaway-store/: one folder, one registration line, loaded with AGENTKEEP_PLUGINS)
 * is treated like the real stores by the CLI binary (memory list / lint, a create + restore of scope
 * agent capturing it), by the protocol over the real WebSocket server, and by the extension's tree
 * and inspector logic: its capabilities are shown, nothing is special-cased. It is an API-like store:
 * its location is a URL and it has no local root, so the core can only reach it through the adapter.
 *
 * The backend half is the second suite below: a throwaway backend plugin (api.registerBackend) in
 * test/fixtures/throwaway-backend/, built by buildPlugin() and added to AGENTKEEP_PLUGINS next to the
 * store (path.delimiter-separated).
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-languageserver/node';
import WebSocket from 'ws';
import { riskyConfigOf } from '../../extension/configScope';
import { compareItems, livePath, targetName, usageText } from '../../extension/format';
import { canRamState, isVmTarget } from '../../extension/proxmoxModel';
import { agentItemView } from '../../extension/targetView';
import { isLocalMemoryFile, storeItemView } from '../../extension/storeView';
import type { MemoryFile, ResultOf, StoreDescription } from '../../sidecar/protocol';
import { TargetDescription } from '../../sidecar/protocol';
import { AgentKeepError } from '../../sidecar/core/errors';
import { ObjectStore } from '../../sidecar/core/objects';
import { StateLayout } from '../../sidecar/core/state';
import { describeTarget } from '../../sidecar/core/target';
import type { BackendFactory } from '../../sidecar/machine';
import { describeStore } from '../../sidecar/memory';
import type { PluginModule } from '../../sidecar/plugins';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../sidecar/server/wsTransport';
import { storeName } from '../../webview-ui/memory/logic';
import * as throwawayBackend from '../fixtures/throwaway-backend';
import { REPO } from './helpers/paths';
import { buildSidecar, expectedExit, runSidecar, startSidecar, waitForStderr, type RunResult } from './helpers/sidecar';

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
    const out = JSON.parse(r.stdout);
    assert.equal(r.code, expectedExit(args, out), `agentkeep ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return out;
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

/**
 * Issue 10 item 7, the backend half: a throwaway backend (test/fixtures/throwaway-backend/: one
 * folder, one registration line, loaded with AGENTKEEP_PLUGINS next to the throwaway store) with its
 * own scheme `toy:`, its own parse and forms, and a capability profile unlike dir's (no diff or
 * compare, readFile yes, RAM state on request, no local root). The CLI binary, the protocol over the
 * real stdio server and the extension's Agent-view logic treat it like the real backends: what it
 * can do comes from its description, nothing names its scheme.
 */
describe('registry proof: a throwaway backend registered from a test folder', function () {
  this.timeout(120000);
  let pluginDir: string;
  let plugins: string;
  let tmp: string;
  let disk: string;
  let target: string;
  let store: string;
  let db: string;
  const env = (): NodeJS.ProcessEnv => ({ AGENTKEEP_PLUGINS: plugins });
  const ak = (...args: string[]): Promise<RunResult> =>
    runSidecar(['--state-dir', path.join(tmp, 'state'), ...args], env());
  const json = async (...args: string[]): Promise<any> => {
    const r = await ak(...args, '--json');
    const out = JSON.parse(r.stdout);
    assert.equal(r.code, expectedExit(args, out), `agentkeep ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return out;
  };
  const failure = async (...args: string[]): Promise<{ code: string; message: string; hint: string }> => {
    const r = await ak(...args, '--json');
    assert.equal(r.code, 1, `agentkeep ${args.join(' ')} should fail: ${r.stdout}`);
    return JSON.parse(r.stdout).error;
  };
  const read = (rel: string): Promise<string> => fs.readFile(path.join(disk, rel), 'utf8');

  before(async () => {
    await buildSidecar();
    pluginDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-plugins-'));
    const backend = await buildPlugin(path.join(REPO, 'test', 'fixtures', 'throwaway-backend'), pluginDir);
    const storePlugin = await buildPlugin(path.join(REPO, 'test', 'fixtures', 'throwaway-store'), pluginDir);
    plugins = [backend, storePlugin].join(path.delimiter);
  });
  after(async () => {
    await fs.rm(pluginDir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-proof-'));
    disk = path.join(tmp, 'box-disk');
    await fs.mkdir(path.join(disk, 'etc'), { recursive: true });
    await fs.writeFile(path.join(disk, 'etc', 'app.conf'), 'mode=v1\n');
    await fs.writeFile(path.join(disk, 'notes.txt'), 'hello\n');
    await fs.writeFile(`${disk}.ram`, 'pid 42 running\n');
    target = `toy:box?disk=${disk}`;
    db = path.join(tmp, 'notes.json');
    await fs.writeFile(db, JSON.stringify({ memories: [{ id: 'a1b2c3d4e5f6', text: 'Ship on Fridays.' }] }) + '\n');
    store = `throwaway://notes?db=${db}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('its factory keeps the backend contract: description fits the protocol, capabilities match its methods', () => {
    // activate() with a recording api: the contract is checked in-process without registering
    // anything in this process's registry (other test files list the real backends)
    let f: BackendFactory<any> | undefined;
    const mod: PluginModule = throwawayBackend;
    mod.activate({
      registerBackend: (x) => (f = x as BackendFactory<any>),
      registerStore: () => undefined,
      AgentKeepError,
    });
    assert.ok(f, 'activate registered a backend');
    assert.deepEqual([f.scheme, f.prefix, f.forms], ['toy', 'toy:', ['toy:NAME?disk=/abs/dir']]);
    const r = f.parse(f.example.slice(f.prefix.length), f.example);
    const t = { backend: f.scheme, path: r.path ?? '', spec: r.spec, key: 'k', options: r.options };
    const d = f.describe(t);
    assert.equal(TargetDescription.safeParse(d).success, true, 'the description fits the protocol');
    const layout = new StateLayout(path.join(tmp, 'state'));
    const b = f.create({ target: t, layout, objects: new ObjectStore(layout.objectsDir) });
    const c = d.capabilities;
    assert.equal(c.diff, typeof b.diff === 'function');
    assert.equal(c.compare, typeof b.compare === 'function');
    assert.equal(c.readFile, typeof b.readFile === 'function');
    assert.equal(c.relabel, typeof b.relabel === 'function');
    assert.equal(c.ramState, b.capabilities.ramState);
    assert.deepEqual(
      [c.diff, c.compare, c.readFile, c.ramState, c.ramStateOnRequest, d.localRoot],
      [false, false, true, true, true, undefined],
    );
    // a different profile from dir's, which is what the front ends must follow
    const dir = describeTarget(`dir:${disk}`).capabilities;
    assert.deepEqual([dir.diff, dir.compare, dir.ramState], [true, true, false]);
    // its own parse errors: BadTarget with its own form as the hint
    assert.throws(
      () => f!.parse('box', 'toy:box'),
      (e: AgentKeepError) =>
        e.kind === 'BadTarget' && e.hint === f!.formHint && /toy:NAME\?disk=\/abs\/dir/.test(e.hint),
    );
    assert.throws(() => f!.parse('box?disk=rel/dir', 'toy:box?disk=rel/dir'), /not an absolute path/);
  });

  it('the CLI describes it, lists its scheme and form, and refuses bad toy targets with its own hint', async () => {
    const d = await json('target', 'describe', '--target', target);
    assert.deepEqual([d.target, d.backend, d.name, d.kind, d.localRoot], [target, 'toy', 'toy box', 'vm', undefined]);
    const human = await ak('target', 'describe', '--target', target);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(
      human.stdout.trimEnd(),
      `Target ${target}: toy box (toy vm, no local files): RAM state on request, read files, snapshot while running, ` +
        'slow snapshots; no diff, compare',
    );
    // a real backend through the same command and the same code
    const real = await ak('target', 'describe', '--target', `dir:${disk}`);
    assert.equal(
      real.stdout.trimEnd(),
      `Target dir:${disk}: box-disk (dir directory at ${disk}): diff, compare, read files, snapshot while running, ` +
        'fast snapshots; no RAM state',
    );

    // an unknown scheme: the hint lists the registered schemes, the toy among them
    const unknown = await failure('restore-point', 'list', '--target', 'ftp:/x');
    assert.equal(unknown.code, 'bad_target');
    assert.match(unknown.hint, /^Use dir:, btrfs:, qemu:, proxmox:\/\/ or toy:\. /);
    // without the plugin, the scheme is unknown and not listed: the registration line is all it takes
    const without = await runSidecar(
      ['--state-dir', path.join(tmp, 'state'), 'target', 'describe', '--target', target, '--json'],
      {
        AGENTKEEP_PLUGINS: '',
      },
    );
    const err = JSON.parse(without.stdout).error;
    assert.deepEqual([without.code, err.code], [1, 'bad_target']);
    assert.match(err.message, /Unknown target scheme "toy:"/);
    assert.doesNotMatch(err.hint, /toy/);
    // its own parse errors come back as BadTarget with its own hint
    const bad = await failure('restore-point', 'create', '--target', 'toy:box');
    assert.deepEqual(
      [bad.code, bad.hint],
      ['bad_target', 'Write the target as toy:NAME?disk=/abs/dir, e.g. toy:box?disk=/srv/toy/box.'],
    );
    // help lists its form next to the real ones
    assert.match(
      (await ak('restore-point', 'create', '--help')).stdout,
      /dir:\/abs\/path,[\s\S]*toy:NAME\?disk=\/abs\/dir/,
    );
  });

  it('the CLI creates, lists, restores and deletes its restore points; --vmstate is taken because it says ramState', async () => {
    const withRam = await ak(
      'restore-point',
      'create',
      '--target',
      target,
      '--store',
      store,
      '--label',
      'ram',
      '--vmstate',
      '--json',
    );
    assert.equal(withRam.code, 0, withRam.stderr);
    assert.doesNotMatch(withRam.stderr, /--vmstate/, 'no "ignored" note: the target can hold RAM state');
    const rp1 = JSON.parse(withRam.stdout);
    assert.deepEqual(
      [rp1.machine.backend, rp1.machine.files, rp1.machine.vmstate, rp1.agent.map((a: { store: string }) => a.store)],
      ['toy', 2, true, [store]],
    );
    // the same flag on a dir target is ignored, with the note (the capability decides, not the scheme)
    await fs.mkdir(path.join(tmp, 'plain'));
    const onDir = await ak(
      'restore-point',
      'create',
      '--target',
      `dir:${path.join(tmp, 'plain')}`,
      '--vmstate',
      '--json',
    );
    assert.equal(onDir.code, 0, onDir.stderr);
    assert.match(onDir.stderr, /--vmstate applies to VM targets .* so it is ignored/);
    assert.equal(JSON.parse(onDir.stdout).machine.vmstate, undefined);

    // the toy "VM" changes and stops (no RAM), then a second restore point without RAM state
    await fs.writeFile(path.join(disk, 'etc', 'app.conf'), 'mode=v2\n');
    await fs.writeFile(path.join(disk, 'new.txt'), 'later\n');
    await fs.rm(`${disk}.ram`);
    const rp2 = await json('restore-point', 'create', '--target', target, '--label', 'disk only');
    assert.equal(rp2.machine.vmstate, undefined);
    const human = await ak('restore-point', 'create', '--target', target, '--label', 'third');
    assert.match(human.stdout, /^Created restore point ak_\S+ "third": 3 entries, /m, human.stdout);

    const list = await json('restore-point', 'list', '--target', target);
    assert.deepEqual(
      list.map((r: { label: string }) => r.label),
      ['third', 'disk only', 'ram'],
    );
    const table = await ak('restore-point', 'list', '--target', target);
    assert.match(table.stdout, new RegExp(rp1.id));

    // diff: the capability says no, so the core answers Unsupported (no special case in the CLI)
    const diff = await failure('restore-point', 'diff', rp1.id, '--target', target);
    assert.equal(diff.code, 'unsupported');
    assert.match(diff.message, /The toy backend cannot list file changes/);

    // restore the first one (scope both): disk, RAM and the store go back
    await fs.writeFile(db, '{"memories":[]}\n');
    const res = await json('restore-point', 'restore', rp1.id, '--target', target, '--scope', 'both', '--yes');
    assert.deepEqual(res.changes.changed, ['etc/app.conf']);
    assert.deepEqual(res.changes.added, ['new.txt']);
    assert.deepEqual(res.changes.agentChanged, [`${store}:memories.json`]);
    assert.equal(res.machineState, 'running', 'RAM state came back: the toy VM runs');
    assert.equal(await read('etc/app.conf'), 'mode=v1\n');
    assert.equal(await fs.stat(path.join(disk, 'new.txt')).catch(() => undefined), undefined);
    assert.equal(await fs.readFile(`${disk}.ram`, 'utf8'), 'pid 42 running\n');
    // the undo restore point (taken without RAM state) brings the later disk back, stopped
    const undo = await json('restore-point', 'restore', res.undo.id, '--target', target, '--scope', 'machine', '--yes');
    assert.equal(undo.machineState, 'stopped');
    assert.equal(await read('etc/app.conf'), 'mode=v2\n');
    assert.equal(await fs.stat(`${disk}.ram`).catch(() => undefined), undefined);

    // delete: the backend removes its own snapshot file
    const key = await snapshotKeyDir();
    assert.ok((await fs.readdir(key)).includes(`${rp2.id}.json`));
    await json('restore-point', 'delete', rp2.id, '--target', target, '--yes');
    assert.ok(!(await fs.readdir(key)).includes(`${rp2.id}.json`), 'its snapshot is gone from its storage');
    assert.ok(!(await json('restore-point', 'list', '--target', target)).some((r: { id: string }) => r.id === rp2.id));
  });

  /** The toy backend's own storage folder of the target (<state>/toy/<key>). */
  async function snapshotKeyDir(): Promise<string> {
    const root = path.join(tmp, 'state', 'toy');
    const [key] = await fs.readdir(root);
    return path.join(root, key!);
  }

  describe('over the protocol (agentkeep serve --stdio) and in the extension', () => {
    let child: ChildProcess | undefined;
    let conn: MessageConnection | undefined;
    const request = <R>(method: string, params: unknown): Promise<R> => conn!.sendRequest(method, params) as Promise<R>;
    beforeEach(async () => {
      child = startSidecar(['serve', '--stdio', '--state-dir', path.join(tmp, 'state')], env());
      conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
      conn.listen();
      await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
      await conn.sendNotification('initialized', {});
    });
    afterEach(async () => {
      conn?.dispose();
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill();
        await new Promise((r) => child!.once('exit', r));
      }
      child = undefined;
    });

    it('target.describe, agent.status, restorePoint.create/list/readFile/restore; diff and compare are Unsupported', async () => {
      const d = await request<TargetDescription>('agentkeep/target.describe', { target });
      assert.deepEqual(
        [d.backend, d.name, d.capabilities.diff, d.capabilities.ramStateOnRequest],
        ['toy', 'toy box', false, true],
      );
      const status = await request<ResultOf<'agentStatus'>>('agentkeep/agent.status', { target });
      assert.deepEqual([status.backend, status.reachable, status.restorePoints], ['toy', true, 0]);
      assert.deepEqual(status.description, d);

      const rp = await request<ResultOf<'restorePointCreate'>>('agentkeep/restorePoint.create', {
        target,
        label: 'over rpc',
        vmstate: true,
      });
      assert.deepEqual([rp.machine.backend, rp.machine.vmstate], ['toy', true]);
      const second = await request<ResultOf<'restorePointCreate'>>('agentkeep/restorePoint.create', {
        target,
        label: 'b',
      });
      const list = await request<ResultOf<'restorePointList'>>('agentkeep/restorePoint.list', { target });
      assert.deepEqual(
        list.map((r) => r.id),
        [second.id, rp.id],
      );
      const file = await request<ResultOf<'restorePointReadFile'>>('agentkeep/restorePoint.readFile', {
        target,
        id: rp.id,
        path: 'etc/app.conf',
      });
      assert.deepEqual([file.type, file.content], ['file', 'mode=v1\n']);

      for (const [method, params] of [
        ['agentkeep/restorePoint.diff', { target, id: rp.id }],
        ['agentkeep/restorePoint.compare', { target, from: rp.id, to: second.id }],
      ] as const) {
        await assert.rejects(request(method, params), (e: { data?: { code?: string } }) => {
          assert.equal(e.data?.code, 'unsupported', method);
          return true;
        });
      }

      await fs.writeFile(path.join(disk, 'etc', 'app.conf'), 'mode=v3\n');
      const res = await request<ResultOf<'restorePointRestore'>>('agentkeep/restorePoint.restore', {
        target,
        id: rp.id,
        scope: 'machine',
      });
      assert.deepEqual([res.changes.changed, res.machineState], [['etc/app.conf'], 'running']);
      assert.equal(await read('etc/app.conf'), 'mode=v1\n');
    });

    it('the Agent view shows its name, backend and capabilities from its description; RAM-state create is offered', async () => {
      await request('agentkeep/restorePoint.create', { target, label: 'one' });
      const status = await request<ResultOf<'agentStatus'>>('agentkeep/agent.status', { target, stores: [store] });
      const usage = await request<ResultOf<'restorePointUsage'>>('agentkeep/restorePoint.usage', { target });
      const d = status.description;

      // the agent row (tree.ts takes label, description, icon and tooltip from agentItemView)
      const v = agentItemView(target, d, status, usage);
      assert.equal(v.label, 'toy box');
      assert.equal(v.description, `reachable · toy · ${usageText(usage)}`);
      assert.equal(v.icon, 'vm-active');
      const lines = v.tooltip.split('\n\n');
      assert.ok(lines.includes('Backend: toy · reachable'), v.tooltip);
      assert.ok(
        lines.includes(
          'Can: RAM state on request, read files, snapshot while running, slow snapshots · not: diff, compare',
        ),
        v.tooltip,
      );
      assert.ok(lines.includes('Restore points: 1'));
      assert.ok(lines.includes(`Store \`${store}\`: ok`));
      // a real backend goes through the same function and shows its own profile
      const dir = describeTarget(`dir:${disk}`);
      const dirView = agentItemView(`dir:${disk}`, dir, { ...status, backend: 'dir', description: dir });
      assert.equal(dirView.label, 'box-disk');
      assert.ok(
        dirView.tooltip.includes(
          'Can: diff, compare, read files, snapshot while running, fast snapshots · not: RAM state',
        ),
      );

      // what the extension decides from the description: it is a VM (cancellable long tasks, VM
      // rollback wording), its restore points can hold RAM state on request, it has no live side
      assert.equal(targetName(target, d), 'toy box');
      assert.equal(isVmTarget(d), true);
      assert.equal(canRamState(d), true, 'agentkeep.ramState: the RAM-state create command is offered');
      assert.equal(canRamState(dir), false);
      assert.equal(livePath(d.localRoot, { path: 'etc/app.conf', status: 'changed' }), undefined);
      assert.ok(riskyConfigOf('/anywhere/package.json', { stores: [] }, d), 'no local root: any config file counts');
      // the RAM-state create command's menus depend on the context key, never on a backend name
      const pkg = JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8'));
      const menus = Object.values(
        pkg.contributes.menus as Record<string, Array<{ command: string; when?: string }>>,
      ).flat();
      const ram = menus.filter((m) => m.command === 'agentkeep.createRestorePointWithRam');
      assert.ok(ram.length >= 2 && ram.every((m) => /\bagentkeep\.ramState\b/.test(m.when ?? '')), JSON.stringify(ram));
      const schemes = /\b(dir|btrfs|qemu|proxmox|toy)\b/;
      assert.deepEqual(
        menus.filter((m) => schemes.test(m.when ?? '')),
        [],
        'no menu is keyed on a backend name',
      );
    });
  });
});
