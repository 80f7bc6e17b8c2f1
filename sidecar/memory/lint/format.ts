/**
 * Human-readable text of lint findings, for `agentkeep memory lint` without --json: one block per
 * finding (severity, kind, message; evidence and suggestion indented), then a count per severity.
 */
import type { LintFinding } from '../../protocol';

/** Text of the findings; "No findings." when there are none. */
export function formatFindings(findings: LintFinding[]): string {
  if (!findings.length) return 'No findings.';
  const lines: string[] = [];
  for (const f of findings) {
    lines.push(`${f.severity.toUpperCase()} ${f.kind}: ${f.message}`);
    for (const e of f.evidence ?? []) lines.push(`    ${e}`);
    if (f.suggestion) lines.push(`    → ${f.suggestion}`);
    if (f.entries.length) lines.push(`    entries: ${f.entries.join(', ')}`);
  }
  const count = (s: LintFinding['severity']): number => findings.filter((f) => f.severity === s).length;
  lines.push(
    '',
    `${findings.length} finding${findings.length === 1 ? '' : 's'}: ${count('error')} error, ${count('warning')} warning, ${count('info')} info.`,
  );
  return lines.join('\n');
}
