/**
 * The recorded Proxmox failure cases (../shared/reference/proxmox-and-qemu.md section 3, cases 1-16,
 * plus the source-derived ones) as one table, run against the real backend over real HTTPS against
 * the contract simulator. The cases that need no fault injection run against a real host in
 * proxmox-smoke.test.ts.
 */
import assert from 'node:assert/strict';
import type { ProxmoxBackend } from '../../sidecar/machine/proxmox';
import type { PveSim, SimGuest } from '../pve-sim/server';
import { rejection, simBackend, startSim } from './helpers/pve';

const meta = (label: string) => ({ label, kind: 'manual' as const, createdAt: new Date().toISOString() });

/** One scenario: set the guest up, act through the backend, check the outcome. */
interface Scenario {
  name: string;
  setup?: (sim: PveSim, g: SimGuest) => void;
  run: (b: ProxmoxBackend, sim: PveSim, g: SimGuest) => Promise<void>;
}

const scenarios: Scenario[] = [
  {
    name: 'case 1: a delete that fails leaves lock snapshot-delete; create then explains the lock; force after unlock removes it',
    setup: (sim) =>
      (sim.faults.failTask = {
        type: 'qmdelsnapshot',
        text: "command '/usr/bin/qemu-img snapshot -d daily1 /var/lib/vz/images/101/vm-101-disk-0.qcow2' failed: got timeout",
        once: true,
      }),
    run: async (b, sim, g) => {
      await b.create('daily1', { meta: meta('daily') });
      const e = await rejection(b.delete('daily1'));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /got timeout/);
      assert.match(e.message, /Task log/);
      assert.equal(g.lock, 'snapshot-delete');
      assert.equal(g.snapshots.get('daily1')?.snapstate, 'delete');
      const posts = sim.mutations().length;
      const e2 = await rejection(b.create('ak_next', { meta: meta('next') }));
      assert.equal(e2.kind, 'GuestLocked');
      assert.match(e2.message, /locked \(snapshot-delete\)/);
      assert.match(e2.hint ?? '', /qm unlock 101/);
      assert.match(e2.hint ?? '', /never unlocks/);
      assert.equal(sim.mutations().length, posts, 'nothing was sent to a locked guest');
      assert.equal(g.lock, 'snapshot-delete', 'AgentKeep did not unlock');
      g.lock = undefined; // the user ran `qm unlock 101`
      await b.deleteSnapshot('daily1', { force: true });
      assert.equal(g.snapshots.has('daily1'), false);
      assert.equal(sim.mutations().at(-1)?.params.force, '1');
    },
  },
  {
    name: 'case 2: delete during replication fails with the migration-lock text',
    setup: (sim) =>
      (sim.faults.failTask = {
        type: 'qmdelsnapshot',
        text: 'Failed to obtain guest migration lock - replication running?',
        once: true,
      }),
    run: async (b) => {
      await b.create('ak_rep', { meta: meta('rep') });
      const e = await rejection(b.delete('ak_rep'));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /replication running\?/);
    },
  },
  {
    name: 'case 3: snapshot during a backup is refused with an explanation, before any POST',
    setup: (_sim, g) => (g.lock = 'backup'),
    run: async (b, sim) => {
      const e = await rejection(b.create('ak_bk', { meta: meta('bk') }));
      assert.equal(e.kind, 'GuestLocked');
      assert.match(e.message, /is locked \(backup\)/);
      assert.match(e.hint ?? '', /backup \(vzdump\)/);
      assert.equal(sim.mutations().length, 0);
    },
  },
  {
    name: 'case 4: a lock that appears after the check fails in the task; the client fails too (exit status != OK)',
    setup: (sim) => (sim.faults.failTask = { type: 'qmsnapshot', text: 'VM is locked (backup)', once: true }),
    run: async (b, _sim, g) => {
      const e = await rejection(b.create('ak_race', { meta: meta('race') }));
      assert.equal(e.kind, 'GuestLocked');
      assert.match(e.message, /locked \(backup\)/);
      assert.equal(g.snapshots.has('ak_race'), false);
    },
  },
  {
    name: 'case 5: a 41-character name is refused before sending (Proxmox would answer 400)',
    run: async (b, sim) => {
      const e = await rejection(b.create(`a${'b'.repeat(40)}`, { meta: meta('long') }));
      assert.equal(e.kind, 'InvalidParams');
      assert.match(e.message, /41 characters \(at most 40\)/);
      assert.equal(sim.requests.length, 0);
      const raw = await rejection(
        b.client.transport.doRequest('POST', '/api2/json/nodes/pve1/qemu/101/snapshot', '', {
          snapname: `a${'b'.repeat(40)}`,
        }),
      );
      assert.equal((raw as unknown as { status: number }).status, 400);
      assert.deepEqual((raw as unknown as { errors: object }).errors, {
        snapname: 'value may only be 40 characters long',
      });
    },
  },
  {
    name: "case 6: `name` instead of `snapname` gives Proxmox's errors map",
    run: async (b) => {
      const e = (await rejection(
        b.client.transport.doRequest('POST', '/api2/json/nodes/pve1/qemu/101/snapshot', '', { name: 'x1' }),
      )) as unknown as { status: number; reason: string; errors: object };
      assert.equal(e.status, 400);
      assert.equal(e.reason, 'Parameter verification failed.');
      assert.deepEqual(e.errors, {
        snapname: 'property is missing and it is not optional',
        name: 'property is not defined in schema and the schema does not allow additional properties',
      });
    },
  },
  {
    name: 'case 7: names with ":", a leading digit, one character or a dot are refused (client and server)',
    run: async (b, sim) => {
      for (const n of ['auto_2023-03-21T10:00:00', '1abc', 'a', 'my.snap']) {
        const e = await rejection(b.create(n, { meta: meta(n) }));
        assert.equal(e.kind, 'InvalidParams', n);
        const raw = (await rejection(
          b.client.transport.doRequest('POST', '/api2/json/nodes/pve1/qemu/101/snapshot', '', { snapname: n }),
        )) as unknown as { errors: Record<string, string> };
        assert.equal(raw.errors.snapname, `invalid format - invalid configuration ID '${n}'\n`, n);
      }
      assert.equal(sim.guests.get(101)!.snapshots.size, 0);
    },
  },
  {
    name: 'case 8: WARNINGS: 1 is a success and the warning is surfaced from the task log',
    setup: (sim) =>
      (sim.faults.warnTask = { type: 'qmsnapshot', lines: 'guest-fsfreeze-freeze problems - timeout'.split('|') }),
    run: async (b) => {
      const info = await b.create('ak_warn', { meta: meta('warn') });
      assert.deepEqual(info.warnings, ['guest-fsfreeze-freeze problems - timeout']);
    },
  },
  {
    name: 'case 9: a RAM snapshot that times out in QMP fails with the log tail and is cleaned up',
    setup: (sim) =>
      (sim.faults.failTask = {
        type: 'qmsnapshot',
        text: "VM 101 qmp command 'query-savevm' failed - got timeout",
        once: true,
      }),
    run: async (b, _sim, g) => {
      const e = await rejection(b.create('ak_ram', { meta: meta('ram'), vmstate: true }));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /query-savevm' failed - got timeout/);
      assert.match(e.message, /snapshot create failed: starting cleanup/);
      assert.equal(g.snapshots.has('ak_ram'), false);
      assert.equal(g.lock, undefined);
    },
  },
  {
    name: 'case 10: a rollback the storage cannot do fails with its text',
    setup: (sim) =>
      (sim.faults.failTask = {
        type: 'qmrollback',
        text: "can't rollback, snapshot 'ak_pre' does not exist on 'storage:vm-101-disk-0'",
        once: true,
      }),
    run: async (b) => {
      await b.create('ak_pre', { meta: meta('pre') });
      const e = await rejection(b.restore('ak_pre', {}));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /does not exist on 'storage:vm-101-disk-0'/);
    },
  },
  {
    name: 'case 11: storage without snapshots is refused from GET feature, before any POST',
    setup: (_sim, g) => (g.storageSnapshots = false),
    run: async (b, sim) => {
      const e = await rejection(b.create('ak_raw', { meta: meta('raw') }));
      assert.equal(e.kind, 'Unsupported');
      assert.match(e.hint ?? '', /LVM-thin/);
      assert.equal(sim.mutations().length, 0);
    },
  },
  {
    name: 'case 12: 596 with an empty body on the POST, host did not act: one POST, no snapshot, "safe to try again"',
    setup: (sim) => (sim.faults.status596 = { method: 'POST', match: /\/snapshot$/, act: false }),
    run: async (b, sim, g) => {
      const e = await rejection(b.create('ak_596', { meta: meta('596') }));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /596 Connection timed out/);
      assert.match(e.hint ?? '', /safe to try again/);
      assert.equal(sim.mutations().length, 1);
      assert.equal(g.snapshots.size, 0);
    },
  },
  {
    name: 'case 12b: 596 on the POST after the host acted: reconciled from the task list, one snapshot',
    setup: (sim) => (sim.faults.status596 = { method: 'POST', match: /\/snapshot$/, reason: 'Broken pipe', act: true }),
    run: async (b, sim, g) => {
      const info = await b.create('ak_596b', { meta: meta('596b') });
      assert.equal(info.snapname, 'ak_596b');
      assert.equal(sim.mutations().length, 1);
      assert.equal(g.snapshots.size, 1);
      assert.ok(
        sim.requests.some((r) => r.path === '/nodes/pve1/tasks' && r.params.vmid === '101'),
        'looked at the task list',
      );
    },
  },
  {
    name: 'case 12c: a 596 on a GET is retried once',
    setup: (sim) => (sim.faults.status596 = { method: 'GET', match: /\/status\/current$/, act: false }),
    run: async (b, sim) => {
      await b.check();
      assert.equal(sim.requests.filter((r) => r.path.endsWith('/status/current')).length, 2);
    },
  },
  {
    name: 'case 13: 596 "certificate verify failed" from the node-to-node hop is reported, not resent',
    setup: (sim) =>
      (sim.faults.status596 = {
        method: 'DELETE',
        match: /\/snapshot\/ak_tls$/,
        reason: 'tls_process_server_certificate: certificate verify failed',
        act: false,
      }),
    run: async (b, sim) => {
      await b.create('ak_tls', { meta: meta('tls') });
      const e = await rejection(b.delete('ak_tls'));
      assert.match(e.message, /certificate verify failed/);
      assert.equal(sim.mutations().filter((r) => r.method === 'DELETE').length, 1);
    },
  },
  {
    name: 'case 14: a delete that outlives the client timeout is reported as still running on the host',
    setup: (sim) => (sim.faults.taskMsByType = { qmdelsnapshot: Infinity }),
    run: async (b, _sim, g) => {
      await b.create('ak_huge', { meta: meta('huge') });
      b.client.opts.taskTimeoutMs = 300;
      const e = await rejection(b.delete('ak_huge'));
      assert.equal(e.kind, 'Hypervisor');
      assert.match(e.message, /still running .* continues on the host/);
      assert.equal(g.lock, 'snapshot-delete');
    },
  },
  {
    name: 'case 15: a slow RAM snapshot is waited for with backoff (few polls)',
    setup: (sim) => (sim.faults.taskMsByType = { qmsnapshot: 600 }),
    run: async (b, sim) => {
      Object.assign(b.client.opts, { pollMinMs: 50, pollMaxMs: 1000 }); // the defaults
      const info = await b.create('ak_slow', { meta: meta('slow'), vmstate: true });
      assert.equal(info.vmstate, true);
      const polls = sim.requests.filter((r) => r.path.endsWith('/status') && r.path.includes('qmsnapshot')).length;
      assert.ok(polls >= 3 && polls <= 20, `polls: ${polls}`);
    },
  },
  {
    name: "case 16: Proxmox's own errors: name already used, missing snapshot, incomplete snapshot, reserved name",
    run: async (b, _sim, g) => {
      await b.create('test', { meta: meta('t') });
      const used = await rejection(b.create('test', { meta: meta('t') }));
      assert.match(used.message, /snapshot name 'test' already used/);
      const missing = await rejection(b.restore('test2', {}));
      assert.equal(missing.kind, 'RestorePointNotFound');
      g.snapshots.get('test')!.snapstate = 'prepare';
      const inc = await rejection(b.restore('test', {}));
      assert.match(inc.message, /incomplete \(snapstate = prepare\)/);
      const cur = await rejection(b.create('current', { meta: meta('c') }));
      assert.equal(cur.kind, 'InvalidParams');
      const raw = (await rejection(
        b.client.transport.doRequest('POST', '/api2/json/nodes/pve1/qemu/101/snapshot', '', { snapname: 'current' }),
      )) as unknown as { status: number; reason: string };
      assert.equal(raw.status, 500);
      assert.equal(raw.reason, "unable to use snapshot name 'current' (reserved name)");
    },
  },
  {
    name: 'rollback with start=1 without VM.PowerMgmt: 403, explained',
    setup: (sim) => sim.privs.delete('VM.PowerMgmt'),
    run: async (b) => {
      await b.create('ak_pm', { meta: meta('pm') });
      const e = await rejection(b.restore('ak_pm', { start: true }));
      assert.equal(e.kind, 'AuthFailed');
      assert.match(e.hint ?? '', /VM\.PowerMgmt/);
    },
  },
  {
    name: 'a token without VM.Snapshot gets the privilege named',
    setup: (sim) => sim.privs.delete('VM.Snapshot'),
    run: async (b) => {
      const e = await rejection(b.create('ak_priv', { meta: meta('priv') }));
      assert.equal(e.kind, 'AuthFailed');
      assert.match(e.message, /VM\.Snapshot/);
    },
  },
];

describe('proxmox: recorded failure cases (simulator)', function () {
  this.timeout(20_000);
  let sim: PveSim;
  let b: ProxmoxBackend;
  beforeEach(async () => {
    sim = await startSim();
    sim.addGuest({ vmid: 101 });
    b = simBackend(sim, 101);
  });
  afterEach(async () => {
    b?.close();
    await sim?.stop();
  });
  for (const s of scenarios) {
    it(s.name, async () => {
      const g = sim.guests.get(101)!;
      s.setup?.(sim, g);
      await s.run(b, sim, g);
    });
  }
});
