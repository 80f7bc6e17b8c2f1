/**
 * Benchmark: the risk scanner (sidecar/risk) next to ripgrep running the same command-name patterns.
 *   1. scan throughput on a generated shell/Markdown mix (default 5 MB in 50 files, built from the
 *      corpus shell scripts and Markdown notes with varied package names, diluted with ordinary lines)
 *      - AgentKeep: read + scanText of every file, in process, one thread
 *      - ripgrep:   `rg -c -e PATTERN DIR` (all threads) and `rg -j1` (one thread), as child processes
 *   2. provideCodeLenses latency on a 5,000-line shell file and a 5,000-line Markdown file
 *      - in process, a new document version on every call (scan + lenses, no cache): median, p95
 *      - over a real LSP stdio connection to the built sidecar: didChange (full text) + codeLens
 *        round trip, and the cached round trip (same version)
 *   3. classification of one terminal command (what the agent hook pays per call): each command of
 *      test/cases/agent-commands (408 real agent commands) and each labelled command of the corpus, classified
 *      alone with the verdict memo off; per command the median over BENCH_RISK_CLASSIFY_ROUNDS rounds, then
 *      the median, p99 and max over commands
 * Run: npm run bench:risk   (= npx tsx bench/risk.bench.ts)
 *      BENCH_RISK_ONLY=classify runs section 3 alone; RISK_ENGINE=DIR measures section 3 on another copy of
 *      sidecar/risk (one without classifyCommand is measured through scanText of a one-line shell script)
 * Env: BENCH_RISK_MB (5), BENCH_RISK_ROUNDS (7), BENCH_RISK_LENS_ROUNDS (100), BENCH_RISK_CLASSIFY_ROUNDS (200), BENCH_DIR
 *      (os.tmpdir()/agentkeep-risk-bench), BENCH_KEEP=1 keeps the data, BENCH_MD=path appends the
 *      markdown table there too.
 * ripgrep missing: the rg rows say so (install with `apt-get install -y ripgrep`).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type CodeLens,
} from 'vscode-languageserver/node';
import { scanText } from '../sidecar/risk';
import { rng } from './lib';
import { setRiskMemo } from '../sidecar/risk/scan';
import { codeLensesFor } from '../sidecar/server/session';
import { buildSidecar, startSidecar } from '../test/unit/helpers/sidecar';

const MB = Number(process.env.BENCH_RISK_MB ?? 5);
const ROUNDS = Number(process.env.BENCH_RISK_ROUNDS ?? 7);
const LENS_ROUNDS = Number(process.env.BENCH_RISK_LENS_ROUNDS ?? 100);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-risk-bench');
const CORPUS = path.join(__dirname, '..', 'test', 'fixtures', 'risk-corpus');

/**
 * The command-name patterns a plain regex scan would use: a package/system/remote tool name followed by
 * a verb. This is the anchor the issue asks for (what a grep-based detector would do), not our rules.
 */
const RG_PATTERN =
  '(^|[\\s;&|(`!%$"\'/])(sudo\\s+)?(apt-get|apt|dpkg|snap|dnf|yum|pacman|zypper|apk|brew|pip3?|pipx|uv|uvx|poetry|conda|mamba|npm|pnpm|yarn|bun|bunx|npx|cargo|go|gem|rustup|corepack|docker|podman|systemctl|crontab|hermes|winget|scoop|choco|playwright|make|wsl|Install-Module)\\s+(-\\S+\\s+)*(install|i|add|ci|sync|update|upgrade|remove|uninstall|rm|dlx|run|pull|compose|enable|disable|link|prepare|bundle|skills|gateway|get|tool|inject|image|env|-[gy]|-S\\w*|-U|--install|--yes|-Name|only-allow|\\S+@)|(curl|wget|irm|iwr|Invoke-RestMethod)\\b.*\\|\\s*(sudo\\s+)?((ba|z)?sh|iex|Invoke-Expression|crontab)\\b|\\$\\((curl|wget)\\b|\\|\\s*crontab\\b';

const FILLER_SH = [
  'echo "step $i done"',
  'cd "$ROOT" && ls -la',
  'export PATH="$HOME/.local/bin:$PATH"',
  'if [ -f .env ]; then . ./.env; fi',
  'log "building $TARGET"',
  'mkdir -p "$OUT" && cp -r dist/* "$OUT"',
  '# check the version before continuing',
  'git status --short',
];
const FILLER_MD = [
  'The agent keeps its state in the home folder; see the configuration page for details.',
  'Run the tests before opening a pull request.',
  '',
  '## Notes',
  '- keep the API key in `.env`, not in the config',
  'Use `npm run build` to produce the bundle.',
];

/** A shell or Markdown file of about `bytes` bytes: corpus files with renamed packages, plus filler lines. */
function makeFile(kind: 'sh' | 'md', bytes: number, r: () => number, sources: string[]): string {
  const out: string[] = [];
  let size = 0;
  while (size < bytes) {
    let chunk: string;
    if (r() < 0.25) {
      chunk = sources[Math.floor(r() * sources.length)].replace(
        /\b(example-[a-z-]+|left-pad|requests|jq|ffmpeg)\b/g,
        (m) => `${m}${Math.floor(r() * 1000)}`,
      );
    } else {
      const filler = kind === 'sh' ? FILLER_SH : FILLER_MD;
      const lines = Array.from({ length: 20 }, () => filler[Math.floor(r() * filler.length)]);
      chunk =
        kind === 'md'
          ? `${lines.join('\n')}\n\n\`\`\`bash\n${FILLER_SH.slice(0, 3).join('\n')}\n\`\`\`\n`
          : lines.join('\n');
    }
    out.push(chunk);
    size += chunk.length + 1;
  }
  return out.join('\n') + '\n';
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
function p95(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)];
}
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

function rgVersion(): string | undefined {
  const r = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n')[0] : undefined;
}

/** Section 3: per-command classification time (ms), median per command over rounds; median / p99 / max over commands. */
async function classifyBench(): Promise<string> {
  const rounds = Number(process.env.BENCH_RISK_CLASSIFY_ROUNDS ?? 200);
  const engineDir = process.env.RISK_ENGINE
    ? path.resolve(process.env.RISK_ENGINE)
    : path.join(__dirname, '..', 'sidecar', 'risk');
  const engine = (await import(path.join(engineDir, 'index.ts'))) as {
    classifyCommand?: (t: string) => unknown;
    scanText: (f: string, t: string) => unknown[];
  };
  const memo = (await import(path.join(engineDir, 'scan.ts'))) as { setRiskMemo: (on: boolean) => void };
  memo.setRiskMemo(false);
  const classify = engine.classifyCommand
    ? (t: string): unknown => engine.classifyCommand!(t)
    : (t: string): unknown => engine.scanText('command.sh', `${t}\n`);
  const agent = fs
    .readFileSync(path.join(__dirname, '..', 'test', 'cases', 'agent-commands', 'commands.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => (JSON.parse(l) as { command: string }).command);
  const corpus = (
    JSON.parse(fs.readFileSync(path.join(CORPUS, 'labels.json'), 'utf8')) as Array<{ command: string }>
  ).map((l) => l.command);
  const rows: string[] = [];
  for (const [name, cmds] of [
    ['agent commands (test/cases/agent-commands)', agent],
    ['corpus labelled commands', corpus],
  ] as const) {
    for (let k = 0; k < 3; k++) for (const c of cmds) classify(c); // JIT warm-up
    // per command, the median of its rounds (a shared machine's pauses land on single rounds, not on a command)
    const samples: number[][] = cmds.map(() => []);
    for (let k = 0; k < rounds; k++) {
      cmds.forEach((c, i) => {
        const t0 = process.hrtime.bigint();
        classify(c);
        samples[i].push(Number(process.hrtime.bigint() - t0) / 1e6);
      });
    }
    const per = samples.map(median);
    const s = [...per].sort((a, b) => a - b);
    const q = (p: number): number => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
    const slowest = cmds[per.indexOf(s[s.length - 1])];
    rows.push(
      `| ${name}: ${cmds.length} commands | ${(median(per) * 1000).toFixed(1)} µs | ${(q(0.99) * 1000).toFixed(1)} µs | ${(s[s.length - 1] * 1000).toFixed(1)} µs (\`${slowest.slice(0, 40).replace(/[|`]/g, ' ')}${slowest.length > 40 ? '…' : ''}\`) |`,
    );
  }
  memo.setRiskMemo(true);
  const engineName = process.env.RISK_ENGINE ? `engine ${engineDir}` : 'this tree';
  return [
    `| Classify one command (${engineName}, memo off; per command the median of ${rounds} rounds) | median | p99 | max |`,
    '|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.env.BENCH_RISK_ONLY === 'classify') {
    const md = await classifyBench();
    console.log(md);
    if (process.env.BENCH_MD) fs.appendFileSync(process.env.BENCH_MD, md + '\n');
    return;
  }
  fs.rmSync(BASE, { recursive: true, force: true });
  const dir = path.join(BASE, 'mix');
  fs.mkdirSync(dir, { recursive: true });
  const shSources = ['shell/devbox/setup.sh', 'shell/macos/bootstrap-mac.sh'].map((f) =>
    fs.readFileSync(path.join(CORPUS, f), 'utf8'),
  );
  const mdSources = [
    'markdown/devbox-notes/SETUP.md',
    'markdown/windows/INSTALL-windows.md',
    'skill/pdf-tools/SKILL.md',
    'skill/web-scraper/SKILL.md',
    'agent-zero-docs/maintenance/docs/updating.md',
  ].map((f) => fs.readFileSync(path.join(CORPUS, f), 'utf8'));
  const r = rng(42);
  const nFiles = 50;
  const per = Math.round((MB * 1024 * 1024) / nFiles);
  const files: string[] = [];
  for (let i = 0; i < nFiles; i++) {
    const kind = i % 2 ? 'md' : 'sh';
    const f = path.join(dir, `f${String(i).padStart(3, '0')}.${kind}`);
    fs.writeFileSync(f, makeFile(kind, per, r, kind === 'sh' ? shSources : mdSources));
    files.push(f);
  }
  const totalBytes = files.reduce((s, f) => s + fs.statSync(f).size, 0);
  const totalLines = files.reduce((s, f) => s + fs.readFileSync(f, 'utf8').split('\n').length, 0);
  const mb = totalBytes / (1024 * 1024);

  // 1. throughput
  const scanTimes: number[] = [];
  let findings = 0;
  setRiskMemo(false); // raw scanner speed: no reuse of verdicts between identical lines or runs
  for (let k = 0; k < ROUNDS; k++) {
    const t0 = process.hrtime.bigint();
    findings = 0;
    for (const f of files) findings += scanText(f, fs.readFileSync(f, 'utf8')).length;
    scanTimes.push(ms(t0));
  }
  const rg = rgVersion();
  const rgRun = (threads?: number): { times: number[]; lines: number } => {
    const times: number[] = [];
    let lines = 0;
    for (let k = 0; k < ROUNDS; k++) {
      const args = [...(threads ? ['-j', String(threads)] : []), '-c', '--no-filename', '-e', RG_PATTERN, dir];
      const t0 = process.hrtime.bigint();
      const out = execFileSync('rg', args, { encoding: 'utf8', maxBuffer: 1 << 26 });
      times.push(ms(t0));
      lines = out
        .split('\n')
        .filter(Boolean)
        .reduce((s, n) => s + Number(n), 0);
    }
    return { times, lines };
  };
  const rgAll = rg ? rgRun() : undefined;
  const rg1 = rg ? rgRun(1) : undefined;

  setRiskMemo(true);

  // 1b. the same regex on the labelled corpus: which lines it flags vs the labels (lines only, no class)
  let rgCorpus: { precision: number; recall: number; flagged: number } | undefined;
  let akCorpus: { precision: number; recall: number; flagged: number } | undefined;
  {
    const labels = JSON.parse(fs.readFileSync(path.join(CORPUS, 'labels.json'), 'utf8')) as Array<{
      file: string;
      line: number;
      end_line: number;
    }>;
    const names = fs.readFileSync(path.join(CORPUS, 'FILES.txt'), 'utf8').split('\n').filter(Boolean);
    const labelled = new Set(labels.map((l) => `${l.file}:${l.line}`));
    const covered = new Set(
      labels.flatMap((l) => Array.from({ length: l.end_line - l.line + 1 }, (_, k) => `${l.file}:${l.line + k}`)),
    );
    const pr = (flagged: Set<string>): { precision: number; recall: number; flagged: number } => {
      // a flagged line inside a labelled command counts for that command (rg sees physical lines)
      const hitLabels = new Set<string>();
      let good = 0;
      for (const key of flagged) {
        if (!covered.has(key)) continue;
        good++;
        const [file, line] = [key.slice(0, key.lastIndexOf(':')), Number(key.slice(key.lastIndexOf(':') + 1))];
        const l = labels.find((x) => x.file === file && x.line <= line && line <= x.end_line);
        if (l) hitLabels.add(`${l.file}:${l.line}`);
      }
      return {
        precision: flagged.size ? good / flagged.size : 1,
        recall: hitLabels.size / labelled.size,
        flagged: flagged.size,
      };
    };
    if (rg) {
      const out = spawnSync('rg', ['-n', '--no-heading', '--with-filename', '-e', RG_PATTERN, ...names], {
        cwd: CORPUS,
        encoding: 'utf8',
      }).stdout;
      rgCorpus = pr(
        new Set(
          out
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(':').slice(0, 2).join(':')),
        ),
      );
    }
    akCorpus = pr(
      new Set(
        names.flatMap((f) => scanText(f, fs.readFileSync(path.join(CORPUS, f), 'utf8')).map((x) => `${f}:${x.line}`)),
      ),
    );
  }

  // 2. CodeLens latency on 5,000-line files: typical (a file of the mix: corpus chunks + ordinary
  // lines) and dense (corpus files only: every fourth line or so is risky)
  const fiveK = (kind: 'sh' | 'md', dense: boolean): string => {
    const src = dense
      ? kind === 'sh'
        ? shSources
        : mdSources
      : [fs.readFileSync(files[kind === 'sh' ? 0 : 1], 'utf8')];
    const lines: string[] = [];
    let i = 0;
    while (lines.length < 5000) lines.push(...src[i++ % src.length].split('\n'));
    // keep fences balanced in Markdown: cut at a line outside a fence
    let cut = 5000;
    if (kind === 'md') {
      let open = false;
      for (let k = 0; k < 5000; k++) if (/^\s*(```|~~~)/.test(lines[k])) open = !open;
      if (open) cut = 4999;
    }
    return lines.slice(0, cut).join('\n') + '\n';
  };
  const lensRows: Array<{
    name: string;
    lenses: number;
    first: number[];
    cold: number[];
    lspChange: number[];
    lspCached: number[];
  }> = [];
  await buildSidecar();
  const child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(BASE, 'state') });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  conn.listen();
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(BASE).href, capabilities: {} });
  await conn.sendNotification('initialized', {});
  try {
    for (const [kind, lang, dense] of [
      ['sh', 'shellscript', false],
      ['md', 'markdown', false],
      ['sh', 'shellscript', true],
      ['md', 'markdown', true],
    ] as const) {
      const text = fiveK(kind, dense);
      const file = path.join(BASE, `five-k${dense ? '-dense' : ''}.${kind}`);
      fs.writeFileSync(file, text);
      const uri = pathToFileURL(file).href;
      const cold: number[] = [];
      const first: number[] = [];
      let lenses = 0;
      for (let k = 0; k < 5; k++) codeLensesFor(TextDocument.create(uri, lang, 1, text)); // JIT warm-up
      for (let k = 0; k < Math.min(20, LENS_ROUNDS); k++) {
        setRiskMemo(true); // empty memo: the first request after opening the file
        const doc = TextDocument.create(uri, lang, 1, text);
        const t0 = process.hrtime.bigint();
        codeLensesFor(doc);
        first.push(ms(t0));
      }
      for (let k = 0; k < LENS_ROUNDS; k++) {
        const doc = TextDocument.create(uri, lang, k + 1, text);
        const t0 = process.hrtime.bigint();
        lenses = codeLensesFor(doc).length;
        cold.push(ms(t0));
      }
      await conn.sendNotification('textDocument/didOpen', {
        textDocument: { uri, languageId: lang, version: 1, text },
      });
      const lspChange: number[] = [];
      const lspCached: number[] = [];
      for (let k = 0; k < LENS_ROUNDS; k++) {
        const t0 = process.hrtime.bigint();
        await conn.sendNotification('textDocument/didChange', {
          textDocument: { uri, version: k + 2 },
          contentChanges: [{ text: k % 2 ? text : text + '\n' }],
        });
        const got = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
        lspChange.push(ms(t0));
        if (got.length !== lenses) throw new Error(`LSP returned ${got.length} lenses, in process ${lenses}`);
        const t1 = process.hrtime.bigint();
        await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } });
        lspCached.push(ms(t1));
      }
      lensRows.push({
        name: `${kind === 'sh' ? 'shell' : 'Markdown'}, ${dense ? 'dense' : 'typical'} (${text.split('\n').length - 1} lines)`,
        lenses,
        first,
        cold,
        lspChange,
        lspCached,
      });
    }
  } finally {
    conn.dispose();
    child.kill();
  }

  const f2 = (x: number): string => x.toFixed(2);
  const f1 = (x: number): string => x.toFixed(1);
  const node = process.version;
  const cpu = os.cpus()[0]?.model ?? 'cpu';
  const table: string[] = [];
  table.push(
    `Data: ${files.length} files (${files.length / 2} .sh, ${files.length / 2} .md), ${f2(mb)} MB, ${totalLines} lines, generated from the corpus shell/Markdown files with filler. ${os.cpus().length} × ${cpu}, Node ${node}${rg ? `, ${rg}` : ''}. Median of ${ROUNDS} runs.`,
  );
  table.push('');
  table.push('| Scan of the 5 MB mix | time (median) | throughput | hits |');
  table.push('|---|---:|---:|---:|');
  table.push(
    `| AgentKeep \`scanText\` (read + scan, 1 thread, in process) | ${f1(median(scanTimes))} ms | ${f1(mb / (median(scanTimes) / 1000))} MB/s | ${findings} risky commands |`,
  );
  if (rgAll && rg1) {
    table.push(
      `| ripgrep, same command-name patterns, all threads (\`rg -c\`) | ${f1(median(rgAll.times))} ms | ${f1(mb / (median(rgAll.times) / 1000))} MB/s | ${rgAll.lines} matching lines |`,
    );
    table.push(
      `| ripgrep, one thread (\`rg -j1 -c\`) | ${f1(median(rg1.times))} ms | ${f1(mb / (median(rg1.times) / 1000))} MB/s | ${rg1.lines} matching lines |`,
    );
  } else {
    table.push('| ripgrep | not run: `rg` is not installed (apt-get install -y ripgrep) | | |');
  }
  table.push('');
  table.push('| On the labelled corpus (21 files, lines only, class ignored) | flagged lines | precision | recall |');
  table.push('|---|---:|---:|---:|');
  if (akCorpus)
    table.push(
      `| AgentKeep scanner | ${akCorpus.flagged} | ${akCorpus.precision.toFixed(3)} | ${akCorpus.recall.toFixed(3)} |`,
    );
  table.push(
    rgCorpus
      ? `| ripgrep, same command-name patterns | ${rgCorpus.flagged} | ${rgCorpus.precision.toFixed(3)} | ${rgCorpus.recall.toFixed(3)} |`
      : '| ripgrep | not run: `rg` is not installed | | |',
  );
  table.push('');
  table.push(
    `| provideCodeLenses (5,000-line file) | lenses | in process, first request after open: median / p95 | in process, new version each call (typing): median / p95 | LSP stdio, didChange + codeLens round trip: median / p95 | LSP, same version (cached): median / p95 |`,
  );
  table.push('|---|---:|---:|---:|---:|---:|');
  for (const row of lensRows) {
    const mp = (xs: number[]): string => `${f2(median(xs))} / ${f2(p95(xs))} ms`;
    table.push(
      `| ${row.name} | ${row.lenses} | ${mp(row.first)} | ${mp(row.cold)} | ${mp(row.lspChange)} | ${mp(row.lspCached)} |`,
    );
  }
  table.push('');
  table.push(await classifyBench());
  const md = table.join('\n');
  console.log(md);
  if (!rg)
    console.log(
      '\nripgrep (rg) is not installed: the ripgrep comparison was skipped. Install it with: apt-get install -y ripgrep',
    );
  if (process.env.BENCH_MD) fs.appendFileSync(process.env.BENCH_MD, md + '\n');
  if (!process.env.BENCH_KEEP) fs.rmSync(BASE, { recursive: true, force: true });
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
