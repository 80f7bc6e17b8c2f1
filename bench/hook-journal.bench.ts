/**
 * Benchmark: what a restore point before a risky agent action costs the agent at 20,000 files, by
 * the path it takes (issue 14: the hooks' risky moments and the dir backend's change journal):
 *   - `node -e 0`: a bare Node start, the floor of any shell hook (each hook call is a new process);
 *   - shell hook: out/hook.js (what `hook install` wires into Hermes) started as Hermes starts it
 *     (argv, the call's JSON on stdin) with a risky terminal call (`pip install requests`): a one-shot
 *     process, so a Node start plus the full walk of the tree every time (pre restore point only);
 *   - shell hook, handed off: the same hook process with an `agentkeep mcp` of its state dir running:
 *     it hands the call to that server (sidecar/hooks/handoff.ts), whose change journal makes it;
 *   - MCP, journal on: `restore_point_create` through the MCP SDK's client to one long-running
 *     `agentkeep mcp` server (one Core for its life, the inotify change journal on);
 *   - MCP, journal off: the same server with AGENTKEEP_DIR_JOURNAL=0 (the full walk, no Node start);
 *   - shadow git: `git add -A && git commit -q` (separate GIT_DIR, gc.auto=0), the reference.
 * Each row has its own identical copy of the tree (small text files, 50 per directory, one 2 MiB
 * binary per 1,000 files: bench/lib.ts generate(), as bench/dir-speed.bench.ts) and its own state
 * dir; every round makes the same small change (bench/lib.ts mutate(): 10 files edited, 10 added, 10
 * removed) in every copy, then times each row
 * once, rows interleaved round by round (load on a shared machine hits each alike), `sync` (untimed)
 * before each timed step. The MCP servers run with AGENTKEEP_DEBUG=1: the bench prints how each of
 * their creates scanned and fails when a journal-on create after the first walked the whole tree.
 * Builds out/ first (bench/lib.ts buildAgentkeep).
 * Run: npx tsx bench/hook-journal.bench.ts   (BENCH_FILES, default 20000; BENCH_ROUNDS, default 10;
 * BENCH_DIR, default $TMPDIR/agentkeep-hookjournal; BENCH_MD=file appends the table there)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { buildAgentkeep, generate, median, mutate, time } from './lib';

const ROOT = path.resolve(__dirname, '..');
const N = Number(process.env.BENCH_FILES ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-hookjournal');
const SIDECAR = path.join(ROOT, 'out', 'sidecar.js');
const HOOK = path.join(ROOT, 'out', 'hook.js');

/** Hermes' pre_tool_call JSON for a terminal command. */
function payload(command: string, id: string): string {
  return JSON.stringify({
    hook_event_name: 'pre_tool_call',
    tool_name: 'terminal',
    tool_input: { command },
    session_id: 'sess_bench',
    cwd: '/tmp',
    extra: { tool_call_id: id },
  });
}

/** A long-running `agentkeep mcp` for `tree`, its stderr (AGENTKEEP_DEBUG notes) collected. */
async function mcpServer(
  tree: string,
  state: string,
  env: Record<string, string>,
): Promise<{ create: (reason: string) => Promise<string>; notes: () => string[]; close: () => Promise<void> }> {
  let err = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SIDECAR, '--state-dir', state, 'mcp', '--target', `dir:${tree}`],
    env: { ...getDefaultEnvironment(), AGENTKEEP_DEBUG: '1', ...env },
    stderr: 'pipe',
  });
  transport.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: 'agentkeep-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    create: async (reason) => {
      const r = (await client.callTool({ name: 'restore_point_create', arguments: { reason } })) as {
        content: Array<{ text: string }>;
        isError?: boolean;
      };
      if (r.isError) throw new Error(`restore_point_create failed: ${r.content[0]?.text}`);
      return r.content[0].text;
    },
    notes: () => [...err.matchAll(/^agentkeep dir .*?: ((?:journal|full walk): .*)$/gm)].map((m) => m[1]),
    close: () => client.close(),
  };
}

type RowName =
  | 'node -e 0 (a Node start: the floor of a shell hook)'
  | 'shell hook (out/hook.js, one-shot, full walk)'
  | 'shell hook, handed off to a running agentkeep mcp'
  | 'MCP, journal on'
  | 'MCP, journal off'
  | 'shadow git';
const NODE_ROW = 'node -e 0 (a Node start: the floor of a shell hook)' as const;
const HOOK_ROW = 'shell hook (out/hook.js, one-shot, full walk)' as const;
const HANDOFF_ROW = 'shell hook, handed off to a running agentkeep mcp' as const;

async function main(): Promise<void> {
  await buildAgentkeep(ROOT);
  fs.rmSync(BASE, { recursive: true, force: true });
  const master = path.join(BASE, 'master');
  generate(master, N);
  const copies: Record<'hook' | 'handoff' | 'on' | 'off' | 'git', string> = {
    hook: '',
    handoff: '',
    on: '',
    off: '',
    git: '',
  };
  for (const k of Object.keys(copies) as Array<keyof typeof copies>) {
    copies[k] = path.join(BASE, k, 'tree');
    fs.mkdirSync(path.dirname(copies[k]), { recursive: true });
    execFileSync('cp', ['-a', master, copies[k]]);
  }
  fs.rmSync(master, { recursive: true, force: true });
  const stateOf = (k: keyof typeof copies): string => path.join(BASE, k, 'state');
  const runHook = (k: 'hook' | 'handoff', id: string): void => {
    const argv = [HOOK, 'hook', 'run', 'hermes', '--target', `dir:${copies[k]}`, '--state-dir', stateOf(k)];
    const r = spawnSync(process.execPath, argv, {
      input: payload('pip install requests', id),
      encoding: 'utf8',
      env: { ...process.env, AGENTKEEP_DEBUG: '1' },
    });
    if (r.status !== 0 || !/restore point ak_\w+ before terminal/.test(r.stderr))
      throw new Error(`the hook took no restore point (exit ${r.status}): ${r.stderr}`);
    const handed = /hand-off: answered by the running sidecar/.test(r.stderr);
    if (handed !== (k === 'handoff')) throw new Error(`hand-off ${handed ? 'used' : 'not used'} by ${k}: ${r.stderr}`);
  };
  const gitDir = path.join(BASE, 'git', 'git-dir');
  const git = (...a: string[]): void => {
    execFileSync('git', ['--git-dir', gitDir, '--work-tree', copies.git, '-c', 'gc.auto=0', ...a], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  };
  execFileSync('git', ['init', '-q', '--bare', gitDir]);
  const gitCommit = (): void => {
    git('add', '-A');
    git('-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'rp');
  };
  const on = await mcpServer(copies.on, stateOf('on'), {});
  const handoff = await mcpServer(copies.handoff, stateOf('handoff'), {});
  for (let i = 0; i < 100 && !fs.existsSync(path.join(stateOf('handoff'), 'hooks', 'handoff')); i++)
    await new Promise((r) => setTimeout(r, 50));
  const off = await mcpServer(copies.off, stateOf('off'), { AGENTKEEP_DIR_JOURNAL: '0' });

  // initial creates (no parent; the journal-on server's first create also starts its watch worker)
  const nodeStart = (): void => void spawnSync(process.execPath, ['-e', '0']);
  const initial: Record<RowName, number> = {
    [NODE_ROW]: (await time(nodeStart))[0],
    [HOOK_ROW]: (await time(() => runHook('hook', 'call_init')))[0],
    [HANDOFF_ROW]: (await time(() => runHook('handoff', 'call_init')))[0],
    'MCP, journal on': (await time(() => on.create('initial')))[0],
    'MCP, journal off': (await time(() => off.create('initial')))[0],
    'shadow git': (await time(gitCommit))[0],
  };
  const rows: Record<RowName, number[]> = {
    [NODE_ROW]: [],
    [HOOK_ROW]: [],
    [HANDOFF_ROW]: [],
    'MCP, journal on': [],
    'MCP, journal off': [],
    'shadow git': [],
  };
  await new Promise((r) => setTimeout(r, 100)); // file times outside the racy window
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of Object.keys(copies) as Array<keyof typeof copies>) mutate(copies[k], N, r);
    rows[NODE_ROW].push((await time(nodeStart))[0]);
    rows[HOOK_ROW].push((await time(() => runHook('hook', `call_${r}`)))[0]);
    rows[HANDOFF_ROW].push((await time(() => runHook('handoff', `call_${r}`)))[0]);
    rows['MCP, journal on'].push((await time(() => on.create(`round ${r}`)))[0]);
    rows['MCP, journal off'].push((await time(() => off.create(`round ${r}`)))[0]);
    rows['shadow git'].push((await time(gitCommit))[0]);
  }
  const notesOn = on.notes();
  const notesHandoff = handoff.notes();
  const notesOff = off.notes();
  await on.close();
  await handoff.close();
  await off.close();
  process.stdout.write(`journal-on server scans: ${notesOn.join(' | ')}\n`);
  for (const notes of [notesOn, notesHandoff])
    if (notes.length !== ROUNDS + 1 || notes.slice(1).some((n) => !n.startsWith('journal: ')))
      throw new Error(`a journal-on create after the first walked the whole tree: ${notes.join(' | ')}`);
  if (notesOff.some((n) => !n.startsWith('full walk: no change journal')))
    throw new Error(`the journal-off server used a journal: ${notesOff.join(' | ')}`);

  const git0 = median(rows['shadow git']);
  const hook0 = median(rows[HOOK_ROW]);
  const fmt = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
  const lines = [
    `| path (${N.toLocaleString('en')} files, create after 30 changes, ${ROUNDS} rounds interleaved) | initial create | median | min-max | × shadow git | × shell hook |`,
    '|---|---:|---:|---:|---:|---:|',
    ...(Object.keys(rows) as RowName[]).map((k) => {
      const xs = rows[k];
      const m = median(xs);
      return `| ${k} | ${k === NODE_ROW ? '–' : fmt(initial[k])} | ${fmt(m)} | ${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))} | ${(m / git0).toFixed(2)}× | ${(m / hook0).toFixed(2)}× |`;
    }),
  ];
  const verdict = `Load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.cpus().length} CPUs at the end; Node ${process.version}; ${new Date().toISOString()}.`;
  const perRound = (Object.keys(rows) as RowName[])
    .map((k) => `${k}: ${rows[k].map((x) => x.toFixed(0)).join(', ')}`)
    .join('; ');
  const out = `${lines.join('\n')}\n\n${verdict}\nPer round (ms): ${perRound}\n`;
  process.stdout.write(out);
  if (process.env.BENCH_MD) fs.appendFileSync(process.env.BENCH_MD, `\n${out}`);
  fs.rmSync(BASE, { recursive: true, force: true });
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
