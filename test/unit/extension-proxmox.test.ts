/** Proxmox helpers of the extension without VS Code (extension/proxmoxModel.ts). */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { reachText } from '../../extension/proxmoxModel';
import {
  agentPicks,
  canRamState,
  checkTokenFormat,
  continuesMessage,
  currentRestorePoint,
  explainLock,
  findGuest,
  hostOf,
  isVmTarget,
  snapshotTree,
  tokenId,
  vmRestoreOutcome,
  vmRollbackButtons,
  vmRollbackDetail,
  withTag,
  type Guest,
} from '../../extension/proxmoxModel';
import { restoreEffects } from '../../sidecar/core/preview';
import { describeTarget } from '../../sidecar/core/target';
import type { RestorePoint } from '../../sidecar/protocol';

const T = 'proxmox://pve.lan:8006/pve1/qemu/101';
/** The extension gets descriptions from the sidecar (target.describe); here straight from the core. */
const D = describeTarget;

function rp(
  id: string,
  minute: number,
  extra: Partial<RestorePoint> & { parent?: string; vmstate?: boolean } = {},
): RestorePoint {
  const { parent, vmstate, ...rest } = extra;
  return {
    id,
    target: T,
    label: id,
    createdAt: new Date(Date.UTC(2026, 10, 30, 12, minute)).toISOString(),
    status: 'ready',
    kind: 'manual',
    machine: {
      backend: 'proxmox',
      files: 0,
      bytes: 0,
      newBytes: 0,
      durationMs: 1,
      snapname: id,
      ...(parent ? { parent } : {}),
      ...(vmstate ? { vmstate } : {}),
    },
    agent: [],
    ...rest,
  };
}

describe('extension/proxmoxModel', () => {
  it('accepts USER@REALM!TOKENID=SECRET and names what is wrong otherwise, never echoing the secret', () => {
    assert.equal(checkTokenFormat('agent@pve!agentkeep=0b6f1c2d-aaaa-bbbb-cccc-1234567890ab'), undefined);
    assert.equal(checkTokenFormat('  root@pam!ci=s3cr3t '), undefined);
    const cases: Array<[string, RegExp]> = [
      ['', /USER@REALM!TOKENID=SECRET/],
      ['agent@pve!agentkeep', /"=SECRET" part is missing/],
      ['agentkeep=supersecretvalue', /user and realm/],
      ['agent@pve=supersecretvalue', /token id is missing/],
      ['agent@pve!agentkeep=', /secret after "=" is empty/],
      ['agent@pve!agentkeep=has space', /secret after "=" is empty or has spaces/],
    ];
    for (const [input, re] of cases) {
      const msg = checkTokenFormat(input);
      assert.match(msg ?? '', re, input);
      assert.ok(!msg!.includes('supersecretvalue'), 'the message never contains the secret');
    }
    assert.equal(tokenId('agent@pve!agentkeep=secret'), 'agent@pve!agentkeep');
  });

  it('reads the parts of proxmox:// targets (from target.describe) and tells VM targets apart', () => {
    assert.deepEqual(D(T).guest, { host: 'pve.lan', port: 8006, node: 'pve1', type: 'qemu', vmid: 101 });
    assert.equal(D('proxmox://[fd00::1]/-/lxc/200').guest?.host, 'fd00::1');
    assert.equal(D('dir:/x').guest, undefined);
    assert.throws(() => D('proxmox://host/pve1/qemu/7'), /not a Proxmox VMID/, 'vmid below 100 does not parse');
    assert.equal(isVmTarget(D(T)), true);
    assert.equal(isVmTarget(D('qemu:/run/vm.sock')), true);
    assert.equal(isVmTarget(D('dir:/home/me')), false);
    assert.equal(canRamState(D(T)), true);
    assert.equal(canRamState(D('proxmox://h/pve1/lxc/200')), false, 'containers have no RAM state');
    assert.equal(hostOf({ host: 'fd00::1', port: 8006 }), 'proxmox://[fd00::1]:8006');
  });

  it('finds the guest of a target (node "-" = any node) and filters the fleet by tag', () => {
    const g = (vmid: number, node: string, tags: string[]): Guest => ({
      target: `proxmox://h:8006/${node}/qemu/${vmid}`,
      node,
      vmid,
      type: 'qemu',
      status: 'running',
      tags,
    });
    const guests = [g(101, 'pve1', ['agent']), g(102, 'pve2', ['agent', 'prod']), g(103, 'pve2', [])];
    assert.equal(findGuest(guests, D('proxmox://h/-/qemu/102').guest!)?.node, 'pve2');
    assert.equal(findGuest(guests, D('proxmox://h/pve1/qemu/102').guest!), undefined, 'a named node must match');
    assert.deepEqual(
      withTag(guests, 'agent').map((x) => x.vmid),
      [101, 102],
    );
    assert.equal(withTag(guests, '').length, 3);
  });

  it('explains locks without offering to unlock', () => {
    assert.match(explainLock('backup'), /backup \(vzdump\) is running/);
    assert.match(explainLock('snapshot-delete', { type: 'lxc', vmid: 200 }), /pct unlock 200/);
    assert.match(explainLock('snapshot', { type: 'qemu', vmid: 101 }), /qm unlock 101/);
    assert.match(explainLock('weird'), /never unlocks it by itself/);
  });

  it('nests restore points by Proxmox parent, oldest first, and finds "you are here"', () => {
    const a = rp('a', 1);
    const b = rp('b', 2, { parent: 'a', vmstate: true });
    const c = rp('c', 3, { parent: 'b' });
    const d = rp('d', 4, { parent: 'a' }); // a branch: taken after rolling back to a
    const foreign = rp('e', 0, { parent: 'not_ours' });
    const tree = snapshotTree([d, c, b, a, foreign]);
    assert.deepEqual(
      tree.get(undefined)?.map((r) => r.id),
      ['e', 'a'],
    );
    assert.deepEqual(
      tree.get('a')?.map((r) => r.id),
      ['b', 'd'],
    );
    assert.deepEqual(
      tree.get('b')?.map((r) => r.id),
      ['c'],
    );
    assert.equal(tree.get('c'), undefined);

    assert.equal(currentRestorePoint([a, b, c])?.id, 'c', 'after creating, the guest sits on the newest');
    const restoredB = { ...b, status: 'rolled-back' as const };
    const pre = rp('pre', 5, { kind: 'pre-restore', restoredFrom: 'b', parent: 'c' });
    assert.equal(currentRestorePoint([a, restoredB, c, pre])?.id, 'b', 'after a rollback it sits on the restored one');
    assert.equal(
      currentRestorePoint([a, b, c, pre])?.id,
      'pre',
      'a failed rollback leaves it on the pre-restore capture',
    );
    assert.equal(currentRestorePoint([{ ...c, status: 'failed' }, a])?.id, 'a', 'failed restore points do not count');
    assert.equal(currentRestorePoint([]), undefined);
  });

  it('words the VM rollback: hard stop, RAM state or start option, the outside world, the resulting state', () => {
    const disk = rp('disk', 1);
    const ram = rp('ram', 2, { vmstate: true });
    // the effects come from restorePoint.preview (the core's restoreEffects: capabilities + the snapshot)
    const fx = (target: string, r: RestorePoint) => restoreEffects(D(target), r)!;
    const d = vmRollbackDetail(D(T), fx(T, disk));
    assert.match(d, /hard-stopped/);
    assert.match(d, /no RAM state: the VM stays stopped after the rollback unless you choose "Roll back and start VM"/);
    assert.match(d, /do not undo the outside world/);
    assert.match(vmRollbackDetail(D(T), fx(T, ram)), /has RAM state: the VM resumes/);
    const lxc = 'proxmox://h/pve1/lxc/200';
    assert.match(vmRollbackDetail(D(lxc), fx(lxc, disk)), /If the container is running/);
    assert.deepEqual(vmRollbackButtons(fx(T, disk)), ['Roll back', 'Roll back and start VM']);
    assert.deepEqual(vmRollbackButtons(fx(T, ram)), ['Roll back'], 'no start offer when RAM state resumes the VM');

    const stopped = vmRestoreOutcome(D(T), disk, {
      machineState: 'stopped',
      warnings: [
        'The VM was running and was hard-stopped by the rollback (unsaved work in it is lost).',
        'The VM is stopped after the rollback (the snapshot has no RAM state); start it in Proxmox, or restore with --start next time.',
        'WARN: a task warning',
      ],
    });
    assert.equal(
      stopped,
      'Rolled back to "disk". The VM is stopped: the snapshot has no RAM state. Start it in Proxmox or with "qm start 101" on the node, or choose "Roll back and start VM" next time. The VM was running and was hard-stopped by the rollback (unsaved work in it is lost). WARN: a task warning.',
    );
    assert.equal(vmRestoreOutcome(D(T), ram, { machineState: 'running' }), 'Rolled back to "ram". The VM is running.');
    // plain QEMU (loadvm): disks and RAM, no hard stop
    assert.equal(
      vmRestoreOutcome(D('qemu:/run/vm.sock'), ram, {
        machineState: 'running',
        warnings: ['QEMU paused the VM for the save'],
      }),
      'Rolled back to "ram". The VM\'s disks and RAM are back at the restore point; it is running. QEMU paused the VM for the save.',
    );
    const qemu = 'qemu:/run/vm.sock';
    assert.match(
      vmRollbackDetail(D(qemu), fx(qemu, ram)),
      /^The VM's disks and RAM go back to the snapshot \(QEMU loadvm\)/,
    );
    assert.doesNotMatch(vmRollbackDetail(D(qemu), fx(qemu, ram)), /hard-stopped/);
    assert.deepEqual(
      vmRollbackButtons(fx(qemu, disk)),
      ['Roll back'],
      'a QEMU snapshot always holds RAM: no start offer',
    );
  });

  it('restricts every setting that picks the host, guest, certificate, stores or state dir in untrusted workspaces', () => {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations;
    const props = Object.keys(pkg.contributes.configuration.properties as Record<string, unknown>);
    const proxmox = props.filter((k) => k.startsWith('agentkeep.proxmox.'));
    assert.deepEqual(proxmox.sort(), [
      'agentkeep.proxmox.caFile',
      'agentkeep.proxmox.fingerprint',
      'agentkeep.proxmox.host',
      'agentkeep.proxmox.node',
      'agentkeep.proxmox.port',
      'agentkeep.proxmox.tag',
      'agentkeep.proxmox.type',
      'agentkeep.proxmox.vmid',
    ]);
    for (const k of [...proxmox, 'agentkeep.target', 'agentkeep.stores', 'agentkeep.stateDir'])
      assert.ok(restricted.includes(k), `${k} is a restricted configuration`);
    assert.ok(!props.some((k) => /token|secret|password/i.test(k)), 'no setting holds a credential');
    const cmds = (pkg.contributes.commands as Array<{ command: string; title: string }>).map(
      (c) => `${c.command}: ${c.title}`,
    );
    for (const c of [
      'agentkeep.setProxmoxToken: Set Proxmox API Token',
      'agentkeep.clearProxmoxToken: Clear Proxmox API Token',
      'agentkeep.chooseAgent: Choose Agent',
    ])
      assert.ok(cmds.includes(c), c);
  });

  it('says where a task goes on after a cancelled wait', () => {
    const m = continuesMessage(D(T), 'restoring "x"');
    assert.match(m, /^Stopped waiting for restoring "x"\. The Proxmox task continues on pve\.lan/);
    assert.match(m, /pvesh get \/nodes\/pve1\/tasks --vmid 101/);
    assert.match(continuesMessage(D('dir:/a'), 'creating'), /continues in the AgentKeep sidecar/);
  });

  it('Choose Agent offers the named agents first (default and current marked), then the guests', () => {
    const named = [
      { name: 'box', target: 'dir:/srv/hermes', stores: ['hermes:/srv/hermes'], failClosed: false, default: true },
      { name: 'vm', target: T, failClosed: true, default: false },
    ];
    const guests: Guest[] = [
      {
        target: 'proxmox://pve.lan:8006/pve1/qemu/102',
        name: 'b',
        node: 'pve1',
        vmid: 102,
        type: 'qemu',
        status: 'running',
        tags: ['agent'],
      },
    ];
    const picks = agentPicks(named, guests, T);
    assert.deepEqual(
      picks.map((p) => p.label),
      ['$(person) box', '$(person) vm', '$(vm) b'],
    );
    assert.match(picks[0].description, /dir:\/srv\/hermes · default agent$/);
    assert.deepEqual(picks[0].stores, ['hermes:/srv/hermes']);
    assert.match(picks[1].description, / · current$/);
    assert.deepEqual(picks[1].stores, [], 'a named agent without stores clears agentkeep.stores');
    assert.equal(picks[2].stores, undefined, 'a guest leaves agentkeep.stores alone');
  });

  it("reachText: whether a guest's memory is reachable and how, in the Agents list row and tooltip", () => {
    assert.deepEqual(reachText(undefined), { short: '', detail: '' });
    const store = {
      store: 'hermes:pve-agent://pve.lan:8006/pve1/101/root/.hermes',
      via: 'guest-agent' as const,
      reachable: true,
      description: {
        store: 'hermes:pve-agent://pve.lan:8006/pve1/101/root/.hermes',
        kind: 'hermes',
        kindName: 'Hermes',
        name: 'root/.hermes in VM 101 on pve.lan',
        location: 'pve-agent://pve.lan:8006/pve1/101/root/.hermes',
        capabilities: {
          edit: true,
          provenance: true,
          budgets: true,
          drift: true,
          diff: true,
          actions: true,
          lock: true,
          textFiles: false,
        },
      },
    };
    const ok = reachText({
      target: 'proxmox://pve.lan/pve1/qemu/101',
      reachable: true,
      via: 'guest-agent',
      how: 'through the QEMU guest agent',
      found: true,
      stores: [store],
    });
    assert.equal(ok.short, 'memory via guest agent');
    assert.equal(
      ok.detail,
      'Memory: 1 store (root/.hermes in VM 101 on pve.lan) through the QEMU guest agent, found by probing the guest.',
    );
    const no = reachText({
      target: 'proxmox://pve.lan/pve1/qemu/102',
      reachable: false,
      via: 'none',
      how: 'not reachable',
      reason: 'VM 102 has no QEMU guest agent configured.',
      hint: 'Enable it.',
      found: true,
      stores: [],
    });
    assert.equal(no.short, 'memory not reachable');
    assert.equal(no.detail, 'Memory not reachable: VM 102 has no QEMU guest agent configured. Fix: Enable it.');
    assert.equal(
      reachText({ target: 't', reachable: true, via: 'ssh', how: 'over SSH to root@h:22', found: false, stores: [] })
        .short,
      'memory over SSH',
    );
  });
});
