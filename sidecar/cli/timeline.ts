/**
 * CLI text of the memory timeline (memory history) and of reviewed edit sets (memory forget,
 * memory lint --fix): plain lines, one write per line, then its before/after indented.
 */
import type { MemoryWrite, ResultOf } from '../protocol';

function one(s: string, max = 100): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** One line of a write: time, source, action, entry id, file, then why / session. */
export function memoryWriteLine(w: MemoryWrite): string {
  const file = w.file ? w.file.split('/').pop() : '';
  const who = w.source === 'agent' || w.source === 'hook' ? (w.session ? ` session ${w.session}` : '') : '';
  const call = w.toolCallId ? ` call ${w.toolCallId}` : '';
  const rp = w.restorePoint ? ` rp ${w.restorePoint}` : '';
  const extra = [w.refused ? 'refused by the tool' : '', w.why ?? '', w.group ? `group ${w.group}` : '']
    .filter(Boolean)
    .join('; ');
  return `${w.time ?? '(no time)'.padEnd(24)}  ${w.id.padEnd(14)} ${w.source.padEnd(13)} ${w.action.padEnd(7)} ${(w.entry ?? '-').padEnd(12)} ${file}${who}${call}${rp}${extra ? `  (${extra})` : ''}`;
}

/** memory history as text: a header, a line per write with its before/after. */
export function memoryHistoryText(r: ResultOf<'memoryHistory'>): string {
  const out: string[] = [];
  for (const w of r.warnings ?? []) out.push(`warning: ${w}`);
  if (!r.writes.length) out.push('No writes recorded.');
  for (const w of r.writes) {
    out.push(memoryWriteLine(w));
    if (w.before !== undefined) out.push(`    - ${one(w.before)}`);
    else if (w.oldText !== undefined)
      out.push(`    - …${one(w.oldText)}… (old_text; the whole entry before is unknown)`);
    if (w.after !== undefined) out.push(`    + ${one(w.after)}`);
  }
  if (r.writes.length)
    out.push(
      `${r.writes.length} write${r.writes.length === 1 ? '' : 's'}. Undo one: agentkeep memory undo-write --store S --write ID`,
    );
  return out.join('\n');
}

/** An edit set as text: the edits with their reasons, what was skipped, then the unified diff. */
export function editSetText(r: ResultOf<'memoryForget'>, what: string): string {
  const out: string[] = [];
  if (!r.edits.length) out.push(`Nothing to ${what}.`);
  for (const e of r.edits) out.push(`${e.action} ${e.entry} in ${e.file}: ${one(e.reason, 160)}`);
  for (const s of r.skipped ?? []) out.push(`skipped: ${one(s, 200)}`);
  if (r.diff) out.push('', r.diff.replace(/\n$/, ''));
  if (r.applied)
    out.push(
      `Applied as group ${r.group}. Undo it in one step: agentkeep memory undo-write --store S --write ${r.group}`,
    );
  return out.join('\n');
}
