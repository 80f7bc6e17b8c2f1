/**
 * `npm run eval:memory`: precision and recall of the memory lint (sidecar/memory/lint).
 * 1. The regression set (test/cases/memory-lint, 133 cases written with the rules): per finding kind,
 *    dev and held-out by the id hash.
 * 2. The real-wording set (test/cases/memory-real, issue 12): per family (duplicate, contradiction)
 *    and per sub-kind, for the dev split and the held-out split (by source) separately.
 * Usage: tsx scripts/eval-memory.ts [--errors dev|heldout|all|none] [--json] [--only real|regression] [--no-semantic]
 * Entries are compared by meaning too (the bundled sentence encoder, as `memory lint` does), unless
 * --no-semantic (the lexical rules alone).
 * Failures are listed for the dev split by default; held-out failures only with --errors heldout|all
 * (tune on dev, look at held-out at the end). Exit code 0; 1 when the cases cannot be read.
 */
import * as path from 'node:path';
import {
  caseVectors,
  evaluate,
  evaluateReal,
  formatRealReport,
  formatReport,
  loadCases,
  type CaseVectors,
} from '../sidecar/memory/lint/eval';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const root = path.join(__dirname, '..', 'test', 'cases');
  const errors = opt('--errors') ?? 'dev';
  const only = opt('--only');
  const splits = (errors === 'all' ? ['dev', 'heldout'] : errors === 'none' ? [] : [errors]) as Array<
    'dev' | 'heldout'
  >;
  const out: string[] = [];
  const json: Record<string, unknown> = {};
  // Sentence vectors from the bundled encoder (as `memory lint` computes them), unless --no-semantic
  const regression = only !== 'real' ? await loadCases(path.join(root, 'memory-lint')) : [];
  const realCases = only !== 'regression' ? await loadCases(path.join(root, 'memory-real')) : [];
  let vectors: CaseVectors | undefined;
  if (!args.includes('--no-semantic')) {
    const v = await caseVectors([...regression, ...realCases]);
    if ('missing' in v) out.push(`(not compared by meaning: ${v.missing})`, '');
    else vectors = v;
  } else out.push('(not compared by meaning: --no-semantic)', '');
  if (only !== 'real') {
    const report = evaluate(regression, undefined, vectors);
    json.regression = report.scores;
    report.cases = report.cases.map((c) => (splits.includes(c.split) ? c : { ...c, fp: [], fn: [] }));
    out.push('== regression set (test/cases/memory-lint) ==', formatReport(report), '');
  }
  if (only !== 'regression') {
    const real = evaluateReal(realCases, undefined, vectors);
    json.real = { scores: real.scores, lowOverlap: real.lowOverlap, negatives: real.negatives };
    out.push('== real-wording set (test/cases/memory-real) ==', formatRealReport(real, splits));
  }
  process.stdout.write(args.includes('--json') ? `${JSON.stringify(json, null, 2)}\n` : `${out.join('\n')}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`eval:memory: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
