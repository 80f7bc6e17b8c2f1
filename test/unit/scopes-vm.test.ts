/**
 * Restore scopes on a VM target (issue 11 item 3) with real parts: the Proxmox contract simulator
 * (test/pve-sim, over HTTPS) holds VM 101, whose disk is a real directory (SimGuest.disk: a snapshot
 * copies it, a rollback puts the copy back), and a real OpenSSH server on 127.0.0.1 stands for the
 * guest's SSH: it stops when the rollback hard-stops the VM and listens again when the VM "boots"
 * (sim.onPower). The agent's Hermes home (a copy of test/fixtures/memory/hermes) is that disk,
 * reached as `hermes:ssh://user@127.0.0.1:PORT/…`. Locks are real flocks (python3 fcntl, as Hermes).
 * Then a real QEMU VM (firmware only, qemu: target) with the same kind of store.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { agentItemView } from '../../extension/targetView';
import { Core } from '../../sidecar/core/core';
import { call } from '../../sidecar/core/dispatch';
import type { ProgressParams } from '../../sidecar/protocol';
import { describeStore } from '../../sidecar/memory';
import { closeSshConnections } from '../../sidecar/memory/transport/ssh';
import type { PveSim, SimGuest } from '../pve-sim/server';
import { expectAgentKeepError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';
import { simEnv, startSim } from './helpers/pve';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { startVm, stopAllVms, type Vm } from './helpers/qemu';
import { startSshd, type TestSshd } from './helpers/sshd';

/** A python3 process holding fcntl.flock(LOCK_EX) on `file` for `seconds`, appending `write` to `mem` first if given. */
async function holdLock(file: string, seconds: number, write?: { mem: string; text: string }): Promise<ChildProcess> {
  const code =
    'import fcntl,sys,time\nf=open(sys.argv[1],"a+")\nfcntl.flock(f,fcntl.LOCK_EX)\n' +
    'if len(sys.argv)>3:\n  open(sys.argv[3],"a").write(sys.argv[4])\n' +
    'print("held",flush=True)\ntime.sleep(float(sys.argv[2]))\nfcntl.flock(f,fcntl.LOCK_UN)\nsys.stdin.read()';
  const args = ['-c', code, file, String(seconds), ...(write ? [write.mem, write.text] : [])];
  const py = spawn('python3', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    py.once('error', reject);
    py.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
  });
  return py;
}

describe('scopes on a VM target (Proxmox simulator, the guest SSH a real sshd)', function () {
  this.timeout(120_000);
  let sim: PveSim;
  let guest: SimGuest;
  let sshd: TestSshd;
  let base: string;
  let home: string;
  let state: string;
  let store: string;
  let target: string;
  let core: Core;
  let events: ProgressParams[];
  let holder: ChildProcess | undefined;
  /** ms from "running" to sshd listening again; Infinity: the guest never comes back. */
  let bootMs: number;
  /** The pending "boot" of the simulated guest (its sshd resumes when it fires). */
  let bootTimer: NodeJS.Timeout | undefined;
  let onBoot: (() => Promise<void>) | undefined;
  const saved: Record<string, string | undefined> = {};
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');
  const read = (f: string): Promise<string> => fs.readFile(f, 'utf8');

  before(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-scopes-vm-'));
    sshd = await startSshd();
  });
  after(async () => {
    closeSshConnections();
    await sshd?.stop();
    await fs.rm(base, { recursive: true, force: true });
  });
  beforeEach(async () => {
    sim = await startSim();
    home = await fs.mkdtemp(path.join(base, 'disk-'));
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), home, { recursive: true });
    // machine state on the same disk: a package list the rollback must put back
    await fs.writeFile(path.join(home, 'packages.txt'), 'left-pad 1.0\n');
    guest = sim.addGuest({ vmid: 101, tags: ['agent'], disk: home });
    bootMs = 800;
    onBoot = undefined;
    sim.onPower = (_g, running) => {
      // a stop cancels a boot still under way (a previous test's boot timer resumed sshd in the middle
      // of the next test's rollback, so its write-back did not wait: seen in fresh-clone runs)
      clearTimeout(bootTimer);
      bootTimer = undefined;
      // a stopped guest drops its SSH sessions too: no cached connection outlives the stop
      if (!running) {
        closeSshConnections();
        void sshd.pause();
      } else if (Number.isFinite(bootMs))
        bootTimer = setTimeout(async () => {
          bootTimer = undefined;
          await onBoot?.(); // what the guest does while it boots, before its sshd answers
          await sshd.resume();
        }, bootMs);
    };
    for (const [k, v] of Object.entries(simEnv(sim))) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    state = await fs.mkdtemp(path.join(base, 'state-'));
    events = [];
    core = new Core({ stateDir: state, onProgress: (p) => events.push(p) });
    store = `hermes:${sshd.url(home)}`;
    target = `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`;
  });
  afterEach(async () => {
    holder?.kill('SIGKILL');
    holder = undefined;
    sim.onPower = undefined;
    clearTimeout(bootTimer);
    bootTimer = undefined;
    await sshd.resume();
    closeSshConnections();
    await sim.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  /** After the restore point: the agent learns something, and a package upgrade changes the machine. */
  async function changeBoth(): Promise<string> {
    await fs.appendFile(mem(), '\n§\nUpgraded left-pad to 2.0 on the VM.');
    await fs.writeFile(path.join(home, 'packages.txt'), 'left-pad 2.0\n');
    return read(mem());
  }

  it('create captures the guest store over SSH; memory diff between two restore points; the preview lists lost entries', async () => {
    const rp1 = await core.createRestorePoint({ target, stores: [store] });
    assert.equal(rp1.machine.backend, 'proxmox');
    const cap = rp1.agent.find((a) => a.store === store);
    assert.ok(cap, JSON.stringify(rp1.agent));
    assert.ok(cap.files.some((f) => f.path === 'memories/MEMORY.md'));
    assert.ok(cap.files.some((f) => f.path === 'state.db'));
    await changeBoth();
    const rp2 = await core.createRestorePoint({ target, stores: [store] });
    // the diff of the two captures works while the guest is unreachable (only the actions need it)
    await sshd.pause();
    closeSshConnections();
    const d = await core.diffMemory({ target, from: rp1.id, to: rp2.id });
    assert.deepEqual(
      d.added.map((c) => c.after?.text),
      ['Upgraded left-pad to 2.0 on the VM.'],
    );
    assert.deepEqual(d.removed, []);
    assert.ok(
      (d.warnings ?? []).some((w) => /actions between the two restore points were not read/.test(w)),
      JSON.stringify(d.warnings),
    );
    await sshd.resume();
    // what a restore of rp1 loses (scopes agent, both) and keeps (scope machine), in the guest's memory
    const both = await core.previewRestorePoint({ target, id: rp1.id, scope: 'both' });
    assert.equal(both.memory?.lost.count, 1);
    assert.equal(both.memory?.lost.items[0].text, 'Upgraded left-pad to 2.0 on the VM.');
    assert.equal(both.effects?.stopsGuest, true);
    const machine = await core.previewRestorePoint({ target, id: rp1.id, scope: 'machine' });
    assert.equal(machine.memory?.lost.count, 0);
    assert.equal(machine.memory?.kept.items[0].text, 'Upgraded left-pad to 2.0 on the VM.');
  });

  it('both: the VM rollback puts the memory back too (as before)', async () => {
    const before = await read(mem());
    const rp = await core.createRestorePoint({ target, stores: [store] });
    await changeBoth();
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'both', start: true });
    assert.equal(r.writeBack, undefined);
    assert.equal(await read(mem()), before);
    assert.equal(await read(path.join(home, 'packages.txt')), 'left-pad 1.0\n');
  });

  it('machine: rolls back the VM, waits for the guest, writes the current memory back (progress on the way)', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const now = await changeBoth();
    const t0 = Date.now();
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine', start: true, progressToken: 't' });
    assert.ok(Date.now() - t0 >= 700, 'waited for the guest to boot');
    assert.equal(await read(path.join(home, 'packages.txt')), 'left-pad 1.0\n', 'machine rolled back');
    assert.equal(await read(mem()), now, "the agent's current memory is kept");
    assert.equal(r.writeBack?.status, 'done');
    assert.deepEqual(r.writeBack?.stores, [store]);
    // how long it waited for the guest's sshd: within the restore's own time (the ≥ 700 ms above is the
    // boot; how much of it falls after the rollback's own steps depends on the machine's load, so no floor)
    const waited = r.writeBack?.waitedMs;
    assert.ok(typeof waited === 'number' && waited >= 0 && waited <= Date.now() - t0, String(waited));
    assert.deepEqual(r.changes.agentChanged, [`${store}:memories/MEMORY.md`]);
    assert.ok(
      r.undo.agent.some((a) => a.store === store),
      'the capture is in the undo point',
    );
    const said = events.filter((e) => e.stage.startsWith('write-back')).map((e) => e.message);
    assert.ok(
      said.some((m) => /Waiting for .* to be reachable/.test(m)),
      said.join('\n'),
    );
    assert.ok(said.includes(`Wrote the agent state back into ${describeStore(store).name}`), said.join('\n'));
    assert.equal((await core.agentStatus({ target, stores: [store] })).pendingWriteBack, undefined);
  });

  it('machine, the guest never comes back: the capture is kept, status says so, retention keeps it, reapply writes it', async () => {
    bootMs = Infinity;
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const now = await changeBoth();
    const t0 = Date.now();
    const r = await core.restoreRestorePoint({
      target,
      id: rp.id,
      scope: 'machine',
      start: true,
      writeBackTimeoutMs: 1500,
      progressToken: 't',
    });
    const took = Date.now() - t0;
    assert.ok(took >= 1400 && took < 15_000, `gave up after the timeout (${took} ms)`);
    assert.equal(r.writeBack?.status, 'pending');
    const pending = r.writeBack!.pending!;
    assert.equal(pending.undo, r.undo.id);
    assert.deepEqual(pending.stores, [store]);
    assert.match(pending.message, /refused the connection|not reachable|did not answer/);
    assert.match(pending.message, /gave up after \d+ s/);
    assert.ok(r.warnings?.some((w) => w.includes(`restore ${r.undo.id} with scope agent`)));
    assert.deepEqual(pending.actions?.[0].params, { target, id: r.undo.id, scope: 'agent', stores: [store] });
    const name = describeStore(store).name;
    assert.ok(events.some((e) => e.message === `Kept the agent state of ${name} for a re-apply`));
    // the rolled-back memory is what is there now; agent.status shows the pending write-back
    assert.notEqual(await read(mem()).catch(() => ''), now);
    const st = await core.agentStatus({ target, stores: [store] });
    assert.equal(st.pendingWriteBack?.undo, r.undo.id);
    assert.deepEqual(st.pendingWriteBack?.actions, pending.actions);
    // the Agent view's agent row warns and says where the memory is kept
    const row = agentItemView(target, st.description, st);
    assert.equal(row.icon, 'warning');
    assert.match(row.description, /^memory not written back · /);
    assert.ok(row.tooltip.includes(`It is kept in ${r.undo.id}: restore it with scope agent`), row.tooltip);
    // retention never deletes the restore point that holds it (another one is the newest)
    await core.createRestorePoint({ target, stores: [] });
    const pr = await core.pruneRestorePoints({ target, keep: 0, minAgeMs: 0 });
    assert.ok(!pr.deleted.some((d) => d.id === r.undo.id), JSON.stringify(pr));
    assert.ok(
      pr.kept.some((k) => k.id === r.undo.id && /written back/.test(k.reason)),
      JSON.stringify(pr.kept),
    );
    // a re-apply while the guest is still away fails clearly and keeps it pending
    await expectAgentKeepError(call(core, 'restorePointRestore', pending.actions![0].params as never), 'StoreNotFound');
    assert.ok((await core.agentStatus({ target })).pendingWriteBack);
    // the guest is back: the one action writes the memory back, and nothing is pending any more
    await sshd.resume();
    await call(core, 'restorePointRestore', pending.actions![0].params as never);
    assert.equal(await read(mem()), now);
    assert.equal(await read(path.join(home, 'packages.txt')), 'left-pad 1.0\n', 'the machine stays rolled back');
    assert.equal((await core.agentStatus({ target })).pendingWriteBack, undefined);
  });

  it('machine, the VM stays stopped (no RAM state, no --start): pending at once, naming why', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    await changeBoth();
    const t0 = Date.now();
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
    assert.ok(Date.now() - t0 < 10_000);
    assert.equal(r.machineState, 'stopped');
    assert.equal(r.writeBack?.status, 'pending');
    assert.match(r.writeBack!.pending!.message, /guest is stopped after the rollback/);
    assert.equal(guest.running, false);
    // the user starts the VM; a later scope machine restore that writes back fine leaves this earlier
    // pending write-back in place
    guest.running = true;
    await sshd.resume();
    const again = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine', start: true });
    assert.equal(again.writeBack?.status, 'done');
    assert.equal((await core.agentStatus({ target })).pendingWriteBack?.undo, r.undo.id);
  });

  it('machine: the write-back waits for a Hermes lock holder in the guest, then writes', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const now = await changeBoth();
    // as the guest boots, Hermes takes its memory lock for 1.5 s (and writes nothing) before sshd answers
    let lockedAt = 0;
    onBoot = async () => {
      holder = await holdLock(`${mem()}.lock`, 1.5);
      lockedAt = Date.now();
    };
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine', start: true });
    assert.ok(lockedAt > 0, 'the lock was held');
    assert.ok(Date.now() - lockedAt >= 1400, `waited for the lock (${Date.now() - lockedAt} ms)`);
    assert.equal(r.writeBack?.status, 'done');
    assert.equal(await read(mem()), now);
  });

  it('machine: memory the agent wrote after the guest came back is never overwritten (kept pending, named)', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const before = await read(mem());
    await changeBoth();
    onBoot = async () => {
      holder = await holdLock(`${mem()}.lock`, 0.3, { mem: mem(), text: '\n§\nLearned right after boot.' });
    };
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine', start: true });
    assert.equal(r.writeBack?.status, 'pending');
    assert.match(r.writeBack!.pending!.message, /the agent wrote memories\/MEMORY\.md after the rollback/);
    assert.equal(await read(mem()), `${before}\n§\nLearned right after boot.`, 'the new entry is kept');
    // the re-apply (restore with scope agent) first takes its undo point, which holds that entry
    const re = await call(core, 'restorePointRestore', r.writeBack!.pending!.actions![0].params as never);
    assert.ok((re as { undo: { agent: unknown[] } }).undo.agent.length === 1);
    assert.match(await read(mem()), /Upgraded left-pad to 2\.0/);
  });

  it('agent: writes the captured memory into the running guest under its lock, no VM rollback; undo', async () => {
    const before = await read(mem());
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const now = await changeBoth();
    const rollbacks = (): number => sim.mutations().filter((m) => m.path.endsWith('/rollback')).length;
    holder = await holdLock(`${mem()}.lock`, 0.8);
    const t0 = Date.now();
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent' });
    assert.ok(Date.now() - t0 >= 700, "waited for Hermes' lock in the guest");
    assert.equal(rollbacks(), 0, 'no VM rollback');
    assert.equal(guest.running, true);
    assert.equal(await read(mem()), before);
    assert.equal(await read(path.join(home, 'packages.txt')), 'left-pad 2.0\n', 'the machine is left alone');
    assert.deepEqual(r.changes.agentChanged, [`${store}:memories/MEMORY.md`]);
    // the undo point holds what was replaced
    await core.restoreRestorePoint({ target, id: r.undo.id, scope: 'agent' });
    assert.equal(await read(mem()), now);
  });

  it('both on a local target with an unreachable SSH store is refused before anything is written (QA: it stopped half-way)', async () => {
    const tree = await fs.mkdtemp(path.join(base, 'tree-'));
    await fs.writeFile(path.join(tree, 'app.conf'), 'v1\n');
    const local = `dir:${tree}`;
    const rp = await core.createRestorePoint({ target: local, stores: [store] });
    await fs.writeFile(path.join(tree, 'app.conf'), 'v2\n');
    const before = await core.listRestorePoints({ target: local });
    await sshd.pause();
    closeSshConnections();
    try {
      await expectAgentKeepError(
        core.restoreRestorePoint({ target: local, id: rp.id, scope: 'both' }),
        'StoreNotFound',
        /scope both\) writes the agent state of .*cannot be read now.*Nothing was changed/s,
      );
    } finally {
      await sshd.resume();
    }
    assert.equal(await read(path.join(tree, 'app.conf')), 'v2\n', 'the machine side was not touched');
    assert.deepEqual(
      (await core.listRestorePoints({ target: local })).map((r) => r.id),
      before.map((r) => r.id),
      'no undo point was taken',
    );
    const st = await core.agentStatus({ target: local });
    assert.equal(st.interruptedRestore, undefined, 'no half-restored warning');
  });

  it('bad input: machine with an unreachable store or without an undo point is refused, nothing changed', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    await changeBoth();
    const snaps = guest.snapshots.size;
    const mutations = sim.mutations().length;
    await sshd.pause();
    closeSshConnections();
    try {
      await expectAgentKeepError(
        core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' }),
        'StoreNotFound',
        /cannot be read now.*Nothing was changed.*--scope both/s,
      );
    } finally {
      await sshd.resume();
    }
    await expectAgentKeepError(
      core.restoreRestorePoint({ target, id: rp.id, scope: 'machine', noUndoPoint: true, confirmed: true }),
      'InvalidParams',
      /cannot run without an undo point.*scope both/s,
    );
    assert.equal(sim.mutations().length, mutations, 'nothing sent to the hypervisor');
    assert.equal(guest.snapshots.size, snaps);
    assert.equal(await read(path.join(home, 'packages.txt')), 'left-pad 2.0\n');
  });

  it('CLI: --write-back-timeout, progress lines, the pending write-back in list and its command', async () => {
    await buildSidecar();
    bootMs = Infinity;
    const env = { ...process.env, AGENTKEEP_STATE_DIR: state };
    const c = await runSidecar(['restore-point', 'create', '--target', target, '--store', store, '--json'], env);
    assert.equal(c.code, 0, c.stderr);
    const rp = JSON.parse(c.stdout) as { id: string };
    await changeBoth();
    const bad = await runSidecar(
      ['restore-point', 'restore', rp.id, '--target', target, '--scope', 'machine', '--write-back-timeout', 'soon'],
      env,
    );
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--write-back-timeout soon is not a number of seconds/);
    const r = await runSidecar(
      [
        'restore-point',
        'restore',
        rp.id,
        '--target',
        target,
        '--scope',
        'machine',
        '--start',
        '--write-back-timeout',
        '1',
        '--yes',
      ],
      env,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /agentkeep: Writing the agent state back into \S+\/disk-\w+ on root@127\.0\.0\.1:\d+$/m);
    assert.match(r.stderr, /agentkeep: Kept the agent state of .* for a re-apply/);
    assert.match(r.stdout, /Not written back yet: the agent's memory from before the rollback is kept in ak_\w+/);
    const cmdLine = /Write it back once the guest is reachable: (agentkeep restore-point restore .*)$/m.exec(r.stdout);
    assert.ok(cmdLine, r.stdout);
    assert.match(cmdLine[1], /--scope agent/);
    const l = await runSidecar(['restore-point', 'list', '--target', target], env);
    assert.equal(l.code, 0, l.stderr);
    assert.match(
      l.stderr,
      /was not written back into .*Write it back: agentkeep restore-point restore ak_\w+ .*--scope agent/,
    );
  });
});

describe('scopes on a qemu: target (real QEMU, firmware-only guest; the guest SSH a real sshd)', function () {
  this.timeout(120_000);
  let vm: Vm;
  let sshd: TestSshd;
  let base: string;
  let home: string;
  let store: string;
  let target: string;
  let core: Core;

  before(async function () {
    this.timeout(180_000);
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-scopes-qemu-'));
    [vm, sshd] = await Promise.all([startVm(path.join(base, 'vm')), startSshd()]);
    home = path.join(base, 'hermes');
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), home, { recursive: true });
    store = `hermes:${sshd.url(home)}`;
    target = `qemu:${vm.socket}`;
    core = new Core({ stateDir: path.join(base, 'state') });
  });
  after(async () => {
    closeSshConnections();
    await stopAllVms();
    await sshd?.stop();
    if (base) await fs.rm(base, { recursive: true, force: true });
  });

  it('machine: the VM resumes from its RAM state, the current memory is kept without waiting; both writes none', async () => {
    const rp = await core.createRestorePoint({ target, stores: [store] });
    assert.ok(
      rp.agent.some((a) => a.store === store),
      'captured at create',
    );
    const mem = path.join(home, 'memories', 'MEMORY.md');
    await fs.appendFile(mem, '\n§\nLearned on the QEMU VM.');
    const now = await fs.readFile(mem, 'utf8');
    const t0 = Date.now();
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'machine' });
    assert.equal(r.machineState, 'running');
    assert.equal(r.writeBack?.status, 'done', JSON.stringify(r.writeBack));
    assert.ok(Date.now() - t0 < 30_000);
    assert.ok(
      r.undo.agent.some((a) => a.store === store),
      'the memory was captured before the rollback',
    );
    assert.equal(await fs.readFile(mem, 'utf8'), now);
    // (this guest's disk is not the store's directory, so nothing differed: nothing was written)
    assert.deepEqual(r.changes.agentChanged, []);
    // scope both: the rollback of the disk is what brings memory back; AgentKeep writes none into the guest
    const b = await core.restoreRestorePoint({ target, id: rp.id, scope: 'both' });
    assert.equal(b.writeBack, undefined);
    assert.deepEqual(b.changes.agentChanged, []);
    assert.equal(await fs.readFile(mem, 'utf8'), now);
  });
});
