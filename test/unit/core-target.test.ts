/**
 * Core basics: target parsing and errors, state-dir rules, ids and the journal, keep, status,
 * progress and change notifications, parameter validation.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core, VERSION } from '../../sidecar/core/core';
import { call } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import { fixText } from './helpers/errors';
import { ID_PATTERN, newRestorePointId } from '../../sidecar/core/journal';
import { resolveStateDir } from '../../sidecar/core/state';
import { parseTarget } from '../../sidecar/core/target';
import type { ChangedParams, ProgressParams } from '../../sidecar/protocol';
import { makeHermesHome, put, tempSetup } from './dir-fixtures';

const isErr =
  (kind: string, re?: RegExp, hintRe?: RegExp) =>
  (e: AgentKeepError): boolean => {
    assert.ok(e instanceof AgentKeepError, `not an AgentKeepError: ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    if (re) assert.match(e.message, re);
    if (hintRe) assert.match(fixText(e), hintRe); // hint and next actions, as the CLI prints them
    return true;
  };

describe('core: targets', function () {
  it('parses dir:/abs/path and normalises it', () => {
    const t = parseTarget('dir:/home/me/.hermes/');
    assert.equal(t.backend, 'dir');
    assert.equal(t.path, '/home/me/.hermes');
    assert.equal(t.spec, 'dir:/home/me/.hermes');
    assert.match(t.key, /^[0-9a-f]{16}$/);
    assert.equal(parseTarget('dir:///home/me/x/../.hermes').spec, 'dir:/home/me/.hermes');
    assert.equal(parseTarget('dir:/home/me/.hermes').key, t.key);
  });

  it('rejects relative, empty, scheme-less and unknown targets with the correct form in the hint', () => {
    assert.throws(() => parseTarget('dir:relative/path'), isErr('BadTarget', /relative/, /dir:\//));
    assert.throws(() => parseTarget('dir:'), isErr('BadTarget', /empty/, /dir:\/abs\/path/));
    assert.throws(() => parseTarget(''), isErr('BadTarget', /empty/, /dir:\/abs\/path/));
    assert.throws(() => parseTarget('/abs/no/scheme'), isErr('BadTarget', /no scheme/, /dir:\/abs\/no\/scheme/));
    assert.throws(() => parseTarget('dir:~/x'), isErr('BadTarget', /~/, /absolute/));
    assert.throws(() => parseTarget('ftp:/x'), isErr('BadTarget', /Unknown target scheme/, /dir:\/abs\/path/));
    for (const t of [
      'proxmox://host/100',
      'proxmox:/pve/qemu/100',
      'proxmox://host/pve/vm/100',
      'proxmox://host/pve/qemu/99',
      'proxmox://host:70000/pve/qemu/100',
    ]) {
      assert.throws(() => parseTarget(t), isErr('BadTarget', /./, /proxmox:\/\/HOST/));
    }
  });

  it('parses btrfs:, qemu: and proxmox:// targets; the proxmox key ignores the node', () => {
    const b = parseTarget('btrfs:/srv/agent/');
    assert.deepEqual([b.backend, b.path, b.spec], ['btrfs', '/srv/agent', 'btrfs:/srv/agent']);
    const q = parseTarget('qemu:///run/vm/qmp.sock');
    assert.deepEqual([q.backend, q.path, q.spec], ['qemu', '/run/vm/qmp.sock', 'qemu:/run/vm/qmp.sock']);
    assert.throws(() => parseTarget('qemu://host/x.sock'), isErr('BadTarget', /local path/, /qemu:\/host\/x\.sock/));
    const p = parseTarget('proxmox://PVE.lan/pve1/QEMU/101/');
    assert.equal(p.spec, 'proxmox://pve.lan/pve1/qemu/101');
    assert.deepEqual(p.options, { host: 'pve.lan', port: 8006, node: 'pve1', type: 'qemu', vmid: 101 });
    assert.equal(p.path, '');
    assert.equal(parseTarget('proxmox://pve.lan/-/qemu/101').key, p.key);
    assert.notEqual(parseTarget('proxmox://pve.lan/pve1/lxc/101').key, p.key);
    const v6 = parseTarget('proxmox://[fd00::1]:8443/pve1/lxc/200');
    assert.deepEqual(v6.options, { host: 'fd00::1', port: 8443, node: 'pve1', type: 'lxc', vmid: 200 });
    assert.equal(v6.spec, 'proxmox://[fd00::1]:8443/pve1/lxc/200');
  });

  it('a missing target directory or a file is TargetNotFound', async () => {
    const s = tempSetup();
    try {
      const core = new Core({ stateDir: s.state });
      await assert.rejects(
        core.createRestorePoint({ target: `dir:${s.tree}-missing` }),
        isErr('TargetNotFound', /does not exist/, /dir:/),
      );
      put(s.base, 'a-file', 'x');
      await assert.rejects(
        core.createRestorePoint({ target: `dir:${path.join(s.base, 'a-file')}` }),
        isErr('TargetNotFound', /not a directory/),
      );
      await assert.rejects(core.createRestorePoint({ target: 'dir:rel' }), isErr('BadTarget'));
    } finally {
      s.cleanup();
    }
  });
});

describe('core: state dir', function () {
  it('resolves --state-dir, then AGENTKEEP_STATE_DIR, then XDG_STATE_HOME, then ~/.local/state', () => {
    assert.equal(resolveStateDir('/x/y', { AGENTKEEP_STATE_DIR: '/a' }), '/x/y');
    assert.equal(resolveStateDir(undefined, { AGENTKEEP_STATE_DIR: '/a', XDG_STATE_HOME: '/s' }), '/a');
    assert.equal(resolveStateDir(undefined, { XDG_STATE_HOME: '/s' }), '/s/agentkeep');
    assert.equal(resolveStateDir(undefined, {}), path.join(os.homedir(), '.local', 'state', 'agentkeep'));
    assert.throws(() => resolveStateDir('relative/dir', {}), isErr('BadStateDir', /not an absolute path/));
  });

  it('refuses a state dir inside the target and a target inside the state dir', async () => {
    const s = tempSetup();
    try {
      const inside = new Core({ stateDir: path.join(s.tree, '.agentkeep') });
      await assert.rejects(
        inside.createRestorePoint({ target: s.target }),
        isErr('BadStateDir', /inside the target/, /--state-dir/),
      );
      assert.ok(!fs.existsSync(path.join(s.tree, '.agentkeep')), 'nothing written into the target');
      const same = new Core({ stateDir: s.tree });
      await assert.rejects(same.createRestorePoint({ target: s.target }), isErr('BadStateDir'));
      fs.mkdirSync(path.join(s.state, 'sub'), { recursive: true });
      const core = new Core({ stateDir: s.state });
      await assert.rejects(
        core.createRestorePoint({ target: `dir:${path.join(s.state, 'sub')}` }),
        isErr('BadStateDir', /inside the state dir/),
      );
      // through a symlink too
      fs.symlinkSync(s.tree, path.join(s.base, 'tree-link'));
      const viaLink = new Core({ stateDir: path.join(s.base, 'tree-link', 'state') });
      await assert.rejects(viaLink.createRestorePoint({ target: s.target }), isErr('BadStateDir'));
    } finally {
      s.cleanup();
    }
  });

  it('an unwritable state dir is BadStateDir', async function () {
    if (process.getuid?.() === 0) {
      // root can write anywhere: use a path below a regular file instead
      const s = tempSetup();
      try {
        put(s.base, 'file', 'x');
        const core = new Core({ stateDir: path.join(s.base, 'file', 'state') });
        await assert.rejects(
          core.createRestorePoint({ target: s.target }),
          isErr('BadStateDir', /not usable/, /writable/),
        );
      } finally {
        s.cleanup();
      }
      return;
    }
    const s = tempSetup();
    try {
      fs.mkdirSync(s.state, { mode: 0o500 });
      const core = new Core({ stateDir: s.state });
      await assert.rejects(core.createRestorePoint({ target: s.target }), isErr('BadStateDir'));
    } finally {
      s.cleanup();
    }
  });
});

describe('core: journal, keep, status, notifications', function () {
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup();
    for (let i = 0; i < 300; i++) put(s.tree, `d/${i}.txt`, `file ${i}`);
  });
  afterEach(() => s.cleanup());

  it('ids are ak_YYYYMMDD_HHMMSS_xxxx in UTC', () => {
    const id = newRestorePointId(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)));
    assert.match(id, /^ak_20260102_030405_[0-9a-f]{4}$/);
    assert.ok(ID_PATTERN.test(id) && id.length <= 40);
  });

  it('lists newest first, writes one JSON file per restore point, keeps, and rejects unknown ids', async () => {
    const core = new Core({ stateDir: s.state });
    const a = await core.createRestorePoint({
      target: s.target,
      label: 'first',
      reason: { command: 'npm install left-pad', line: 3, class: 'deps' },
    });
    await new Promise((r) => setTimeout(r, 5));
    const b = await core.createRestorePoint({ target: s.target, label: 'second', kind: 'pre', pairOf: undefined });
    const list = await core.listRestorePoints({ target: s.target });
    assert.deepEqual(
      list.map((r) => r.id),
      [b.id, a.id],
    );
    assert.deepEqual(list[1].reason, { command: 'npm install left-pad', line: 3, class: 'deps' });
    assert.ok(!Number.isNaN(Date.parse(a.createdAt)) && a.createdAt.endsWith('Z'));
    const jdir = path.join(s.state, 'journal', parseTarget(s.target).key);
    assert.deepEqual(fs.readdirSync(jdir).sort(), [`${a.id}.json`, `${b.id}.json`, 'target.json'].sort());
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(jdir, `${a.id}.json`), 'utf8')), a);
    const kept = await core.keepRestorePoint({ target: s.target, id: a.id });
    assert.equal(kept.status, 'kept');
    assert.equal((await core.listRestorePoints({ target: s.target }))[1].status, 'kept');
    await assert.rejects(
      core.keepRestorePoint({ target: s.target, id: 'ak_20200101_000000_0000' }),
      isErr('RestorePointNotFound', /No restore point/, /restore-point list/),
    );
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: '../etc/passwd', scope: 'both' }),
      isErr('RestorePointNotFound'),
    );
    // another target has its own journal
    assert.deepEqual(await core.listRestorePoints({ target: `dir:${s.base}/elsewhere` }), []);
  });

  it('agent.status reports reachability, count, latest, stores and the version', async () => {
    const core = new Core({ stateDir: s.state });
    const home = path.join(s.base, 'home');
    makeHermesHome(home);
    const empty = await core.agentStatus({ target: s.target });
    assert.equal(empty.reachable, true);
    assert.equal(empty.restorePoints, 0);
    assert.equal(empty.latest, undefined);
    assert.equal(empty.version, VERSION);
    assert.equal(VERSION, JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8')).version);
    const rp = await core.createRestorePoint({ target: s.target });
    const st = await core.agentStatus({ target: s.target, stores: [`hermes:${home}`, `hermes:${s.base}/nope`] });
    assert.equal(st.restorePoints, 1);
    assert.equal(st.latest?.id, rp.id);
    assert.equal(st.backend, 'dir');
    assert.deepEqual(
      st.stores.map((x) => x.ok),
      [true, false],
    );
    assert.match(st.stores[1].message ?? '', /does not exist/);
    const gone = await core.agentStatus({ target: `dir:${s.base}/missing` });
    assert.equal(gone.reachable, false);
    assert.match(gone.message ?? '', /does not exist/);
  });

  it('reports throttled progress for a token and change notifications', async () => {
    const progress: ProgressParams[] = [];
    const changed: ChangedParams[] = [];
    const core = new Core({
      stateDir: s.state,
      onProgress: (p) => progress.push(p),
      onChanged: (c) => changed.push(c),
    });
    const rp = await core.createRestorePoint({ target: s.target, progressToken: 'tok-1' });
    assert.ok(progress.length >= 2 && progress.length < 40, `${progress.length} notifications`);
    assert.ok(progress.every((p) => p.token === 'tok-1'));
    assert.equal(progress[0].stage, 'scan');
    assert.equal(progress.at(-1)!.stage, 'done');
    assert.ok(progress.some((p) => p.stage === 'store' && p.total === 300 && p.done === 300));
    const n = progress.length;
    await core.createRestorePoint({ target: s.target }); // no token: no progress
    assert.equal(progress.length, n);
    fs.writeFileSync(path.join(s.tree, 'd/1.txt'), 'x');
    await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine', progressToken: 'tok-2' });
    assert.ok(progress.some((p) => p.token === 'tok-2' && p.stage === 'restore'));
    assert.equal(progress.at(-1)!.stage, 'done');
    await core.keepRestorePoint({ target: s.target, id: rp.id });
    await core.deleteRestorePoint({ target: s.target, id: rp.id });
    assert.deepEqual(
      changed.map((c) => c.what),
      ['restorePoints', 'restorePoints', 'restorePoints', 'restorePoints', 'restorePoints'],
    );
    assert.ok(changed.every((c) => c.target === s.target));
  });

  it('invalid params name the field (validated once, at the boundary the CLI and the servers share)', async () => {
    const core = new Core({ stateDir: s.state });
    await assert.rejects(
      call(core, 'restorePointRestore', { target: s.target, id: 'x', scope: 'everything' as 'both' }),
      isErr('InvalidParams', /scope/),
    );
    await assert.rejects(call(core, 'restorePointCreate', {} as { target: string }), isErr('InvalidParams', /target/));
  });

  it('memory.list reads the stores', async () => {
    const home = path.join(s.base, 'home');
    makeHermesHome(home);
    const core = new Core({ stateDir: s.state });
    const r = await core.listMemory({ stores: [`hermes:${home}`] });
    // MEMORY.md and USER.md first; SOUL.md and skills (read-only) after them when present
    assert.deepEqual(r.stores.map((f) => f.kind).slice(0, 2), ['hermes-memory', 'hermes-user']);
    assert.equal(r.stores[0].entries.length, 2);
    await assert.rejects(core.listMemory({ stores: ['nope:/x'] }), isErr('BadStore'));
  });
});
