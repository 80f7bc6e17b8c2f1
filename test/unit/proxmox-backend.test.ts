/**
 * The Proxmox backend over real HTTPS against the contract simulator: TLS pinning, auth (token and
 * ticket), never resending a mutation, secrets never shown, rollback state, the snapshot tree and
 * markers, discovery and guest-agent file access.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import {
  describeSnapshot,
  discoverAgents,
  guestFileRead,
  guestFileWrite,
  normalizeFingerprint,
  parseMarker,
  type ProxmoxBackend,
} from '../../sidecar/machine/proxmox';
import { makeCert, type PveSim } from '../pve-sim/server';
import { TOKEN_ID, TOKEN_SECRET, rejection, simBackend, simEnv, startSim } from './helpers/pve';

const meta = (label: string) => ({ label, kind: 'manual' as const, createdAt: '2026-11-30T05:00:00.000Z' });

describe('proxmox backend (simulator over HTTPS)', function () {
  this.timeout(20_000);
  let sim: PveSim;
  const open: ProxmoxBackend[] = [];
  const backend = (...a: Parameters<typeof simBackend> extends [unknown, ...infer R] ? R : never): ProxmoxBackend => {
    const b = simBackend(sim, ...a);
    open.push(b);
    return b;
  };
  beforeEach(async () => {
    sim = await startSim({ nodes: ['pve1', 'pve2'] });
    sim.addGuest({ vmid: 101, tags: ['agent'] });
    sim.addGuest({ vmid: 102, type: 'lxc', node: 'pve2', tags: ['agent', 'prod'] });
    sim.addGuest({ vmid: 103, tags: ['db'] });
  });
  afterEach(async () => {
    for (const b of open.splice(0)) b.close();
    await sim.stop();
  });

  describe('TLS', () => {
    it('refuses a wrong pinned fingerprint before sending anything', async () => {
      const other = makeCert('impostor');
      const b = backend(101, { env: simEnv(sim, { AGENTKEEP_PVE_FINGERPRINT: other.fingerprint }) });
      const e = await rejection(b.check());
      assert.equal(e.kind, 'AuthFailed');
      assert.match(
        e.message,
        new RegExp(`fingerprint ${sim.cert.fingerprint}.*not the pinned ${other.fingerprint}; nothing was sent`),
      );
      assert.equal(sim.requests.length, 0);
    });
    it('without a pin or CA the self-signed certificate is not trusted, and the hint shows how to pin', async () => {
      const b = backend(101, { env: { AGENTKEEP_PVE_TOKEN: `${TOKEN_ID}=${TOKEN_SECRET}` } });
      const e = await rejection(b.check());
      assert.equal(e.kind, 'AuthFailed');
      assert.match(e.message, /not trusted/);
      assert.match(e.hint ?? '', /AGENTKEEP_PVE_FINGERPRINT/);
      assert.ok((e.hint ?? '').includes(sim.cert.fingerprint));
      assert.equal(sim.requests.length, 0);
      assert.equal(process.env.NODE_TLS_REJECT_UNAUTHORIZED, undefined);
    });
    it('trusts a CA file (AGENTKEEP_PVE_CA) with full verification', async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'ak-pve-ca-'));
      try {
        writeFileSync(path.join(dir, 'ca.pem'), sim.cert.cert);
        const b = backend(101, {
          env: { AGENTKEEP_PVE_TOKEN: `${TOKEN_ID}=${TOKEN_SECRET}`, AGENTKEEP_PVE_CA: path.join(dir, 'ca.pem') },
        });
        await b.check();
        const other = makeCert('other');
        writeFileSync(path.join(dir, 'ca.pem'), other.cert);
        const e = await rejection(
          backend(101, {
            env: { AGENTKEEP_PVE_TOKEN: `${TOKEN_ID}=${TOKEN_SECRET}`, AGENTKEEP_PVE_CA: path.join(dir, 'ca.pem') },
          }).check(),
        );
        assert.equal(e.kind, 'AuthFailed');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it('normalises fingerprints and rejects malformed ones', () => {
      const fp = sim.cert.fingerprint;
      assert.equal(normalizeFingerprint(fp.toLowerCase().replace(/:/g, '')), fp);
      assert.throws(() => normalizeFingerprint('AB:CD'), /not a SHA-256 fingerprint/);
    });
  });

  describe('auth', () => {
    it('sends the token as PVEAPIToken and names a refused one clearly', async () => {
      await backend(101).check();
      assert.equal(sim.requests[0].headers.authorization, `PVEAPIToken=${TOKEN_ID}=${TOKEN_SECRET}`);
      sim.faults.badToken = true;
      const e = await rejection(backend(101).check());
      assert.equal(e.kind, 'AuthFailed');
      assert.match(e.hint ?? '', /AGENTKEEP_PVE_TOKEN/);
    });
    it('without credentials: AuthFailed naming the variables; a malformed token never echoes the secret', async () => {
      const e = await rejection(backend(101, { env: { AGENTKEEP_PVE_FINGERPRINT: sim.cert.fingerprint } }).check());
      assert.equal(e.kind, 'AuthFailed');
      assert.match(e.hint ?? '', /AGENTKEEP_PVE_TOKEN=USER@REALM!TOKENID=SECRET/);
      const e2 = await rejection(backend(101, { env: { AGENTKEEP_PVE_TOKEN: 'no-realm=topsecretvalue' } }).check());
      assert.equal(e2.kind, 'AuthFailed');
      assert.ok(!`${e2.message} ${e2.hint}`.includes('topsecretvalue'));
    });
    it('ticket: logs in, sends the CSRF token on writes, re-logs in once after an expired ticket', async () => {
      const env = {
        AGENTKEEP_PVE_USER: 'agentkeep@pve',
        AGENTKEEP_PVE_PASSWORD: 'pw-secret-42',
        AGENTKEEP_PVE_FINGERPRINT: sim.cert.fingerprint,
      };
      const logs: string[] = [];
      const b = backend(101, { env, logs });
      await b.create('ak_t1', { meta: meta('t1') });
      const post = sim.mutations()[0];
      assert.ok(post.headers.csrfpreventiontoken);
      assert.match(String(post.headers.cookie), /^PVEAuthCookie=/);
      sim.faults.ticketsValidAfter = Date.now() + 1;
      await new Promise((r) => setTimeout(r, 5));
      await b.create('ak_t2', { meta: meta('t2') });
      assert.equal(sim.requests.filter((r) => r.path === '/access/ticket').length, 2);
      assert.equal(sim.guests.get(101)!.snapshots.size, 2);
      assert.equal(
        sim.mutations().filter((r) => r.path.endsWith('/snapshot')).length,
        2,
        'the refused POST was not acted on; the resend after re-login is the only one acted on',
      );
      for (const l of logs) assert.ok(!l.includes('pw-secret-42') && !l.includes('PVE:agentkeep@pve'), l);
      const bad = await rejection(backend(101, { env: { ...env, AGENTKEEP_PVE_PASSWORD: 'wrong-pw-77' } }).check());
      assert.equal(bad.kind, 'AuthFailed');
      assert.ok(!`${bad.message} ${bad.hint}`.includes('wrong-pw-77'));
    });
  });

  describe('no duplicate mutations', () => {
    it('GETs share kept-alive connections; every POST/DELETE gets a fresh one', async () => {
      const b = backend(101);
      await b.create('ak_c1', { meta: meta('c1') });
      await b.delete('ak_c1');
      const gets = sim.requests.filter((r) => r.method === 'GET').map((r) => r.remotePort);
      assert.ok(new Set(gets).size < gets.length / 2, 'GETs reuse connections');
      for (const m of sim.mutations())
        assert.equal(
          sim.requests.filter((r) => r.remotePort === m.remotePort).length,
          1,
          `${m.method} ${m.path} had its own connection`,
        );
    });
    it('a connection dropped after the create was acted on yields exactly one snapshot and success', async () => {
      sim.faults.drop = { method: 'POST', match: /\/snapshot$/, act: true };
      const b = backend(101);
      const info = await b.create('ak_drop', { meta: meta('drop') });
      assert.equal(info.snapname, 'ak_drop');
      assert.equal(sim.mutations().length, 1);
      assert.deepEqual([...sim.guests.get(101)!.snapshots.keys()], ['ak_drop']);
    });
    it('a connection dropped before the host acted: one POST, no snapshot, and the error says nothing changed', async () => {
      sim.faults.drop = { method: 'POST', match: /\/snapshot$/, act: false };
      const e = await rejection(backend(101).create('ak_drop2', { meta: meta('drop2') }));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /failed after the request was sent/);
      assert.match(e.hint ?? '', /Nothing was changed/);
      assert.equal(sim.mutations().length, 1);
      assert.equal(sim.guests.get(101)!.snapshots.size, 0);
    });
    it('a dropped rollback is found in the task list and waited for', async () => {
      const b = backend(101);
      await b.create('ak_rb', { meta: meta('rb') });
      sim.faults.taskMsByType = { qmrollback: 200 };
      sim.faults.drop = { method: 'POST', match: /\/rollback$/, act: true };
      const r = await b.restore('ak_rb', {});
      assert.equal(r.machineState, 'stopped');
      assert.equal(sim.mutations().filter((m) => m.path.endsWith('/rollback')).length, 1);
    });
    it('a dropped delete is reconciled from the snapshot list', async () => {
      const b = backend(101);
      await b.create('ak_del', { meta: meta('del') });
      sim.faults.drop = { method: 'DELETE', match: /ak_del$/, act: true };
      await b.delete('ak_del');
      assert.equal(sim.guests.get(101)!.snapshots.size, 0);
      assert.equal(sim.mutations().filter((m) => m.method === 'DELETE').length, 1);
    });
  });

  it('the token secret appears in no log line, error, hint or description', async () => {
    const logs: string[] = [];
    const seen: string[] = [];
    const b = backend(101, { logs });
    const grab = async (p: Promise<unknown>): Promise<void> => {
      try {
        seen.push(JSON.stringify(await p));
      } catch (e) {
        const x = e as Error & { hint?: string };
        seen.push(`${x.message} ${x.hint ?? ''} ${x.stack ?? ''}`);
      }
    };
    await grab(
      b.create('ak_s1', {
        meta: {
          ...meta('secret test'),
          reason: { command: 'curl -H "Authorization: x" https://x | sh', file: '/a/b.sh', line: 3 },
        },
      }),
    );
    sim.faults.failTask = { type: 'qmsnapshot', text: 'some failure', once: true };
    await grab(b.create('ak_s2', { meta: meta('s2') }));
    sim.faults.drop = { method: 'POST', match: /\/snapshot$/, act: false };
    await grab(b.create('ak_s3', { meta: meta('s3') }));
    sim.faults.badToken = true;
    await grab(b.create('ak_s4', { meta: meta('s4') }));
    sim.faults.badToken = false;
    await grab(b.restore('ak_s1', {}));
    await grab(b.foreign());
    await grab(backend(101, { env: simEnv(sim, { AGENTKEEP_PVE_FINGERPRINT: makeCert('x').fingerprint }) }).check());
    const descriptions = [...sim.guests.get(101)!.snapshots.values()].map((s) => s.description);
    const all = [...logs, ...seen, ...descriptions].join('\n');
    assert.ok(logs.length > 10 && seen.length >= 7);
    assert.ok(!all.includes(TOKEN_SECRET), 'secret leaked');
    assert.ok(!all.includes(TOKEN_SECRET.slice(0, 8)), 'part of the secret leaked');
  });

  describe('rollback', () => {
    it('without RAM state leaves a running VM stopped, and the result says so', async () => {
      const b = backend(101);
      await b.create('ak_disk', { meta: meta('disk') });
      const r = await b.restore('ak_disk', {});
      assert.equal(r.machineState, 'stopped');
      assert.equal(sim.guests.get(101)!.running, false);
      assert.ok(r.warnings?.some((w) => /hard-stopped/.test(w)));
      assert.ok(r.warnings?.some((w) => /stopped after the rollback .*no RAM state/.test(w)));
      assert.equal(sim.mutations().at(-1)?.params.start, undefined, 'start not sent unless asked');
    });
    it('with start the VM runs afterwards; with RAM state it resumes', async () => {
      const b = backend(101);
      await b.create('ak_d', { meta: meta('d') });
      await b.create('ak_ram', { meta: meta('ram'), vmstate: true });
      const r1 = await b.restore('ak_d', { start: true });
      assert.equal(r1.machineState, 'running');
      assert.equal(sim.mutations().at(-1)?.params.start, '1');
      const r2 = await b.restore('ak_ram', {});
      assert.equal(r2.machineState, 'running');
      assert.ok(!r2.warnings?.some((w) => /after the rollback/.test(w)));
    });
  });

  describe('snapshots that are not ours', () => {
    it('are shown in the tree but neither listed, rolled back nor deleted', async () => {
      const g = sim.guests.get(101)!;
      g.snapshots.set('weekly', { description: 'made by hand', snaptime: 1000, vmstate: false });
      g.parent = 'weekly';
      const b = backend(101);
      await b.create('ak_1', { meta: meta('one') });
      await b.create('ak_2', { meta: meta('two'), vmstate: true });
      for (let i = 0; i < 3; i++) {
        const t = await b.tree(); // the simulator shuffles; the tree is sorted by snaptime, current last
        assert.deepEqual(
          t.map((s) => s.name),
          ['weekly', 'ak_1', 'ak_2', 'current'],
        );
      }
      const t = await b.tree();
      assert.equal(t[1].parent, 'weekly');
      assert.equal(t[2].vmstate, true);
      assert.equal(t[3].current, true);
      assert.equal(t[3].parent, 'ak_2');
      assert.equal(t[0].marker, undefined);
      assert.deepEqual(await b.list(), ['ak_1', 'ak_2']);
      assert.equal((await rejection(b.restore('weekly', {}))).kind, 'RestorePointNotFound');
      assert.equal((await rejection(b.deleteSnapshot('weekly', {}))).kind, 'Unsupported');
      assert.ok(g.snapshots.has('weekly'));
    });
    it('foreign() rebuilds restore points from the description marker', async () => {
      const b = backend(101);
      await b.create('ak_f', {
        meta: {
          ...meta('Before npm i'),
          kind: 'pre',
          important: true,
          reason: { command: 'npm i left-pad', file: '/w/run.sh', line: 7 },
        },
      });
      const desc = sim.guests.get(101)!.snapshots.get('ak_f')!.description;
      assert.match(desc, /^Before npm i\nbefore: npm i left-pad \(\/w\/run\.sh:7\)\nagentkeep:v1:[A-Za-z0-9_-]+$/);
      const [rp] = await b.foreign();
      assert.equal(rp.id, 'ak_f');
      assert.equal(rp.kind, 'pre');
      assert.equal(rp.important, true);
      assert.equal(rp.label, 'Before npm i');
      assert.equal(rp.createdAt, '2026-11-30T05:00:00.000Z');
      await b.editDescription('ak_f', 'Renamed');
      const d2 = sim.guests.get(101)!.snapshots.get('ak_f')!.description;
      assert.match(d2, /^Renamed\nagentkeep:v1:/);
      assert.equal(parseMarker(d2)?.id, 'ak_f');
      assert.equal(parseMarker('agentkeep:v1:!!!'), undefined);
      assert.ok(
        describeSnapshot('ak_x', { ...meta('x'.repeat(500)), reason: { text: 'y'.repeat(5000) } }).length < 2048,
      );
    });
  });

  it('containers: create, rollback and delete run as vz* tasks', async () => {
    const b = backend(102, { type: 'lxc' });
    const info = await b.create('ak_ct1', { meta: meta('ct') });
    assert.equal(info.vmstate, undefined);
    const r = await b.restore('ak_ct1', { start: true });
    assert.equal(r.machineState, 'running');
    await b.delete('ak_ct1');
    const types = [...sim.tasks.values()].map((t) => t.type);
    assert.deepEqual(types.filter((t) => t.startsWith('vz')).sort(), ['vzdelsnapshot', 'vzrollback', 'vzsnapshot']);
    assert.ok(
      [...sim.tasks.keys()].every((u) =>
        /^UPID:pve2:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:vz\w+:102:agentkeep@pve!ak:$/.test(u),
      ),
    );
  });

  it('an abort while waiting stops the waiting and says the task continues on the host', async () => {
    sim.faults.taskMsByType = { qmsnapshot: Infinity };
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    const e = await rejection(backend(101).create('ak_abort', { meta: meta('abort'), signal: ac.signal }));
    assert.match(e.message, /^Interrupted: stopped waiting for snapshot ak_abort .* continues on the host/);
    assert.equal(sim.guests.get(101)!.snapshots.get('ak_abort')?.snapstate, 'prepare');
  });

  it('finds the owning node with node "-" and reports a missing guest as TargetNotFound', async () => {
    await backend(102, { type: 'lxc' }).check();
    assert.ok(sim.requests.some((r) => r.path === '/cluster/resources'));
    assert.ok(sim.requests.some((r) => r.path === '/nodes/pve2/lxc/102/status/current'));
    assert.equal((await rejection(backend(999, {}).check())).kind, 'TargetNotFound');
    const e = await rejection(backend(101, { node: 'pve2' }).check());
    assert.equal(e.kind, 'TargetNotFound');
    assert.match(e.message, /VM 101 does not exist on node pve2/);
    const lx = await rejection(backend(102, { type: 'lxc' }).create('ak_ct', { meta: meta('ct'), vmstate: true }));
    assert.equal(lx.kind, 'Unsupported');
  });

  it('discovers agents by tag across nodes (templates skipped, "" = all)', async () => {
    sim.addGuest({ vmid: 150, tags: ['agent'], template: true });
    const env = simEnv(sim);
    const found = await discoverAgents(`proxmox://127.0.0.1:${sim.port}`, 'agent', env);
    assert.deepEqual(
      found.map((f) => [f.node, f.type, f.vmid]),
      [
        ['pve1', 'qemu', 101],
        ['pve2', 'lxc', 102],
      ],
    );
    assert.equal(found[1].target, `proxmox://127.0.0.1:${sim.port}/pve2/lxc/102`);
    assert.deepEqual(found[1].tags, ['agent', 'prod']);
    assert.equal((await discoverAgents(`proxmox://127.0.0.1:${sim.port}/`, '', env)).length, 3);
    assert.equal((await rejection(discoverAgents('dir:/x', 'agent', env))).kind, 'BadTarget');
  });

  describe('guest agent files', () => {
    it('reads and writes through agent/file-read and agent/file-write', async () => {
      const b = backend(101);
      await guestFileWrite(b, '/root/.hermes/memories/MEMORY.md', 'hello §\n');
      assert.equal(sim.guests.get(101)!.files.get('/root/.hermes/memories/MEMORY.md')?.toString('utf8'), 'hello §\n');
      sim.guests.get(101)!.files.set('/bin', Buffer.from([0, 1, 254, 255]));
      assert.deepEqual([...(await guestFileRead(b, '/bin'))], [0, 1, 254, 255]);
    });
    it('the core keeps the old content before a guest write, so every front end gets the backup', async () => {
      const env = simEnv(sim);
      const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
      Object.assign(process.env, env);
      const state = mkdtempSync(path.join(os.tmpdir(), 'ak-pve-backup-'));
      try {
        const core = new Core({ stateDir: state });
        const target = `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`;
        const mem = '/root/.hermes/memories/MEMORY.md';
        sim.guests.get(101)!.files.set(mem, Buffer.from('old entry\n'));
        const r = await core.guestFileWrite(target, mem, 'new entry\n');
        assert.equal(r.bytes, 10);
        assert.ok(r.backup);
        assert.equal(path.dirname(r.backup), path.join(state, 'guest-backups'));
        assert.match(path.basename(r.backup), /-127\.0\.0\.1_\d+_pve1_qemu_101-MEMORY\.md$/);
        assert.equal(readFileSync(r.backup, 'utf8'), 'old entry\n');
        assert.equal(statSync(r.backup).mode & 0o777, 0o600, 'only the owner reads the backup');
        assert.equal(sim.guests.get(101)!.files.get(mem)!.toString('utf8'), 'new entry\n');
        assert.equal(
          (await core.guestFileWrite(target, '/root/new.txt', 'x')).backup,
          undefined,
          'a new file has nothing to keep',
        );
        const before = sim.mutations().length;
        const e = await rejection(core.guestFileWrite(target, mem, 'a'.repeat(61441)));
        assert.equal(e.kind, 'FileError');
        assert.match(e.message, /at most 61440 bytes.*no backup was made/);
        assert.equal(sim.mutations().length, before, 'nothing sent');
        assert.equal(readdirSync(path.join(state, 'guest-backups')).length, 1);
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
        rmSync(state, { recursive: true, force: true });
      }
    });
    it('restorePoint.preview of a VM says what the rollback does to the guest, and changes nothing', async () => {
      const env = simEnv(sim);
      const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
      Object.assign(process.env, env);
      const state = mkdtempSync(path.join(os.tmpdir(), 'ak-pve-preview-'));
      try {
        const core = new Core({ stateDir: state });
        const target = `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`;
        const disk = await core.createRestorePoint({ target, stores: [] });
        const ram = await core.createRestorePoint({ target, stores: [], vmstate: true });
        const before = sim.mutations().length;
        const p = await core.previewRestorePoint({ target, id: disk.id, scope: 'machine' });
        assert.deepEqual(p.effects, { wholeMachine: true, stopsGuest: true, resumesRam: false, canStartAfter: true });
        assert.equal(p.machine, undefined, 'no file list for a VM');
        assert.deepEqual(p.gitRepos, []);
        const r = await core.previewRestorePoint({ target, id: ram.id, scope: 'both' });
        assert.deepEqual(r.effects, { wholeMachine: true, stopsGuest: true, resumesRam: true, canStartAfter: false });
        assert.equal(
          (await core.previewRestorePoint({ target, id: disk.id, scope: 'machine' })).effects?.stopsGuest,
          true,
        );
        assert.equal(sim.mutations().length, before, 'the preview sent no mutation');
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
        rmSync(state, { recursive: true, force: true });
      }
    });
    it('refuses content over 61440 bytes without sending, and files over 16 MiB', async () => {
      const b = backend(101);
      const e = await rejection(guestFileWrite(b, '/x', 'a'.repeat(61441)));
      assert.equal(e.kind, 'FileError');
      assert.equal(sim.mutations().length, 0);
      sim.guests.get(101)!.files.set('/big', Buffer.alloc(16 * 1024 * 1024 + 1));
      assert.equal((await rejection(guestFileRead(b, '/big'))).kind, 'FileError');
    });
    it('explains a guest without a running agent, and containers', async () => {
      sim.guests.get(101)!.agent = false;
      const e = await rejection(guestFileRead(backend(101), '/x'));
      assert.equal(e.kind, 'Unsupported');
      assert.match(e.hint ?? '', /qemu-guest-agent/);
      const c = await rejection(guestFileRead(backend(102, { type: 'lxc' }), '/x'));
      assert.equal(c.kind, 'Unsupported');
      assert.match(c.message, /Containers have no guest agent/);
    });
  });
});
