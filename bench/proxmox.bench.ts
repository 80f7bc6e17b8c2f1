/**
 * Benchmark: the Proxmox backend against the contract simulator (test/pve-sim, HTTPS on 127.0.0.1),
 * side by side with what a user would script by hand: a plain loop over the same endpoints
 * (GET config, GET feature, POST snapshot, then GET task status with a fixed 1 s poll, curl-like).
 *   1. task-stop delay: from the instant the simulator marks the task stopped to the instant the
 *      client knows (AgentKeep: PveClient.waitTask with adaptive backoff 50 ms x1.5 up to 1 s;
 *      plain: fixed 1 s poll). Task run times are drawn (seeded) from 100-2000 ms.
 *   2. requests per restore point: every HTTP request of one create (AgentKeep: the whole
 *      ProxmoxBackend.create incl. lock/feature checks and the final snapshot listing), and of
 *      one rollback and one delete.
 * Run: npm run bench:proxmox   (= npx tsx bench/proxmox.bench.ts)
 * Env: BENCH_PVE_N (15) restore points per side.
 */
import * as https from 'node:https';
import { performance } from 'node:perf_hooks';
import { ProxmoxBackend } from '../sidecar/machine/proxmox';
import { parseTarget } from '../sidecar/core/target';
import { PveSim } from '../test/pve-sim/server';
import { rng } from './lib';

const N = Number(process.env.BENCH_PVE_N ?? 15);
const TOKEN = { id: 'bench@pve!b', secret: 'b3nch000-0000-4000-8000-000000000000' };

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))];
}

/** A curl-like call: one HTTPS request, the JSON `data`. */
function plain(sim: PveSim, method: string, p: string, form?: Record<string, string>): Promise<any> {
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: sim.port,
        method,
        path: `/api2/json${p}`,
        ca: sim.cert.cert,
        headers: {
          Authorization: `PVEAPIToken=${TOKEN.id}=${TOKEN.secret}`,
          ...(body ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
        },
      },
      (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(JSON.parse(t).data)
            : reject(new Error(`${res.statusCode} ${res.statusMessage}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const sim = new PveSim({ token: TOKEN });
  await sim.start();
  sim.addGuest({ vmid: 101 });
  const r = rng(42);
  const durations = Array.from({ length: 2 * N }, () => Math.round(100 + r() * 1900));
  const target = parseTarget(`proxmox://127.0.0.1:${sim.port}/pve1/qemu/101`);
  const b = new ProxmoxBackend(
    target,
    {},
    { AGENTKEEP_PVE_TOKEN: `${TOKEN.id}=${TOKEN.secret}`, AGENTKEEP_PVE_FINGERPRINT: sim.cert.fingerprint },
  );

  // AgentKeep: full create through the backend; the delay is measured on waitTask inside it.
  const akDelay: number[] = [];
  const akReq: number[] = [];
  const origWait = b.client.waitTask.bind(b.client);
  b.client.waitTask = async (node, upid, what) => {
    const res = await origWait(node, upid, what);
    akDelay.push(performance.now() - sim.stoppedAt.get(upid)!);
    return res;
  };
  for (let i = 0; i < N; i++) {
    sim.faults.taskMs = durations[i];
    const before = sim.requests.length;
    await b.create(`ak_bench_${i}`, {
      meta: { label: `bench ${i}`, kind: 'manual', createdAt: new Date().toISOString() },
    });
    akReq.push(sim.requests.length - before);
  }
  sim.faults.taskMs = 300;
  let before = sim.requests.length;
  await b.restore('ak_bench_0', {});
  const akRollbackReq = sim.requests.length - before;
  before = sim.requests.length;
  await b.delete(`ak_bench_${N - 1}`);
  const akDeleteReq = sim.requests.length - before;

  // Plain loop: config, feature, POST, then status every 1 s.
  const plDelay: number[] = [];
  const plReq: number[] = [];
  for (let i = 0; i < N; i++) {
    sim.faults.taskMs = durations[N + i];
    const before2 = sim.requests.length;
    await plain(sim, 'GET', '/nodes/pve1/qemu/101/config');
    await plain(sim, 'GET', '/nodes/pve1/qemu/101/feature?feature=snapshot');
    const upid: string = await plain(sim, 'POST', '/nodes/pve1/qemu/101/snapshot', { snapname: `plain_${i}` });
    for (;;) {
      const st = await plain(sim, 'GET', `/nodes/pve1/tasks/${upid}/status`);
      if (st.status === 'stopped') {
        plDelay.push(performance.now() - sim.stoppedAt.get(upid)!);
        break;
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
    plReq.push(sim.requests.length - before2);
  }
  b.close();
  await sim.stop();

  const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
  const rows = [
    ['task-stop delay, median (ms)', quantile(akDelay, 0.5), quantile(plDelay, 0.5)],
    ['task-stop delay, p95 (ms)', quantile(akDelay, 0.95), quantile(plDelay, 0.95)],
    ['requests per create (mean)', mean(akReq), mean(plReq)],
  ];
  console.log(
    `Proxmox backend vs plain 1 s poll loop, ${N} restore points each, task run times 100-2000 ms (seed 42), simulator over HTTPS on 127.0.0.1`,
  );
  console.log('| measure | AgentKeep | plain loop (1 s poll) | ratio AgentKeep/plain |');
  console.log('|---|---|---|---|');
  for (const [name, a, p] of rows)
    console.log(
      `| ${name} | ${Number(a).toFixed(1)} | ${Number(p).toFixed(1)} | ${(Number(a) / Number(p)).toFixed(2)}x |`,
    );
  console.log(`| requests per rollback / per delete (AgentKeep) | ${akRollbackReq} / ${akDeleteReq} | | |`);
  console.log(`target: median task-stop delay < 100 ms -> ${quantile(akDelay, 0.5) < 100 ? 'met' : 'NOT met'}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
