/**
 * The qemu backend against a real QEMU VM under TCG: a tiny Linux guest (scripts/qemu-guest.sh)
 * whose init prints "AK-TICK n" twice a second on the serial log. One boot is shared by the tests
 * of this file; they run in order on it but each sets up what it needs.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from '../../sidecar/core/errors';
import { ObjectStore } from '../../sidecar/core/objects';
import { StateLayout } from '../../sidecar/core/state';
import { parseTarget } from '../../sidecar/core/target';
import { QemuBackend, QmpClient, loadFailedBeforeChanges, loadSnapshot, vmStatus } from '../../sidecar/machine/qemu';
import { imageSnapshots } from '../../sidecar/machine/qemu/images';
import type { MachineBackend } from '../../sidecar/machine/types';
import { serialSize, startVm, stopAllVms, stopVm, ticks, waitFor, type Vm } from './helpers/qemu';

describe('qemu backend (real QEMU, tiny Linux guest under TCG)', function () {
  this.timeout(90_000);
  let tmp: string;
  let vm: Vm | undefined;
  let backend: QemuBackend;
  let n = 0;
  const newId = (): string => `ak_test_${Date.now().toString(36)}_${n++}`;

  before(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qemu-'));
    vm = await startVm(path.join(tmp, 'vm'), { kernel: true });
    const layout = new StateLayout(path.join(tmp, 'state'));
    backend = new QemuBackend({
      target: parseTarget(`qemu:${vm.socket}`),
      layout,
      objects: new ObjectStore(layout.objectsDir),
    });
  });

  after(async () => {
    await stopAllVms();
    if (tmp) await fs.rm(tmp, { recursive: true, force: true });
  });

  /** Wait until the guest printed a tick above `after`. */
  const tickPast = (after: number): Promise<void> =>
    waitFor(() => Math.max(0, ...ticks(vm!)) > after, 30_000, `a tick above ${after}`);

  it('says what it can do: RAM state, not while running, no file diff', () => {
    assert.deepEqual(backend.capabilities, {
      ramState: true,
      speedClass: 'fast',
      canRunWhileRunning: false,
      diff: false,
    });
    assert.equal((backend as MachineBackend).diff, undefined);
  });

  it('rolls the guest back: the tick counter goes back to its value at save time', async () => {
    await tickPast(2);
    const id = newId();
    const info = await backend.create(id, {});
    const atSave = Math.max(...ticks(vm!));
    assert.equal(info.vmstate, true);
    assert.equal(info.files, 1, 'one qcow2 disk');
    assert.ok(info.bytes > 1_000_000, `RAM state stored in the qcow2 image (${info.bytes} bytes)`);
    assert.match(info.warnings?.[0] ?? '', /paused the VM for \d+ ms .*not live/);
    await tickPast(atSave + 4);
    const before = serialSize(vm!);
    const atLoad = Math.max(...ticks(vm!));
    const out = await backend.restore(id, {});
    assert.equal(out.machineState, 'running');
    assert.deepEqual([out.added, out.removed, out.changed], [[], [], []]);
    await waitFor(() => ticks(vm!, before).length >= 2, 20_000, 'ticks after the load');
    const after = ticks(vm!, before);
    // The guest resumes from the snapshot point: its next tick is the one after the last tick printed
    // before the save (allow one tick printed during the save's pause), far below where it was.
    assert.ok(atLoad >= atSave + 4, `the guest had moved on (tick ${atLoad} at the load, ${atSave} at the save)`);
    assert.ok(
      after[0] <= atSave + 1,
      `first tick after the load ${after[0]} is back at the save point (${atSave}), not after ${atLoad}`,
    );
    assert.ok(after[0] >= atSave - 1, `first tick after the load ${after[0]} near ${atSave}`);
    assert.ok((await backend.list()).includes(id));
  });

  it('refuses a name QEMU already holds (unique names enforced by AgentKeep)', async () => {
    const id = newId();
    await backend.create(id, {});
    await assert.rejects(backend.create(id, {}), (e: AgentKeepError) => {
      assert.equal(e.kind, 'Conflict');
      assert.match(e.message, new RegExp(`already holds a snapshot named ${id}`));
      return true;
    });
    const tags = await backend.list();
    assert.equal(tags.filter((t) => t === id).length, 1, 'still one snapshot with that name');
  });

  it('resumes after a failed load only when QEMU failed before changing anything', () => {
    assert.equal(loadFailedBeforeChanges("Snapshot 'x' does not exist in one or more devices"), true);
    assert.equal(loadFailedBeforeChanges('This is a disk-only snapshot. Revert to it offline using qemu-img'), true);
    assert.equal(loadFailedBeforeChanges('Error -22 while loading VM state'), false);
    assert.equal(loadFailedBeforeChanges("Could not load snapshot 'x' on 'disk0': Input/output error"), false);
    assert.equal(loadFailedBeforeChanges("Could not load snapshot 'x' on 'disk0': snapshot not found"), false);
  });

  it('refuses an id that is not a valid QEMU tag', async () => {
    await assert.rejects(
      backend.create('1 bad tag', {}),
      (e: AgentKeepError) => e.kind === 'InvalidParams' && /QEMU snapshot tag/.test(e.message),
    );
  });

  it('a failed load (tag gone) leaves the VM paused in restore-vm; AgentKeep resumes it with cont and says so', async () => {
    const qmp = await QmpClient.connect(vm!.socket);
    try {
      assert.equal((await vmStatus(qmp)).status, 'running');
      await assert.rejects(loadSnapshot(qmp, 'ak_no_such_snapshot', 'disk0', ['disk0']), (e: AgentKeepError) => {
        assert.equal(e.kind, 'Hypervisor');
        assert.match(e.message, /could not load snapshot ak_no_such_snapshot/);
        assert.match(
          e.message,
          /left the VM paused \(status restore-vm\), so AgentKeep resumed it \(cont\): it is running again/,
        );
        return true;
      });
      assert.equal((await vmStatus(qmp)).status, 'running');
    } finally {
      qmp.close();
    }
    const before = serialSize(vm!);
    await waitFor(() => ticks(vm!, before).length > 0, 20_000, 'the guest to tick again');
  });

  it('restore of a snapshot deleted behind its back is refused before anything changes', async () => {
    const id = newId();
    await backend.create(id, {});
    const qmp = await QmpClient.connect(vm!.socket);
    try {
      const r = await qmp.runJob('snapshot-delete', { tag: id, devices: ['disk0'] });
      assert.equal(r.error, undefined);
    } finally {
      qmp.close();
    }
    await assert.rejects(
      backend.restore(id, {}),
      (e: AgentKeepError) =>
        e.kind === 'CorruptSnapshot' && /deleted outside AgentKeep\. Nothing was changed/.test(e.message),
    );
    const qmp2 = await QmpClient.connect(vm!.socket);
    try {
      assert.equal((await vmStatus(qmp2)).status, 'running');
    } finally {
      qmp2.close();
    }
    await backend.delete(id); // a tag QEMU no longer holds: done
  });

  it('a paused VM stays paused after the rollback unless start is given', async () => {
    const id = newId();
    await backend.create(id, {});
    const qmp = await QmpClient.connect(vm!.socket);
    try {
      await qmp.execute('stop');
    } finally {
      qmp.close();
    }
    const out = await backend.restore(id, {});
    assert.equal(out.machineState, 'paused');
    assert.match(out.warnings?.[0] ?? '', /stays paused: resume it .*cont/);
    const out2 = await backend.restore(id, { start: true });
    assert.equal(out2.machineState, 'running');
    await backend.delete(id);
    assert.ok(!(await backend.list()).includes(id));
  });

  it('deletes through snapshot-delete, lists offline through qemu-img when the VM is stopped, deletes offline', async () => {
    const keep = newId();
    const drop = newId();
    await backend.create(keep, {});
    await backend.create(drop, {});
    await backend.delete(drop);
    await backend.delete(drop); // deleting a missing tag succeeds
    const online = await backend.list();
    assert.ok(online.includes(keep) && !online.includes(drop));
    await stopVm(vm);
    await assert.rejects(
      backend.check(),
      (e: AgentKeepError) => e.kind === 'TargetNotFound' && /-qmp unix:.*server=on,wait=off/.test(e.hint ?? ''),
    );
    const offline = await backend.list();
    assert.deepEqual(offline, online, 'qemu-img info -U lists the same snapshots');
    await backend.delete(keep);
    assert.ok(!(await imageSnapshots(vm!.disk)).some((s) => s.name === keep), 'qemu-img snapshot -d removed it');
    assert.ok(!(await backend.list()).includes(keep));
  });
});
