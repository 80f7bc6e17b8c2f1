/**
 * The extension branches on the target's description (target.describe), never on its scheme: a
 * btrfs: target has a local root like a dir: target, so it gets the live side of compare views,
 * config-file scoping and a folder name in the tree; VM targets have none. The descriptions here
 * come from the sidecar's own describeTarget, as the extension gets them over target.describe.
 */
import * as assert from 'node:assert/strict';
import { riskyConfigOf } from '../../extension/configScope';
import { compareItems, livePath, targetName } from '../../extension/format';
import { isVmTarget } from '../../extension/proxmoxModel';
import { describeTarget } from '../../sidecar/core/target';
import { describeStore } from '../../sidecar/memory';

describe('extension: targets by description', () => {
  const btrfs = describeTarget('btrfs:/srv/agent/');
  const dir = describeTarget('dir:/srv/agent');
  const qemu = describeTarget('qemu:/run/agent-vm/qmp.sock');
  const pve = describeTarget('proxmox://pve.lan/pve1/qemu/101');
  const config = (target: string) => ({ target, stores: ['hermes:/srv/agent/.hermes'] });

  it('names a btrfs target by its folder like a dir target; guests by their kind and vmid', () => {
    assert.equal(targetName('btrfs:/srv/agent', btrfs), 'agent');
    assert.equal(targetName('dir:/srv/agent', dir), 'agent');
    assert.equal(targetName('proxmox://pve.lan/pve1/qemu/101', pve), 'VM 101');
    assert.equal(targetName('qemu:/run/agent-vm/qmp.sock', qemu), 'qemu:/run/agent-vm/qmp.sock');
    assert.equal(targetName('dir:/x'), 'dir:/x', 'no description yet: the target string');
    assert.equal(isVmTarget(btrfs), false);
    assert.equal(isVmTarget(qemu), true);
  });

  it('gives btrfs machine files a live side in compare views (none for VMs)', () => {
    assert.equal(btrfs.localRoot, '/srv/agent');
    assert.equal(
      livePath(btrfs.localRoot, { path: 'workspace/package.json', status: 'changed' }),
      '/srv/agent/workspace/package.json',
    );
    assert.equal(livePath(qemu.localRoot, { path: 'workspace/package.json', status: 'changed' }), undefined);
    assert.equal(livePath(pve.localRoot, { path: 'x', status: 'changed' }), undefined);
    const root = describeStore('hermes:/srv/agent/.hermes').localRoot; // as compareItems puts it on the item
    const agent = {
      path: 'hermes:/srv/agent/.hermes:memories/MEMORY.md',
      status: 'changed' as const,
      agent: { store: 'hermes:/srv/agent/.hermes', rel: 'memories/MEMORY.md', localRoot: root },
    };
    assert.equal(
      livePath(qemu.localRoot, agent),
      '/srv/agent/.hermes/memories/MEMORY.md',
      'agent state is under its store root',
    );
  });

  it('shows a store inside a btrfs target once, as agent state', () => {
    const store = 'hermes:/srv/agent/.hermes';
    const changes = {
      added: [],
      removed: [],
      changed: ['.hermes/memories/MEMORY.md', 'workspace/package.json'],
      agentChanged: [`${store}:memories/MEMORY.md`],
    };
    const described = [describeStore(store)];
    const onBtrfs = compareItems(changes, { localRoot: btrfs.localRoot, stores: described }).items.map((i) => i.path);
    assert.deepEqual(onBtrfs, [`${store}:memories/MEMORY.md`, 'workspace/package.json']);
    // without a local root the machine path cannot be matched to the store file: both are listed
    assert.equal(compareItems(changes, { localRoot: qemu.localRoot, stores: [describeStore(store)] }).items.length, 3);
  });

  it('scopes config files to a btrfs target and its stores; VM targets scope nothing', () => {
    assert.ok(riskyConfigOf('/srv/agent/workspace/package.json', config('btrfs:/srv/agent'), btrfs));
    assert.ok(riskyConfigOf('/srv/agent/.hermes/config.yaml', config('btrfs:/srv/agent'), btrfs));
    assert.equal(
      riskyConfigOf('/elsewhere/package.json', config('btrfs:/srv/agent'), btrfs),
      undefined,
      'outside the subvolume',
    );
    assert.equal(riskyConfigOf('/elsewhere/package.json', config('dir:/srv/agent'), dir), undefined);
    assert.ok(
      riskyConfigOf('/elsewhere/package.json', config('qemu:/run/agent-vm/qmp.sock'), qemu),
      'a VM has no local root',
    );
    assert.equal(
      riskyConfigOf('/srv/agent/notes.txt', config('btrfs:/srv/agent'), btrfs),
      undefined,
      'not a config file',
    );
  });
});
