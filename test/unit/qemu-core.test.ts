import { execFileSync } from 'node:child_process';
/**
 * qemu: targets through the core and the real CLI binary, and the clear errors (missing socket,
 * stale socket, raw disk), on firmware-only QEMU VMs under TCG (no OS: RAM content does not matter
 * here, and they start at once).
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { QmpClient } from '../../sidecar/machine/qemu';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { startVm, stopAllVms, type Vm } from './helpers/qemu';

describe('qemu: targets (real QEMU, firmware-only guests): core, CLI, clear errors', function () {
  this.timeout(90_000);
  let tmp: string;
  let state: string;
  let vm: Vm;
  let raw: Vm;

  before(async function () {
    this.timeout(180_000);
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qemu-core-'));
    state = path.join(tmp, 'state');
    [vm, raw] = await Promise.all([
      startVm(path.join(tmp, 'vm')),
      startVm(path.join(tmp, 'raw'), { format: 'raw' }),
      buildSidecar(),
    ]);
  });

  after(async () => {
    await stopAllVms();
    if (tmp) await fs.rm(tmp, { recursive: true, force: true });
  });

  it('a missing socket: TargetNotFound saying how to start QEMU with a QMP socket', async () => {
    const sock = path.join(tmp, 'nope', 'qmp.sock');
    const core = new Core({ stateDir: state });
    await assert.rejects(core.createRestorePoint({ target: `qemu:${sock}` }), (e: AgentKeepError) => {
      assert.equal(e.kind, 'TargetNotFound');
      assert.match(e.message, new RegExp(`No QMP socket at ${sock}`));
      assert.equal(
        e.hint,
        `Start QEMU with -qmp unix:${sock},server=on,wait=off and qcow2 disks (see docs/qemu.md), or fix the target (qemu:/abs/path/to/qmp.sock).`,
      );
      return true;
    });
    const st = await core.agentStatus({ target: `qemu:${sock}` });
    assert.equal(st.reachable, false);
    assert.match(st.message ?? '', /No QMP socket/);
  });

  it('a left-over socket file nobody listens on: "refuses connections (QEMU is not running)"', async () => {
    const sock = path.join(tmp, 'stale.sock');
    // A socket inode nobody listens on, as a killed QEMU leaves it (bound, then the process exits).
    execFileSync('python3', ['-c', 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])', sock]);
    await assert.rejects(
      QmpClient.connect(sock),
      (e: AgentKeepError) => e.kind === 'TargetNotFound' && /refuses connections \(QEMU is not running/.test(e.message),
    );
  });

  it('a regular file (e.g. the disk image) is "not a socket", never a "left-over socket"', async () => {
    const img = path.join(tmp, 'disk.qcow2');
    await fs.writeFile(img, 'QFI');
    await assert.rejects(QmpClient.connect(img), (e: AgentKeepError) => {
      assert.equal(e.kind, 'BadTarget');
      assert.match(
        e.message,
        /is not a socket but a regular file: a qemu: target names QEMU's QMP socket, not the disk image/,
      );
      assert.doesNotMatch(e.message, /left over/);
      return true;
    });
    await assert.rejects(QmpClient.connect(tmp), (e: AgentKeepError) => /not a socket but a directory/.test(e.message));
  });

  it('a socket another QMP client holds: no greeting, and the error says so', async () => {
    const first = await QmpClient.connect(vm.socket);
    try {
      await assert.rejects(QmpClient.connect(vm.socket, { timeoutMs: 1500 }), (e: AgentKeepError) => {
        assert.equal(e.kind, 'TargetNotFound');
        assert.match(e.message, /did not greet .* another QMP client is probably connected/);
        assert.match(e.hint ?? '', /second QMP socket for AgentKeep/);
        return true;
      });
    } finally {
      first.close();
    }
    const again = await QmpClient.connect(vm.socket);
    again.close();
  });

  it('a raw disk is refused with the reason and the qemu-img convert fix', async () => {
    const core = new Core({ stateDir: state });
    await assert.rejects(core.createRestorePoint({ target: `qemu:${raw.socket}` }), (e: AgentKeepError) => {
      assert.equal(e.kind, 'Unsupported');
      assert.match(e.message, /is a raw image: raw images cannot hold snapshots/);
      assert.match(
        e.hint ?? '',
        new RegExp(`qemu-img convert -O qcow2 ${raw.disk} ${raw.disk.replace(/\.raw$/, '')}\\.qcow2`),
      );
      return true;
    });
    assert.deepEqual(await core.listRestorePoints({ target: `qemu:${raw.socket}` }), [], 'no restore point recorded');
  });

  it('through the core: create, restore (with a pre-restore undo point), delete', async () => {
    const core = new Core({ stateDir: state });
    const target = `qemu:${vm.socket}`;
    const rp = await core.createRestorePoint({ target, label: 'before upgrade' });
    assert.equal(rp.machine.backend, 'qemu');
    assert.equal(rp.machine.vmstate, true);
    assert.match(rp.machine.warnings?.[0] ?? '', /paused the VM/);
    const r = await core.restoreRestorePoint({ target, id: rp.id, scope: 'both' });
    assert.equal(r.machineState, 'running');
    assert.equal(r.undo.kind, 'pre-restore');
    assert.equal(r.restored.status, 'rolled-back');
    const qmp = await QmpClient.connect(vm.socket);
    let tags: string[];
    try {
      const blocks =
        await qmp.execute<Array<{ inserted?: { image?: { snapshots?: Array<{ name: string }> } } }>>('query-block');
      tags = blocks.flatMap((b) => b.inserted?.image?.snapshots?.map((s) => s.name) ?? []);
    } finally {
      qmp.close();
    }
    assert.ok(tags.includes(rp.id) && tags.includes(r.undo.id), `QEMU holds both snapshots: ${tags.join(', ')}`);
    await core.deleteRestorePoint({ target, id: r.undo.id });
    await assert.rejects(core.diffRestorePoint({ target, id: rp.id }), (e: AgentKeepError) => e.kind === 'Unsupported');
    await core.deleteRestorePoint({ target, id: rp.id });
    assert.deepEqual(await core.listRestorePoints({ target }), []);
  });

  it('through the real CLI binary: create, list, restore --yes, delete (JSON and text)', async () => {
    const target = `qemu:${vm.socket}`;
    const ak = (...args: string[]) => runSidecar(['--state-dir', state, ...args]);
    const c = await ak('restore-point', 'create', '--target', target, '--label', 'cli');
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /Created restore point (ak_\S+)/);
    assert.match(c.stdout, /Note: QEMU paused the VM for \d+ ms/);
    const id = /Created restore point (ak_\S+)/.exec(c.stdout)![1];
    const l = await ak('restore-point', 'list', '--target', target, '--json');
    assert.equal(l.code, 0, l.stderr);
    assert.deepEqual(
      (JSON.parse(l.stdout) as Array<{ id: string }>).map((x) => x.id),
      [id],
    );
    const r = await ak('restore-point', 'restore', id, '--target', target, '--scope', 'machine', '--yes', '--json');
    assert.equal(r.code, 0, r.stderr);
    const rj = JSON.parse(r.stdout) as { machineState: string; undo: { id: string } };
    assert.equal(rj.machineState, 'running');
    const t = await ak('restore-point', 'restore', id, '--target', target, '--scope', 'machine', '--yes');
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /The VM.s disks and RAM are back at the restore point; the VM is running\./);
    for (const x of [id, rj.undo.id]) {
      const d = await ak('restore-point', 'delete', x, '--target', target, '--yes');
      assert.equal(d.code, 0, d.stderr);
    }
    const bad = await ak('restore-point', 'create', '--target', `qemu:${path.join(tmp, 'gone.sock')}`);
    assert.equal(bad.code === 0, false);
    assert.match(bad.stderr, /No QMP socket at .*gone\.sock.*-qmp unix:/);
  });
});
