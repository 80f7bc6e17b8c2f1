/**
 * `npm run eval:agent-commands`: precision and recall of the risk engine on real agent terminal commands
 * (test/cases/agent-commands/commands.jsonl), overall and per class, for the dev split and the held-out split
 * (whole sources held out, never used for tuning), then the labelled file corpus (test/fixtures/risk-corpus, a
 * copy of shared/cases/risk-corpus) reported separately.
 * Usage: tsx scripts/eval-agent-commands.ts [--cases FILE] [--corpus DIR] [--show-held-out] [--json]
 *   RISK_ENGINE=DIR  measure another copy of sidecar/risk (e.g. main's, for a before/after table); an engine
 *                    without classifyCommand is measured through scanText of a one-line shell script.
 * Exit code 0; 1 when the cases cannot be read.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { evaluateCommands, formatCommandEval, parseCommandCases } from '../sidecar/risk/eval-commands';

interface Engine {
  classifyCommand?: (text: string) => { class: string } | null;
  scanText: (file: string, text: string) => Array<{ class: string }>;
  evaluate: (files: Array<{ file: string; text: string }>, labels: unknown[]) => unknown;
  formatEval: (r: never) => string;
}

const PRIORITY = ['deps', 'toolchain', 'config', 'system', 'destructive', 'remote-code'];

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const root = path.join(__dirname, '..');
  const casesFile = opt('--cases') ?? path.join(root, 'test', 'cases', 'agent-commands', 'commands.jsonl');
  const corpus = opt('--corpus') ?? path.join(root, 'test', 'fixtures', 'risk-corpus');
  const engineDir = process.env.RISK_ENGINE
    ? path.resolve(process.env.RISK_ENGINE)
    : path.join(root, 'sidecar', 'risk');
  const engine = (await import(path.join(engineDir, 'index.ts'))) as Engine;
  const classify = (cmd: string): string | null => {
    if (engine.classifyCommand) return engine.classifyCommand(cmd)?.class ?? null;
    const found = engine.scanText('command.sh', `${cmd}\n`).map((f) => f.class);
    return found.sort((a, b) => PRIORITY.indexOf(b) - PRIORITY.indexOf(a))[0] ?? null;
  };
  let text: string;
  try {
    text = await fs.readFile(casesFile, 'utf8');
  } catch (e) {
    throw new Error(
      `cannot read ${casesFile}: ${(e as Error).message}. Pass --cases FILE (test/cases/agent-commands/commands.jsonl).`,
    );
  }
  const cases = parseCommandCases(text);
  const r = evaluateCommands(cases, classify);
  // the file corpus, reported on its own (same format as `npm run eval:risk`)
  const names = (await fs.readFile(path.join(corpus, 'FILES.txt'), 'utf8'))
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const files = await Promise.all(
    names.map(async (file) => ({ file, text: await fs.readFile(path.join(corpus, file), 'utf8') })),
  );
  const labels = JSON.parse(await fs.readFile(path.join(corpus, 'labels.json'), 'utf8')) as unknown[];
  const fileEval = engine.evaluate(files, labels);
  if (args.includes('--json')) {
    const strip = (s: typeof r.dev): unknown => ({
      ...s,
      misses: s.misses.length,
      falseAlarms: s.falseAlarms.length,
      wrongClass: s.wrongClass.length,
    });
    process.stdout.write(
      `${JSON.stringify({ dev: strip(r.dev), heldOut: strip(r.heldOut), fileCorpus: fileEval }, null, 2)}\n`,
    );
    return;
  }
  const where = process.env.RISK_ENGINE ? ` (engine: ${engineDir})` : '';
  process.stdout.write(
    `Agent commands: ${cases.length} (${path.relative(root, casesFile)})${where}\n${formatCommandEval(r, args.includes('--show-held-out'))}\n\n`,
  );
  process.stdout.write(
    `File corpus (${path.relative(root, corpus) || corpus}):\n${engine.formatEval(fileEval as never)}\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`eval:agent-commands: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
