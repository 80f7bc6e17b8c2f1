/**
 * Optional smoke suite against a real Proxmox VE host: the fault-free scenarios of
 * proxmox-cases.test.ts (names refused by both sides, create/list/tree/edit/delete, reserved name,
 * and, with AGENTKEEP_PVE_ROLLBACK=1, a rollback, which hard-stops the guest).
 * Runs when AGENTKEEP_PVE_URL (https://HOST[:PORT]), AGENTKEEP_PVE_TOKEN and AGENTKEEP_PVE_VMID are
 * set (plus AGENTKEEP_PVE_FINGERPRINT or AGENTKEEP_PVE_CA; optional AGENTKEEP_PVE_NODE, default "-",
 * and AGENTKEEP_PVE_TYPE, default qemu). Otherwise it says visibly that it was skipped.
 */
import assert from 'node:assert/strict';
import { ProxmoxBackend } from '../../sidecar/machine/proxmox';
import { newRestorePointId } from '../../sidecar/core/journal';
import { parseTarget } from '../../sidecar/core/target';
import { rejection } from './helpers/pve';

const URL_ = process.env.AGENTKEEP_PVE_URL;
const VMID = process.env.AGENTKEEP_PVE_VMID;
const enabled = !!(URL_ && process.env.AGENTKEEP_PVE_TOKEN && VMID);

describe('proxmox smoke suite (real host)', function () {
  this.timeout(300_000);
  if (!enabled) {
    it('skipped: set AGENTKEEP_PVE_URL, AGENTKEEP_PVE_TOKEN and AGENTKEEP_PVE_VMID (and AGENTKEEP_PVE_FINGERPRINT) to run it against a real Proxmox VE host', () => {
      console.log('    skipped: proxmox smoke suite needs AGENTKEEP_PVE_URL, AGENTKEEP_PVE_TOKEN, AGENTKEEP_PVE_VMID');
      assert.equal(enabled, false);
    });
    return;
  }
  const u = new URL(URL_!);
  const type = process.env.AGENTKEEP_PVE_TYPE === 'lxc' ? 'lxc' : 'qemu';
  const target = parseTarget(
    `proxmox://${u.hostname}:${u.port || 8006}/${process.env.AGENTKEEP_PVE_NODE ?? '-'}/${type}/${VMID}`,
  );
  const b = new ProxmoxBackend(target, { pollMinMs: 50, pollMaxMs: 1000 });
  const made: string[] = [];
  after(async () => {
    for (const id of made) await b.delete(id).catch(() => undefined);
    b.close();
  });

  it('reaches the guest', async () => {
    await b.check();
  });
  it('refuses bad names on the client, and the host answers 400 with the same errors map', async () => {
    const node = await b.client.ownerNode(b.pt.node, type, b.pt.vmid);
    for (const [n, text] of [
      [`a${'b'.repeat(40)}`, 'value may only be 40 characters long'],
      ['1abc', "invalid format - invalid configuration ID '1abc'\n"],
      ['my.snap', "invalid format - invalid configuration ID 'my.snap'\n"],
    ]) {
      assert.equal((await rejection(b.create(n, {}))).kind, 'InvalidParams');
      const raw = (await rejection(
        b.client.transport.doRequest('POST', `/api2/json/nodes/${node}/${type}/${VMID}/snapshot`, '', { snapname: n }),
      )) as unknown as { status: number; errors: Record<string, string> };
      assert.equal(raw.status, 400);
      assert.equal(raw.errors.snapname, text);
    }
    const cur = (await rejection(
      b.client.transport.doRequest('POST', `/api2/json/nodes/${node}/${type}/${VMID}/snapshot`, '', {
        snapname: 'current',
      }),
    )) as unknown as { status: number; reason: string };
    assert.equal(cur.status, 500);
    assert.match(cur.reason, /reserved name/);
  });
  it('creates, lists (tree with current), edits the description and deletes an AgentKeep snapshot', async () => {
    const id = newRestorePointId();
    made.push(id);
    const info = await b.create(id, {
      meta: { label: 'agentkeep smoke test', kind: 'manual', createdAt: new Date().toISOString() },
    });
    assert.equal(info.snapname, id);
    assert.ok((await b.list()).includes(id));
    const tree = await b.tree();
    assert.equal(tree.at(-1)?.name, 'current');
    assert.equal(tree.at(-1)?.parent, id);
    await b.editDescription(id, 'agentkeep smoke test (edited)');
    assert.equal((await b.foreign()).find((r) => r.id === id)?.id, id);
    if (process.env.AGENTKEEP_PVE_ROLLBACK === '1') {
      const r = await b.restore(id, {});
      assert.ok(r.machineState);
    }
    await b.delete(id);
    assert.ok(!(await b.list()).includes(id));
  });
});
