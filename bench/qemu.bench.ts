/**
 * Benchmark: save and load of the tiny test guest (scripts/qemu-guest.sh; a Linux kernel + busybox
 * initramfs, BENCH_QEMU_MEM MiB of RAM, under TCG) through AgentKeep's qemu backend
 * (QemuBackend.create / restore: connect, query-status, disk discovery with query-block, name check,
 * the snapshot-save / snapshot-load job polled with query-jobs, records in the state dir) next to the
 * same QMP jobs sent by a minimal script (raw socket, fixed order: greeting, qmp_capabilities, job on
 * node disk0, query-jobs every 20 ms like the recipe's bench.py, job-dismiss; no discovery, no checks).
 * Rounds alternate which side goes first. Median per side and the difference (the overhead should stay
 * within the polling interval, 100 ms at most).
 * Run: npm run bench:qemu    (= npx tsx bench/qemu.bench.ts)
 * Env: BENCH_ROUNDS (5), BENCH_QEMU_MEM (guest RAM in MiB, 128).
 */
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ObjectStore } from '../sidecar/core/objects';
import { StateLayout } from '../sidecar/core/state';
import { parseTarget } from '../sidecar/core/target';
import { QemuBackend } from '../sidecar/machine/qemu';
import { JOB_POLL } from '../sidecar/machine/qemu/qmp';
import { startVm, stopAllVms } from '../test/unit/helpers/qemu';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MEM = Number(process.env.BENCH_QEMU_MEM ?? 128);

/** The minimal script: one raw QMP connection per job, fixed order, no discovery. Returns ms. */
async function minimalJob(socket: string, command: string, args: Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  const s = net.createConnection({ path: socket });
  let buf = '';
  const waiters: Array<(m: Record<string, unknown>) => void> = [];
  s.setEncoding('utf8');
  s.on('data', (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const m = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
      buf = buf.slice(i + 1);
      if (!m.event) waiters.shift()?.(m);
    }
  });
  const next = (): Promise<Record<string, unknown>> => new Promise((r) => waiters.push(r));
  const cmd = (execute: string, a?: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const p = next();
    s.write(JSON.stringify({ execute, ...(a ? { arguments: a } : {}) }) + '\n');
    return p;
  };
  await next(); // greeting
  await cmd('qmp_capabilities');
  const id = `min-${command}-${Date.now()}`;
  await cmd(command, { 'job-id': id, ...args });
  for (;;) {
    const jobs = (await cmd('query-jobs')).return as Array<{ id: string; status: string; error?: string }>;
    const j = jobs.find((x) => x.id === id);
    if (j?.status === 'concluded') {
      if (j.error) throw new Error(j.error);
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  await cmd('job-dismiss', { id });
  s.destroy();
  return performance.now() - t0;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

async function main(): Promise<void> {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-qemu-bench-'));
  try {
    const vm = await startVm(path.join(tmp, 'vm'), { kernel: true, memMiB: MEM });
    await new Promise((r) => setTimeout(r, 1500)); // let the guest fill its RAM
    const layout = new StateLayout(path.join(tmp, 'state'));
    const backend = new QemuBackend({
      target: parseTarget(`qemu:${vm.socket}`),
      layout,
      objects: new ObjectStore(layout.objectsDir),
    });
    const t = { akSave: [] as number[], akLoad: [] as number[], minSave: [] as number[], minLoad: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      const ak = async (): Promise<void> => {
        const id = `ak_bench_${r}`;
        let t0 = performance.now();
        await backend.create(id, {});
        t.akSave.push(performance.now() - t0);
        t0 = performance.now();
        await backend.restore(id, {});
        t.akLoad.push(performance.now() - t0);
        await backend.delete(id);
      };
      const min = async (): Promise<void> => {
        const tag = `min_bench_${r}`;
        t.minSave.push(await minimalJob(vm.socket, 'snapshot-save', { tag, vmstate: 'disk0', devices: ['disk0'] }));
        t.minLoad.push(await minimalJob(vm.socket, 'snapshot-load', { tag, vmstate: 'disk0', devices: ['disk0'] }));
        await minimalJob(vm.socket, 'snapshot-delete', { tag, devices: ['disk0'] });
      };
      if (r % 2 === 0) {
        await ak();
        await min();
      } else {
        await min();
        await ak();
      }
    }
    const rows = [
      ['snapshot-save (RAM + disk)', median(t.akSave), median(t.minSave)],
      ['snapshot-load', median(t.akLoad), median(t.minLoad)],
    ] as const;
    const lines = [
      `QEMU save/load, tiny guest (${MEM} MiB, TCG), median of ${ROUNDS} rounds; polling cap ${JOB_POLL.maxMs} ms`,
      '',
      '| operation | AgentKeep qemu backend | minimal QMP script | difference | ratio |',
      '|---|---:|---:|---:|---:|',
      ...rows.map(
        ([op, a, m]) => `| ${op} | ${fmt(a)} | ${fmt(m)} | ${Math.round(a - m)} ms | ${(a / m).toFixed(2)}× |`,
      ),
      '',
      `all rounds (ms): AgentKeep save ${t.akSave.map(Math.round).join(', ')}; load ${t.akLoad.map(Math.round).join(', ')}`,
      `                 minimal   save ${t.minSave.map(Math.round).join(', ')}; load ${t.minLoad.map(Math.round).join(', ')}`,
    ];
    console.log(lines.join('\n'));
  } finally {
    await stopAllVms();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
