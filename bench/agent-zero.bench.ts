/**
 * Benchmark: read an Agent Zero index.pkl with 20,000 memories (generated at bench time with
 * python3's pickle, same shape as the fixture: LangChain docstore tuple, pydantic-v2 Document state,
 * areas, consolidation and knowledge metadata; test/fixtures/memory/a0_pickle.py).
 *   - AgentKeep: AgentZeroStore.list() in process (read + pickleparser + entries + warnings), and
 *     parseDocstore alone (the pickle step)
 *   - the alternative a user would pick: a Python script that `pickle.load`s it (with stand-in
 *     classes, since LangChain is not installed here), run as a subprocess: wall time including
 *     interpreter start, and the in-process load time Python reports
 * Run: npm run bench:agent-zero   (= npx tsx bench/agent-zero.bench.ts)
 * Env: BENCH_A0_N (20000), BENCH_A0_ROUNDS (7), BENCH_DIR (os.tmpdir()/agentkeep-a0-bench),
 *      BENCH_KEEP=1 keeps the data.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentZeroStore } from '../sidecar/memory/agent-zero';
import { parseDocstore } from '../sidecar/memory/agent-zero/docstore';

const N = Number(process.env.BENCH_A0_N ?? 20000);
const ROUNDS = Number(process.env.BENCH_A0_ROUNDS ?? 7);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-a0-bench');
const PY = path.join(__dirname, '..', 'test', 'fixtures', 'memory', 'a0_pickle.py');

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
const fmt = (x: number): string => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(0)} ms`);

async function main(): Promise<void> {
  fs.rmSync(BASE, { recursive: true, force: true });
  const dir = path.join(BASE, 'a0', 'usr', 'memory', 'default');
  fs.mkdirSync(dir, { recursive: true });
  const pkl = path.join(dir, 'index.pkl');
  execFileSync('python3', [PY, 'make', pkl, String(N)]);
  fs.writeFileSync(
    path.join(dir, 'embedding.json'),
    JSON.stringify({ model_provider: 'huggingface', model_name: 'sentence-transformers/all-MiniLM-L6-v2' }),
  );
  const size = fs.statSync(pkl).size;
  const store = new AgentZeroStore(path.join(BASE, 'a0'));

  const list: number[] = [];
  const parse: number[] = [];
  const pyWall: number[] = [];
  const pyLoad: number[] = [];
  let count = 0;
  const pyScript = `import sys, time; sys.path.insert(0, ${JSON.stringify(path.dirname(PY))}); import a0_pickle, pickle
t = time.perf_counter(); s, m = pickle.load(open(${JSON.stringify(pkl)}, "rb")); d = time.perf_counter() - t
print(len(s._dict), d * 1000)`;
  for (let k = 0; k < ROUNDS; k++) {
    let t0 = process.hrtime.bigint();
    const files = await store.list();
    list.push(ms(t0));
    count = files.reduce((s, f) => s + f.entries.length, 0);
    t0 = process.hrtime.bigint();
    parseDocstore(fs.readFileSync(pkl), pkl);
    parse.push(ms(t0));
    t0 = process.hrtime.bigint();
    const out = execFileSync('python3', ['-c', pyScript], { encoding: 'utf8' }).trim().split(' ');
    pyWall.push(ms(t0));
    if (Number(out[0]) !== N) throw new Error(`python read ${out[0]} docs, expected ${N}`);
    pyLoad.push(Number(out[1]));
  }
  if (count !== N) throw new Error(`AgentKeep listed ${count} entries, expected ${N}`);
  const pyVer = execFileSync('python3', ['--version'], { encoding: 'utf8' }).trim();
  const rows: Array<[string, number]> = [
    ['AgentKeep AgentZeroStore.list() (read + unpickle + entries + warnings)', median(list)],
    ['AgentKeep parseDocstore (read + unpickle only)', median(parse)],
    [`${pyVer} subprocess: start + pickle.load (wall)`, median(pyWall)],
    [`${pyVer}: pickle.load alone (in-process)`, median(pyLoad)],
  ];
  console.log(
    `index.pkl: ${N} memories, ${(size / 1024 / 1024).toFixed(1)} MB; median of ${ROUNDS} rounds; Node ${process.version}`,
  );
  console.log('| what | median | vs python3 subprocess |');
  console.log('|---|---:|---:|');
  for (const [what, t] of rows) console.log(`| ${what} | ${fmt(t)} | ${(t / median(pyWall)).toFixed(2)}× |`);
  console.log(`target: list() < 1 s: ${median(list) < 1000 ? 'met' : 'NOT met'}`);
  if (!process.env.BENCH_KEEP) fs.rmSync(BASE, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
