/**
 * End to end: the real built CLI binary (out/sidecar.js, a separate process) against the contract
 * simulator over HTTPS, with AGENTKEEP_PVE_TOKEN and AGENTKEEP_PVE_FINGERPRINT set.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { PveSim } from '../pve-sim/server';
import { makeCert } from '../pve-sim/server';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { TOKEN_SECRET, simEnv, startSim } from './helpers/pve';

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

describe('CLI with a proxmox:// target (built binary, simulator)', function () {
  this.timeout(120_000);
  let sim: PveSim;
  let tmp: string;
  before(async () => {
    await buildSidecar();
  });
  beforeEach(async () => {
    sim = await startSim({ nodes: ['pve1', 'pve2'] });
    sim.addGuest({ vmid: 101, tags: ['agent'], name: 'hermes-vm' });
    sim.addGuest({ vmid: 205, type: 'lxc', node: 'pve2', tags: ['agent'] });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'ak-pve-cli-'));
  });
  afterEach(async () => {
    await sim.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('create, list, restore and delete; another machine sees the snapshots; discover; the secret never shows', async () => {
    const target = `proxmox://127.0.0.1:${sim.port}/-/qemu/101`;
    const env = { ...simEnv(sim), AGENTKEEP_STATE_DIR: path.join(tmp, 'state') };
    const outputs: string[] = [];
    const run = async (args: string[], e: NodeJS.ProcessEnv = env) => {
      const r = await runSidecar(args, e);
      outputs.push(r.stdout, r.stderr);
      return r;
    };

    const c1 = await run(['restore-point', 'create', '--target', target, '--label', 'before upgrade', '--json']);
    assert.equal(c1.code, 0, c1.stderr);
    const rp1 = JSON.parse(c1.stdout);
    assert.equal(rp1.machine.backend, 'proxmox');
    assert.equal(rp1.machine.snapname, rp1.id);
    assert.ok(sim.guests.get(101)!.snapshots.has(rp1.id));

    const human = await run(['restore-point', 'create', '--target', target, '--label', 'human']);
    assert.match(human.stdout, /^Created restore point ak_\w+ "human": snapshot ak_\w+ in \d+ ms/);
    const hid = /restore point (ak_\w+)/.exec(human.stdout)![1];
    assert.equal((await run(['restore-point', 'delete', hid, '--target', target, '--yes'])).code, 0);

    const c2 = await run(['restore-point', 'create', '--target', target, '--vmstate', '--json']);
    assert.equal(c2.code, 0, c2.stderr);
    const rp2 = JSON.parse(c2.stdout);
    assert.equal(rp2.machine.vmstate, true);
    assert.equal(rp2.machine.parent, rp1.id);

    const l = await run(['restore-point', 'list', '--target', target, '--json']);
    assert.deepEqual(
      JSON.parse(l.stdout)
        .map((r: { id: string }) => r.id)
        .sort(),
      [rp1.id, rp2.id].sort(),
    );

    // Rename: the journal and the snapshot description (marker kept); --important sets the flag.
    const lb = await run([
      'restore-point',
      'label',
      rp1.id,
      '--target',
      target,
      '--label',
      'before the big upgrade',
      '--important',
      '--json',
    ]);
    assert.equal(lb.code, 0, lb.stderr);
    assert.equal(JSON.parse(lb.stdout).label, 'before the big upgrade');
    assert.equal(JSON.parse(lb.stdout).important, true);
    assert.match(
      sim.guests.get(101)!.snapshots.get(rp1.id)!.description,
      /^before the big upgrade\n(.|\n)*agentkeep:v1:/,
    );
    // another machine (empty state dir) sees the rename and the important mark through the marker
    const seen = JSON.parse(
      (
        await run(['restore-point', 'list', '--target', target, '--json'], {
          ...env,
          AGENTKEEP_STATE_DIR: path.join(tmp, 'third'),
        })
      ).stdout,
    ) as Array<{ id: string; label: string; important?: boolean }>;
    assert.deepEqual((({ label, important }) => ({ label, important }))(seen.find((r) => r.id === rp1.id)!), {
      label: 'before the big upgrade',
      important: true,
    });
    const nothing = await run(['restore-point', 'label', rp1.id, '--target', target, '--json']);
    assert.equal(nothing.code, 1);
    assert.match(JSON.parse(nothing.stdout).error.message, /Nothing to change/);
    assert.equal(
      (
        await run([
          'restore-point',
          'label',
          rp1.id,
          '--target',
          target,
          '--label',
          'before upgrade',
          '--not-important',
        ])
      ).code,
      0,
    );

    // Agent-state files inside the VM through the guest agent: write keeps a local backup, read prints.
    const mem = '/root/.hermes/memories/MEMORY.md';
    sim.guests.get(101)!.files.set(mem, Buffer.from('old entry\n§\nsecond\n'));
    const gw = await run(['guest', 'write', '--target', target, '--file', mem, '--text', 'new entry\n', '--yes']);
    assert.equal(gw.code, 0, gw.stderr);
    const backup = /The old content is in (\S+)\./.exec(gw.stdout)![1];
    assert.equal(readFileSync(backup, 'utf8'), 'old entry\n§\nsecond\n');
    assert.equal(sim.guests.get(101)!.files.get(mem)!.toString('utf8'), 'new entry\n');
    const gr = await run(['guest', 'read', '--target', target, '--file', mem]);
    assert.equal(gr.stdout.trim(), 'new entry');
    const fresh = await run(['guest', 'write', '--target', target, '--file', '/root/new.txt', '--text', 'x', '--yes']);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.doesNotMatch(fresh.stdout, /old content/);
    const rel = await run(['guest', 'read', '--target', target, '--file', 'relative.txt', '--json']);
    assert.equal(JSON.parse(rel.stdout).error.code, 'invalid_params');
    const ct = await run([
      'guest',
      'read',
      '--target',
      `proxmox://127.0.0.1:${sim.port}/pve2/lxc/205`,
      '--file',
      mem,
      '--json',
    ]);
    assert.equal(JSON.parse(ct.stdout).error.code, 'unsupported');
    const binFile = path.join(tmp, 'bin.dat');
    writeFileSync(binFile, Buffer.from([0x62, 0x00, 0xff, 0xfe, 0x0a]));
    const bin = await run(['guest', 'write', '--target', target, '--file', mem, '--from', binFile, '--yes', '--json']);
    assert.equal(JSON.parse(bin.stdout).error.code, 'file_error');
    assert.match(JSON.parse(bin.stdout).error.message, /not UTF-8 text/);
    const big = await run(['guest', 'write', '--target', target, '--file', mem, '--text', 'x'.repeat(61441), '--yes']);
    assert.equal(big.code, 1);
    assert.match(big.stderr, /at most 61440 bytes/);
    assert.equal(sim.guests.get(101)!.files.get(mem)!.toString('utf8'), 'new entry\n');
    const noYes = await run(['guest', 'write', '--target', target, '--file', mem, '--text', 'y']);
    assert.equal(noYes.code, 1);
    assert.equal(sim.guests.get(101)!.files.get(mem)!.toString('utf8'), 'new entry\n');

    // Another machine (empty state dir) finds them from the description markers alone.
    const other = { ...env, AGENTKEEP_STATE_DIR: path.join(tmp, 'other') };
    const l2 = await run(['restore-point', 'list', '--target', target, '--json'], other);
    const foreign = JSON.parse(l2.stdout) as Array<{ id: string; label: string }>;
    assert.deepEqual(foreign.map((r) => r.id).sort(), [rp1.id, rp2.id].sort());
    assert.equal(foreign.find((r) => r.id === rp1.id)?.label, 'before upgrade');

    // Restore without confirmation is refused (not a TTY); with --yes it runs.
    const refused = await run(['restore-point', 'restore', rp1.id, '--target', target, '--scope', 'machine']);
    assert.equal(refused.code, 1);
    const r = await run(['restore-point', 'restore', rp1.id, '--target', target, '--scope', 'machine', '--yes']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /The guest is stopped\./);
    assert.match(r.stdout, /hard-stopped/);
    assert.match(r.stdout, /does not undo what the agent did outside the machine/);
    assert.match(r.stdout, /Undo: agentkeep restore-point restore ak_/);
    assert.equal(sim.guests.get(101)!.running, false);

    const rj = await run([
      'restore-point',
      'restore',
      rp1.id,
      '--target',
      target,
      '--scope',
      'machine',
      '--start',
      '--yes',
      '--json',
    ]);
    assert.equal(rj.code, 0, rj.stderr);
    assert.equal(JSON.parse(rj.stdout).machineState, 'running');

    // The other machine can restore a snapshot it only knows from Proxmox.
    const ro = await run(
      ['restore-point', 'restore', rp2.id, '--target', target, '--scope', 'machine', '--yes', '--json'],
      other,
    );
    assert.equal(ro.code, 0, ro.stderr);
    assert.equal(JSON.parse(ro.stdout).machineState, 'running', 'RAM state resumes');

    const d = await run(['restore-point', 'delete', rp1.id, '--target', target, '--yes', '--json']);
    assert.equal(d.code, 0, d.stderr);
    assert.equal(sim.guests.get(101)!.snapshots.has(rp1.id), false);

    const disc = await run(['agent', 'discover', '--target', `proxmox://127.0.0.1:${sim.port}`, '--json']);
    assert.equal(disc.code, 0, disc.stderr);
    assert.deepEqual(
      JSON.parse(disc.stdout).map((a: { target: string }) => a.target),
      [`proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`, `proxmox://127.0.0.1:${sim.port}/pve2/lxc/205`],
    );

    const bad = await run(['restore-point', 'create', '--target', target], {
      ...env,
      AGENTKEEP_PVE_FINGERPRINT: makeCert('evil').fingerprint,
      AGENTKEEP_PVE_DEBUG: '1',
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /fingerprint .* not the pinned/);
    // list must not hide a wrong fingerprint, a refused token or an unreachable host behind the local journal
    const badList = await run(['restore-point', 'list', '--target', target, '--json'], {
      ...env,
      AGENTKEEP_PVE_FINGERPRINT: makeCert('evil').fingerprint,
    });
    assert.equal(badList.code, 1);
    assert.equal(JSON.parse(badList.stdout).error.code, 'auth_failed');
    const badToken = await run(['restore-point', 'list', '--target', target, '--json'], {
      ...env,
      AGENTKEEP_PVE_TOKEN: 'root@pam!ak=00000000-0000-0000-0000-000000000000',
    });
    assert.equal(badToken.code, 1);
    assert.equal(JSON.parse(badToken.stdout).error.code, 'auth_failed');
    const down = await run(['restore-point', 'list', '--target', 'proxmox://127.0.0.1:1/pve1/qemu/101', '--json']);
    assert.equal(down.code, 1);

    const dbg = await run(['restore-point', 'list', '--target', target], { ...env, AGENTKEEP_PVE_DEBUG: '1' });
    assert.match(dbg.stderr, /\[pve\] GET \/api2\/json\/nodes\/pve1\/qemu\/101\/snapshot -> 200/);

    const journals = [...filesUnder(path.join(tmp, 'state')), ...filesUnder(path.join(tmp, 'other'))].map((f) =>
      readFileSync(f, 'latin1'),
    );
    const descriptions = [...sim.guests.get(101)!.snapshots.values()].map((s) => s.description);
    const everything = [...outputs, ...journals, ...descriptions].join('\n');
    assert.ok(!everything.includes(TOKEN_SECRET), 'the token secret leaked');
  });
});
