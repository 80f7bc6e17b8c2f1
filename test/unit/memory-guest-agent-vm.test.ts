/**
 * A Hermes home inside a real QEMU VM, reached only through its QEMU guest agent (issue 11 item 2):
 * the tiny test guest (scripts/qemu-guest.sh --with-qga: Debian kernel + busybox initramfs with
 * Debian's qemu-ga, its libraries, util-linux flock and the virtio console modules) runs qemu-ga on
 * the virtio-serial port org.qemu.guest_agent.0; the host side is QEMU's `-chardev socket`, the
 * store `hermes:qga:<dir>/qga.sock:/root/.hermes`. The guest has no SSH and no shared folder: the
 * fixture home is copied in through the agent itself, and every read, write, lock and probe goes
 * through guest-file-* and guest-exec.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { openStore } from '../../sidecar/memory';
import type { HermesStore } from '../../sidecar/memory/hermes';
import { lockHermesFile } from '../../sidecar/memory/hermes/lock';
import { closeQgaConnections, GuestAgentTransport, QgaSocketChannel } from '../../sidecar/memory/transport/guestAgent';
import { expectAgentKeepError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';
import { simEnv, startSim } from './helpers/pve';
import { startVm, stopAllVms, type Vm } from './helpers/qemu';

/** Copy a local tree into the guest through the agent (mkdir -p, then each file with its mode). */
async function copyIn(io: GuestAgentTransport, from: string, to: string): Promise<void> {
  await io.mkdirp(to);
  for (const e of await fs.readdir(from, { withFileTypes: true })) {
    const src = path.join(from, e.name);
    const dst = path.posix.join(to, e.name);
    if (e.isDirectory()) await copyIn(io, src, dst);
    else if (e.isFile()) await io.writeNew(dst, await fs.readFile(src), (await fs.stat(src)).mode & 0o777);
  }
}

describe('a Hermes home inside a real QEMU VM through qemu-ga over virtio-serial (no SSH)', function () {
  this.timeout(180000);
  let base: string;
  let vm: Vm;
  let io: GuestAgentTransport;
  let local: string;
  let store: string;
  const HOME = '/root/.hermes';
  const MEM = `${HOME}/memories/MEMORY.md`;

  before(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qga-vm-'));
    vm = await startVm(path.join(base, 'vm'), { qga: true, memMiB: 256 });
    io = new GuestAgentTransport(new QgaSocketChannel(vm.qga!));
    local = path.join(base, 'local-home');
    await fs.cp(path.join(FIXTURES, 'memory', 'hermes'), local, { recursive: true });
  });
  after(async () => {
    closeQgaConnections();
    await stopAllVms();
    await fs.rm(base, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await io.rm(HOME, { recursive: true });
    await copyIn(io, path.join(FIXTURES, 'memory', 'hermes'), HOME);
    store = `hermes:qga:${vm.qga}:${HOME}`;
  });

  it('list, show and provenance in the VM equal those of the same home on this machine', async () => {
    const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
    const here = await core.listMemory({ stores: [`hermes:${local}`] });
    const there = await core.listMemory({ stores: [store] });
    const norm = (v: unknown): unknown =>
      JSON.parse(
        JSON.stringify(v)
          .split(`qga:${vm.qga}:${HOME}`)
          .join(local)
          .split(JSON.stringify(store).slice(1, -1))
          .join(`hermes:${local}`),
      );
    assert.ok(here.stores.some((f) => f.entries.length));
    assert.deepEqual(norm(there.stores), here.stores);
    assert.equal(there.descriptions[0].name, `root/.hermes in the VM of ${vm.qga}`);
    let traced = 0;
    for (const e of here.stores.flatMap((f) => f.entries)) {
      const s = await core.showMemory({ stores: [store], entry: e.id });
      assert.deepEqual(norm(s), await core.showMemory({ stores: [`hermes:${local}`], entry: e.id }));
      traced += s.provenance.traces.length;
    }
    assert.ok(traced > 0, 'state.db was read from the VM (copied through the agent, WAL included)');
  });

  it("an edit waits for a flock held by a process in the VM, then writes under Hermes' lock there; undo", async () => {
    const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
    const [entry] = (await core.listMemory({ stores: [store] })).stores[0].entries;
    const before = await io.readFile(MEM);
    // a writer in the guest holds the lock for 2 s (util-linux flock in the guest)
    await io.touch(`${MEM}.lock`);
    const writer = io.exec(['flock', '-x', `${MEM}.lock`, 'sleep', '2']);
    for (let i = 0; i < 50; i++) {
      if ((await io.exec(['flock', '-n', `${MEM}.lock`, 'true'])).code === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const t0 = Date.now();
    const r = await core.editMemory({ store, entry: entry.id, text: 'Edited inside the VM.' });
    assert.ok(Date.now() - t0 >= 1000, `waited for the guest's lock (${Date.now() - t0} ms)`);
    await writer;
    assert.equal((await io.readFile(MEM)).toString('utf8').split('\n§\n')[0], 'Edited inside the VM.');
    assert.equal((await io.exec(['flock', '-n', `${MEM}.lock`, 'true'])).code, 0, 'our lock is released');
    await core.editMemory(r.undo);
    assert.ok((await io.readFile(MEM)).equals(before));
  });

  it('a lock the VM keeps: TargetBusy, nothing written', async () => {
    const s = openStore(store) as HermesStore;
    await io.touch(`${MEM}.lock`);
    const writer = io.exec(['flock', '-x', `${MEM}.lock`, 'sleep', '6']);
    for (let i = 0; i < 50; i++) {
      if ((await io.exec(['flock', '-n', `${MEM}.lock`, 'true'])).code === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = await io.readFile(MEM);
    const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
    const [entry] = (await core.listMemory({ stores: [store] })).stores[0].entries;
    await expectAgentKeepError(lockHermesFile(`${MEM}.lock`, 1, s.io), 'TargetBusy', /holds the memory lock/);
    assert.ok((await io.readFile(MEM)).equals(before), 'nothing written');
    await writer;
    await core.listMemory({ stores: [store] }).then((l) => assert.equal(l.stores[0].entries[0].id, entry.id));
  });

  it('a restore point of the qemu: target captures the memory through the agent; diff; scope agent restore', async () => {
    const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
    const target = `qemu:${vm.socket}`;
    const before = await io.readFile(MEM);
    const rp = await core.createRestorePoint({ target, stores: [store] });
    const cap = rp.agent.find((a) => a.store === store)!;
    assert.ok(cap.files.some((f) => f.path === 'memories/MEMORY.md'));
    assert.ok(cap.files.some((f) => f.path === 'state.db'));
    await io.rm(MEM);
    await io.writeNew(MEM, Buffer.from('Replaced by the agent in the VM.'), 0o600);
    const diff = await core.diffMemory({ target, from: rp.id });
    assert.ok([...diff.added, ...diff.changed].some((c) => c.after?.text === 'Replaced by the agent in the VM.'));
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: [store] });
    assert.ok((await io.readFile(MEM)).equals(before), 'MEMORY.md written back into the running VM');
  });

  it("lint checks stale claims inside the VM (the guest's PATH and tool versions), not on this machine", async () => {
    // the guest's own node 18 (this machine has node 20) and no hermes
    await io.writeNew('/usr/bin/node', Buffer.from('#!/bin/sh\necho v18.19.1\n'), 0o755).catch(() => undefined);
    await io.rm(MEM);
    await io.writeNew(
      MEM,
      Buffer.from('The agent runs hermes 9.9 on its host.\n§\nProject uses Node 20 for the build.'),
      0o600,
    );
    const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
    const stale = (await core.lintMemory({ stores: [store] })).findings
      .filter((f) => f.kind === 'stale')
      .map((f) => f.message);
    assert.ok(
      stale.some((m) => m.includes(`the guest agent at ${vm.qga}`) && /node 18\.19\.1/.test(m)),
      stale.join('\n'),
    );
    assert.ok(
      stale.some((m) => /hermes is not installed/.test(m) && m.includes(`the guest agent at ${vm.qga}`)),
      stale.join('\n'),
    );
  });

  it('the Proxmox path against the same VM: the simulator forwards agent/file-read and exec to its qemu-ga', async () => {
    closeQgaConnections(); // the agent serves one client at a time
    const sim = await startSim();
    const env = simEnv(sim);
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      sim.addGuest({ vmid: 101, qga: vm.qga });
      const core = new Core({ stateDir: await fs.mkdtemp(path.join(base, 'state-')) });
      const pve = `hermes:pve-agent://127.0.0.1:${sim.port}/pve1/101${HOME}`;
      const viaPve = await core.listMemory({ stores: [pve] });
      const viaSock = await core.listMemory({ stores: [store] });
      const strip = (v: unknown, prefix: string): string => JSON.stringify(v).split(prefix).join('');
      assert.equal(
        strip(viaPve.stores, `pve-agent://127.0.0.1:${sim.port}/pve1/101`),
        strip(viaSock.stores, `qga:${vm.qga}:`),
      );
      const reach = await core.agentMemoryReach({ target: `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101` });
      assert.deepEqual(
        reach.stores.map((s) => [s.store, s.reachable]),
        [[pve, true]],
        'the probe found /root/.hermes in the VM',
      );
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await sim.stop();
    }
  });
});
