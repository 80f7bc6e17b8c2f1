import * as assert from 'node:assert/strict';
import { describeProblem } from '../../../sidecar/cli/actions';
import { AgentKeepError } from '../../../sidecar/core/errors';
import { resolveStateDir } from '../../../sidecar/core/state';

/**
 * The fix an error names, as the CLI prints it: its next actions as `agentkeep …` command lines
 * (sidecar/cli/actions.ts), then its hint. The core keeps commands out of its hints (they are
 * NextAction data), so tests that asserted a command in the hint assert it here.
 */
export function fixText(e: AgentKeepError, stateDir = resolveStateDir()): string {
  return describeProblem({ message: '', hint: e.hint, actions: e.actions }, { stateDir }).trim();
}

/** Whether an error names the fix: a hint, or next actions. */
export function hasFix(e: AgentKeepError): boolean {
  return !!e.hint || !!e.actions?.length;
}

/**
 * Await `p` and assert it fails with an AgentKeepError of `kind` whose message + fix (hint and
 * next actions, as the CLI prints them) match `re` and that names the fix (every error does).
 */
export async function expectAgentKeepError(p: Promise<unknown>, kind: string, re?: RegExp): Promise<AgentKeepError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AgentKeepError, `expected AgentKeepError, got ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    if (re) assert.match(`${e.message} ${fixText(e)}`, re);
    assert.ok(hasFix(e), 'error has a hint or next actions');
    return e;
  }
  assert.fail(`expected ${kind} error`);
}
