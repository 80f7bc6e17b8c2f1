/**
 * `npm run eval:memory`: precision and recall of the memory lint (sidecar/memory/lint) per finding
 * kind and overall, on the labelled cases in test/cases/memory-lint, for the dev split (thresholds
 * were tuned on it) and the held-out split (never used for tuning).
 * Usage: tsx scripts/eval-memory.ts [--dir DIR] [--errors dev|heldout|all|none] [--json]
 * Exit code 0; 1 when the cases cannot be read.
 */
import * as path from 'node:path';
import { evaluate, formatReport, loadCases } from '../sidecar/memory/lint/eval';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const dir = opt('--dir') ?? path.join(__dirname, '..', 'test', 'cases', 'memory-lint');
  const errors = opt('--errors') ?? 'all';
  const report = evaluate(await loadCases(dir));
  if (args.includes('--json')) {
    process.stdout.write(`${JSON.stringify(report.scores, null, 2)}\n`);
    return;
  }
  if (errors !== 'all') report.cases = report.cases.map((c) => (errors !== 'none' && c.split === errors ? c : { ...c, fp: [], fn: [] }));
  process.stdout.write(`${formatReport(report)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`eval:memory: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
