/**
 * What `agentkeep restore-point create` prints once the core returned its restore point: the notices
 * on stderr, then the restore point as JSON (--json) or the human lines (created/reused, skipped
 * entries, notes, retention). Shared by the full CLI (./index.ts) and the launcher's slim create
 * (../createMain.ts), so both print the same bytes.
 */
import { nextAction, type ResultOf } from '../protocol';
import { formatAge } from '../protocol/format';
import { actionsText, describeProblem, type RenderOptions } from './actions';
import { createdLine } from './format';
import type { CliIO } from './index';

/**
 * Print the result `rpnt` of a create.
 * @param label the --label given (a reused restore point keeps its own: said in a note)
 * @param render how printed commands name the state dir
 * @param snapshotNoun the target's snapshot noun ("snapshot", "btrfs snapshot"; undefined: the default), asked only for the human "created" line
 */
export async function printCreated(
  io: CliIO,
  rpnt: ResultOf<'restorePointCreate'>,
  label: string | undefined,
  asJson: boolean,
  render: () => RenderOptions,
  snapshotNoun: () => Promise<string | undefined>,
): Promise<void> {
  const notices = rpnt.notices ?? (rpnt.warnings ?? []).map((message) => ({ message }));
  for (const n of notices) io.err(`agentkeep: warning: ${describeProblem(n, render())}`);
  if (asJson) io.out(JSON.stringify(rpnt, null, 2));
  else if (rpnt.reused) {
    const taken = formatAge(rpnt.createdAt);
    io.out(`Reusing restore point ${rpnt.id} "${rpnt.label}" (taken ${taken}; nothing changed since).`);
    if (label !== undefined && label !== rpnt.label) {
      const rename = nextAction('Rename it', 'restorePointLabel', {
        target: rpnt.target,
        id: rpnt.id,
        label,
      });
      io.err(
        `agentkeep: note: the reused restore point keeps its label "${rpnt.label}". ${actionsText([rename], render())}`,
      );
    }
  } else {
    io.out(createdLine(rpnt, await snapshotNoun()));
    const n = rpnt.machine.skipped ?? 0;
    if (n)
      io.out(
        `Skipped ${n} socket/FIFO/device ${n === 1 ? 'entry' : 'entries'} (not captured; see docs/dir-backend.md).`,
      );
    for (const w of rpnt.machine.warnings ?? []) io.out(`Note: ${w}`);
    if (rpnt.pruned?.length) {
      io.out(
        `Retention deleted ${rpnt.pruned.length} older restore point(s) (restore-point prune --dry-run explains the rules):`,
      );
      for (const d of rpnt.pruned) io.out(`  ${d.id}  ${d.reason}`);
    }
  }
}
