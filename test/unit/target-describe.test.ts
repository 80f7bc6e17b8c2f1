/**
 * Backends own their target strings and capabilities: every registered BackendFactory parses its own
 * forms and describes its targets; target.describe (and agent.status `description`) carry that to the
 * front ends, with no I/O, so an unreachable target is described too.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { dispatch } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import { ObjectStore } from '../../sidecar/core/objects';
import { StateLayout } from '../../sidecar/core/state';
import { describeTarget, discoverAgents, parseTarget } from '../../sidecar/core/target';
import { backends } from '../../sidecar/machine';
import { TargetDescription } from '../../sidecar/protocol';
import { tempSetup } from './dir-fixtures';

describe('target.describe: backends own their strings and capabilities', () => {
  it('every registered backend parses its own example and says what its backends can do', () => {
    const layout = new StateLayout('/tmp/agentkeep-describe-test-state');
    const objects = new ObjectStore(layout.objectsDir);
    assert.deepEqual(
      backends().map((f) => f.scheme),
      ['dir', 'btrfs', 'qemu', 'proxmox'],
    );
    for (const f of backends()) {
      assert.ok(f.example.startsWith(f.prefix), `${f.scheme}: the example starts with ${f.prefix}`);
      assert.ok(f.forms.length > 0 && f.forms.every((x) => x.startsWith(f.prefix)), `${f.scheme}: forms`);
      const t = parseTarget(f.example);
      const d = describeTarget(f.example);
      assert.equal(TargetDescription.safeParse(d).success, true, `${f.scheme}: the description fits the protocol`);
      assert.equal(d.backend, f.scheme);
      assert.equal(d.target, t.spec);
      const b = f.create({ target: t, layout, objects });
      const c = d.capabilities;
      // what the description promises is what the backend has
      assert.equal(c.diff, typeof b.diff === 'function', `${f.scheme}: diff`);
      assert.equal(c.compare, typeof b.compare === 'function', `${f.scheme}: compare`);
      assert.equal(c.readFile, typeof b.readFile === 'function', `${f.scheme}: readFile`);
      assert.equal(c.relabel, typeof b.relabel === 'function', `${f.scheme}: relabel`);
      if (c.guestAccess) assert.ok(b.readGuestFile && b.writeGuestFile, `${f.scheme}: guest access`);
      assert.equal(c.discover, !!f.discover, `${f.scheme}: discover`);
      assert.equal(c.ramState, b.capabilities.ramState, `${f.scheme}: ramState`);
      assert.equal(c.speedClass, b.capabilities.speedClass, `${f.scheme}: speedClass`);
      assert.equal(c.canRunWhileRunning, b.capabilities.canRunWhileRunning, `${f.scheme}: canRunWhileRunning`);
      if (d.localRoot) assert.equal(d.localRoot, t.path, `${f.scheme}: the local root is the path the target names`);
    }
  });

  it('dir and btrfs targets have a local root; qemu and proxmox targets do not', () => {
    const btrfs = describeTarget('btrfs:///srv/agent/');
    assert.deepEqual(
      [btrfs.target, btrfs.localRoot, btrfs.name, btrfs.kind, btrfs.snapshotNoun],
      ['btrfs:/srv/agent', '/srv/agent', 'agent', 'directory', 'btrfs snapshot'],
    );
    assert.equal(btrfs.capabilities.speedClass, 'instant');
    const dir = describeTarget('dir:/home/me/.hermes');
    assert.deepEqual(
      [dir.localRoot, dir.name, dir.kind, dir.capabilities.diff],
      ['/home/me/.hermes', '.hermes', 'directory', true],
    );
    const qemu = describeTarget('qemu:/run/vm/qmp.sock');
    assert.deepEqual(
      [
        qemu.localRoot,
        qemu.kind,
        qemu.capabilities.ramState,
        qemu.capabilities.ramStateOnRequest,
        qemu.capabilities.canRunWhileRunning,
      ],
      [undefined, 'vm', true, false, false],
    );
    assert.equal(qemu.guest, undefined);
  });

  it('a Proxmox guest is described by its host, node, type and vmid; containers have no RAM state or guest agent', () => {
    const vm = describeTarget('proxmox://PVE.lan:8443/pve1/QEMU/101');
    assert.deepEqual(vm.guest, { host: 'pve.lan', port: 8443, node: 'pve1', type: 'qemu', vmid: 101 });
    assert.deepEqual([vm.name, vm.kind, vm.localRoot], ['VM 101', 'vm', undefined]);
    const c = vm.capabilities;
    assert.deepEqual(
      [
        c.ramState,
        c.ramStateOnRequest,
        c.guestAccess,
        c.guestWriteMaxBytes,
        c.rollbackStopsGuest,
        c.startAfterRollback,
        c.discover,
      ],
      [true, true, true, 61440, true, true, true],
    );
    const ct = describeTarget('proxmox://pve.lan/-/lxc/200');
    assert.deepEqual(
      [ct.name, ct.kind, ct.capabilities.ramState, ct.capabilities.guestAccess, ct.capabilities.guestWriteMaxBytes],
      ['container 200', 'container', false, false, undefined],
    );
  });

  it('target.describe answers for an unreachable target (no I/O) and refuses what does not parse', async () => {
    const s = tempSetup();
    try {
      const core = new Core({ stateDir: s.state });
      const missing = `dir:${path.join(s.base, 'missing')}`;
      const d = (await dispatch(core, 'agentkeep/target.describe', { target: missing })) as TargetDescription;
      assert.equal(d.localRoot, path.join(s.base, 'missing'));
      const pve = (await dispatch(core, 'agentkeep/target.describe', {
        target: 'proxmox://127.0.0.1:1/-/qemu/101',
      })) as TargetDescription;
      assert.equal(pve.guest?.vmid, 101);
      await assert.rejects(dispatch(core, 'agentkeep/target.describe', { target: 'ftp:/x' }), (e: AgentKeepError) => {
        assert.equal(e.kind, 'BadTarget');
        assert.match(e.hint ?? '', /^Use dir:, btrfs:, qemu: or proxmox:\/\/\. Write the target as dir:\/abs\/path/);
        return true;
      });
      // agent.status carries the same description, also when the target is not reachable
      const st = await core.agentStatus({ target: missing });
      assert.equal(st.reachable, false);
      assert.deepEqual(st.description, d);
    } finally {
      s.cleanup();
    }
  });

  it('agent discovery goes to the backend that can list agents; others are Unsupported, naming the host form', async () => {
    await assert.rejects(discoverAgents('dir:/x', 'agent'), (e: AgentKeepError) => {
      assert.equal(e.kind, 'Unsupported');
      assert.equal(e.message, 'Agent discovery needs a proxmox:// target.');
      assert.equal(e.hint, 'Give proxmox://HOST[:PORT].');
      return true;
    });
    await assert.rejects(discoverAgents('', 'agent'), /Agent discovery needs a proxmox:\/\/ target/);
  });

  it('guest file access is refused for a target whose backend cannot reach into a guest, naming its local root', async () => {
    const s = tempSetup();
    try {
      const core = new Core({ stateDir: s.state });
      await assert.rejects(core.guestFileRead(s.target, '/etc/hostname'), (e: AgentKeepError) => {
        assert.equal(e.kind, 'Unsupported');
        assert.match(e.message, /Guest file access needs a target whose backend reaches files inside the guest/);
        assert.equal(e.hint, `Read and write the file under ${s.tree} directly.`);
        return true;
      });
    } finally {
      s.cleanup();
    }
  });
});
