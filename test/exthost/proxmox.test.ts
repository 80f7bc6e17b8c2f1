/**
 * Proxmox VE targets in the real extension host: the contract simulator (test/pve-sim, HTTPS with a
 * self-signed certificate made by openssl, pinned by its SHA-256 fingerprint) runs inside the
 * extension host; the extension starts the real sidecar (out/sidecar.js) with the token from
 * SecretStorage in its environment. The target comes from the agentkeep.proxmox.* settings.
 * Runs last: it points the workspace at the simulator and puts the demo settings back after.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentKeepApi } from '../../extension/extension';
import type { AgentNode } from '../../extension/tree';
import type { RestorePoint, ResultOf } from '../../sidecar/protocol';
import { PveSim } from '../pve-sim/server';
import { labels, until } from './agent.test';

const log = (...a: unknown[]) => console.log('    [agentkeep-pve]', ...a);
const TOKEN_ID = 'agent@pve!agentkeep';
const SECRET = `sekret-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;

export function registerProxmoxSuite(): void {
  describe('AgentKeep with a Proxmox VE target (contract simulator)', function () {
    this.timeout(90000);
    let api: AgentKeepApi;
    let sim: PveSim;
    let saved: { target: unknown; stores: unknown };
    const conf = () => vscode.workspace.getConfiguration('agentkeep');
    const W = vscode.ConfigurationTarget.Workspace;

    const item = (n: AgentNode) => api.tree.getTreeItem(n);
    const desc = (n: AgentNode) => String(item(n).description ?? '');
    const iconId = (n: AgentNode) => (item(n).iconPath as vscode.ThemeIcon | undefined)?.id;
    async function root(): Promise<AgentNode> {
      const roots = await api.tree.getChildren();
      assert.equal(roots.length, 1);
      return roots[0]!;
    }
    async function child(n: AgentNode, label: string | RegExp): Promise<AgentNode> {
      const kids = await api.tree.getChildren(n);
      const found = kids.find((k) =>
        typeof label === 'string' ? String(item(k).label) === label : label.test(String(item(k).label)),
      );
      if (!found)
        throw new Error(`No child ${String(label)} under ${String(item(n).label)}: ${labels(api, kids).join(', ')}`);
      return found;
    }
    /** Restore-point nodes of the tree, depth first, with their depth, plus "You are here". */
    async function flatten(
      n: AgentNode,
      depth = 0,
      out: Array<{ label: string; depth: number; node: AgentNode }> = [],
    ): Promise<typeof out> {
      for (const k of await api.tree.getChildren(n)) {
        if (k.kind !== 'restorePoint' && k.kind !== 'here') continue;
        out.push({ label: String(item(k).label), depth, node: k });
        await flatten(k, depth + 1, out);
      }
      return out;
    }

    before(async function () {
      const ext = vscode.extensions.getExtension<AgentKeepApi>('agentkeep.agentkeep')!;
      api = await ext.activate();
      // the simulator reads its API schema next to its module; in this bundle that is out/test/exthost
      const schema = path.join(__dirname, 'pve-api-schema.json');
      if (!fs.existsSync(schema))
        fs.copyFileSync(path.join(ext.extensionPath, 'test', 'pve-sim', 'pve-api-schema.json'), schema);
      sim = new PveSim({ token: { id: TOKEN_ID, secret: SECRET }, nodes: ['pve1', 'pve2'] });
      sim.addGuest({ vmid: 101, name: 'hermes-agent', tags: ['agent'], running: true });
      sim.addGuest({ vmid: 102, node: 'pve2', name: 'second-agent', tags: ['agent', 'prod'], running: false });
      sim.addGuest({ vmid: 103, name: 'database', tags: [], running: true });
      await sim.start();
      log(`simulator at ${sim.url}, fingerprint ${sim.cert.fingerprint.slice(0, 11)}…`);
      saved = { target: conf().inspect('target')?.workspaceValue, stores: conf().inspect('stores')?.workspaceValue };
      await conf().update('target', undefined, W);
      await conf().update('stores', [], W);
      const p = vscode.workspace.getConfiguration('agentkeep.proxmox');
      await p.update('host', '127.0.0.1', W);
      await p.update('port', sim.port, W);
      await p.update('node', 'pve1', W);
      await p.update('vmid', 101, W);
      await p.update('type', 'qemu', W);
      await p.update('fingerprint', sim.cert.fingerprint, W);
    });

    after(async function () {
      await vscode.commands.executeCommand('agentkeep.clearProxmoxToken').then(undefined, () => undefined);
      const p = vscode.workspace.getConfiguration('agentkeep.proxmox');
      for (const k of ['host', 'port', 'node', 'vmid', 'type', 'fingerprint']) await p.update(k, undefined, W);
      await conf().update('target', saved.target, W);
      await conf().update('stores', saved.stores, W);
      await sim?.stop();
    });

    it('builds the proxmox:// target from the settings', async function () {
      const r = await root();
      assert.equal(r.kind === 'agent' && r.config.target, `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`);
    });

    it('without a token the view says the API refused, and names the fix', async function () {
      await vscode.commands.executeCommand('agentkeep.clearProxmoxToken');
      const r = await root();
      const text = [
        r.kind === 'agent' ? (r.guestError ?? r.error ?? '') : '',
        (await api.tree.getChildren(r)).map((k) => String(item(k).label)).join(' | '),
      ].join(' | ');
      log('without token:', text.slice(0, 300));
      assert.match(text, /No Proxmox credentials/);
      const setToken = (await api.tree.getChildren(r)).find(
        (k) => item(k).command?.command === 'agentkeep.setProxmoxToken',
      );
      assert.ok(setToken, 'a row that runs "Set Proxmox API Token"');
      assert.match(String(item(setToken).label), /set the API token/);
      assert.equal(
        sim.requests.some((q) => JSON.stringify(q.headers).includes(SECRET)),
        false,
      );
    });

    it('takes the token through "Set Proxmox API Token" (SecretStorage) and shows the guest: node, vmid, status', async function () {
      const id = await vscode.commands.executeCommand<string>('agentkeep.setProxmoxToken', `${TOKEN_ID}=${SECRET}`);
      assert.equal(id, TOKEN_ID);
      const r = await until('the guest in the view', async () => {
        const n = await root();
        return n.kind === 'agent' && n.guest ? n : undefined;
      });
      assert.equal(String(item(r).label), 'hermes-agent');
      assert.equal(desc(r), 'pve1 · 101 · running');
      assert.equal(iconId(r), 'vm-running');
      assert.equal(item(r).contextValue, 'agent.proxmox.qemu');
      assert.ok(
        sim.requests.some((q) => q.headers.authorization === `PVEAPIToken=${TOKEN_ID}=${SECRET}`),
        'the sidecar used the stored token',
      );
      // the fleet: guests tagged "agent" on every node, the untagged one left out
      const fleet = await child(r, 'Agents');
      const guests = await api.tree.getChildren(fleet);
      assert.deepEqual(labels(api, guests), ['hermes-agent', 'second-agent']);
      // each guest says whether its memory is reachable and how (issue 11 item 5: agent.memoryReach); the
      // simulator's guests here have no guest agent socket behind them, and 102 is stopped
      assert.match(desc(guests[0]!), /^101 · pve1 · running · memory not reachable · this window$/);
      assert.match(desc(guests[1]!), /^102 · pve2 · stopped · memory not reachable$/);
      assert.match(
        String((item(guests[1]!).tooltip as vscode.MarkdownString).value).replace(/\\/g, ''),
        /Memory not reachable: VM 102 on 127\.0\.0\.1 is not running/,
      );
      assert.deepEqual(item(guests[1]!).command?.arguments, [guests[1]!.kind === 'guest' && guests[1]!.guest.target]);
    });

    it('creates a restore point with RAM state: the RAM badge, and "You are here" below it', async function () {
      const rp = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'with ram',
        vmstate: true,
      });
      assert.ok(rp, JSON.stringify(api.lastError()));
      assert.equal(rp.machine.vmstate, true);
      const snap = sim.guests.get(101)!.snapshots.get(rp.machine.snapname ?? rp.id);
      assert.equal(snap?.vmstate, true, 'Proxmox holds a snapshot with vmstate');
      const rps = await child(await root(), 'Restore points');
      const flat = await flatten(rps);
      assert.deepEqual(
        flat.map((f) => [f.label, f.depth]),
        [
          ['with ram', 0],
          ['You are here', 1],
        ],
      );
      assert.match(desc(flat[0]!.node), /^RAM · /);
      assert.equal(iconId(flat[0]!.node), 'chip');
      assert.match(desc(flat[1]!.node), /^VM running/);
    });

    it('nests a disk-only restore point under its parent, without the badge', async function () {
      const rp = await vscode.commands.executeCommand<RestorePoint>('agentkeep.createRestorePoint', {
        label: 'disk only',
        vmstate: false,
      });
      assert.ok(rp, JSON.stringify(api.lastError()));
      assert.notEqual(rp.machine.vmstate, true);
      const flat = await flatten(await child(await root(), 'Restore points'));
      assert.deepEqual(
        flat.map((f) => [f.label, f.depth]),
        [
          ['with ram', 0],
          ['disk only', 1],
          ['You are here', 2],
        ],
      );
      assert.doesNotMatch(desc(flat[1]!.node), /RAM/);
    });

    it('rolls back to a snapshot without RAM state: the VM stays stopped and the UI says so', async function () {
      const rps = api.getTreeRestorePoints();
      const disk = rps.find((r) => r.label === 'disk only')!;
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        disk.id,
        'machine',
        { confirm: false, start: false },
      );
      assert.ok(res, JSON.stringify(api.lastError()));
      assert.equal(res.machineState, 'stopped');
      assert.equal(sim.guests.get(101)!.running, false, 'the simulated VM is stopped');
      log('after rollback:', api.lastRestoreMessage());
      assert.match(
        api.lastRestoreMessage() ?? '',
        /^Rolled back to "disk only"\. The VM is stopped: the snapshot has no RAM state\. Start it in Proxmox or with "qm start 101" on the node, or choose "Roll back and start VM" next time\./,
      );
      assert.doesNotMatch(api.lastRestoreMessage() ?? '', /--start/, 'no CLI flag in the VS Code message');
      const r = await root();
      assert.equal(desc(r), 'pve1 · 101 · stopped');
      const flat = await flatten(await child(r, 'Restore points'));
      const here = flat.find((f) => f.label === 'You are here')!;
      const parentOfHere = flat
        .slice(0, flat.indexOf(here))
        .reverse()
        .find((f) => f.depth === here.depth - 1);
      assert.equal(parentOfHere?.label, 'disk only', 'you are here: on the restored snapshot');
      assert.match(desc(here.node), /^VM stopped/);
    });

    it('rolls back with "start after rollback": the VM runs again', async function () {
      const disk = api.getTreeRestorePoints().find((r) => r.label === 'disk only')!;
      const res = await vscode.commands.executeCommand<ResultOf<'restorePointRestore'>>(
        'agentkeep.restore',
        disk.id,
        'machine',
        { confirm: false, start: true },
      );
      assert.ok(res, JSON.stringify(api.lastError()));
      assert.equal(res.machineState, 'running');
      assert.equal(sim.guests.get(101)!.running, true);
      assert.match(api.lastRestoreMessage() ?? '', /^Rolled back to "disk only"\. The VM is running\./);
    });

    it('shows a lock as a warning, explains it, and refuses to snapshot a locked guest', async function () {
      sim.guests.get(101)!.lock = 'backup';
      try {
        const r = await root();
        assert.equal(desc(r), 'pve1 · 101 · running · locked (backup)');
        assert.equal(iconId(r), 'warning');
        assert.match((item(r).tooltip as vscode.MarkdownString).value, /backup \(vzdump\) is running/);
        const rp = await vscode.commands.executeCommand('agentkeep.createRestorePoint', {
          label: 'while locked',
          vmstate: false,
        });
        assert.equal(rp, undefined);
        assert.equal(api.lastError()?.code, 'guest_locked', JSON.stringify(api.lastError()));
      } finally {
        sim.guests.get(101)!.lock = undefined;
      }
    });

    it('cancelling a slow Proxmox task stops waiting at once; the task goes on and its restore point appears', async function () {
      sim.faults.taskMsByType = { qmsnapshot: 2500 };
      try {
        const target = `proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`;
        const cts = new vscode.CancellationTokenSource();
        const pending = api.sidecar.request(
          'restorePointCreate',
          { target, label: 'slow one', stores: [] },
          undefined,
          cts.token,
        );
        await until(
          'the snapshot task to start',
          () => [...sim.tasks.values()].some((t) => t.type === 'qmsnapshot' && !t.exitstatus) || undefined,
          5000,
          50,
        );
        const t0 = Date.now();
        cts.cancel();
        const err = await pending.then(
          () => assert.fail('the request must not wait for the task'),
          (e: { code?: string }) => e,
        );
        assert.equal(err.code, 'cancelled');
        assert.ok(Date.now() - t0 < 1000, `stopped waiting after ${Date.now() - t0} ms`);
        assert.ok(
          [...sim.tasks.values()].some((t) => t.type === 'qmsnapshot' && !t.exitstatus),
          'the Proxmox task still runs',
        );
        const listed = await until(
          'the restore point of the cancelled wait',
          async () => (await api.sidecar.request('restorePointList', { target })).find((r) => r.label === 'slow one'),
          20000,
          200,
        );
        assert.equal(listed.status, 'ready');
      } finally {
        sim.faults.taskMsByType = undefined;
      }
    });

    it('"Choose Agent" switches this window to another discovered guest', async function () {
      const target = `proxmox://127.0.0.1:${sim.port}/pve2/qemu/102`;
      const chosen = await vscode.commands.executeCommand<string>('agentkeep.chooseAgent', target);
      assert.equal(chosen, target);
      try {
        const r = await until('the other guest', async () => {
          const n = await root();
          return n.kind === 'agent' && n.guest?.vmid === 102 ? n : undefined;
        });
        assert.equal(String(item(r).label), 'second-agent');
        assert.equal(desc(r), 'pve2 · 102 · stopped');
      } finally {
        await conf().update('target', undefined, W);
      }
    });

    it('never lets the token secret reach the output channel or the settings', async function () {
      const out = api.outputText();
      assert.match(out, /Proxmox API token stored in SecretStorage/, 'the output channel is recorded');
      assert.match(out, /starting sidecar/);
      assert.equal(out.includes(SECRET), false, 'the secret is not in the output channel');
      const all = JSON.stringify(vscode.workspace.getConfiguration('agentkeep'));
      assert.equal(all.includes(SECRET), false, 'the secret is not in any setting');
    });
  });
}
