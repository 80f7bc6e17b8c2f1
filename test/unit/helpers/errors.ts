import * as assert from 'node:assert/strict';
import { AgentKeepError } from '../../../sidecar/core/errors';

/**
 * Await `p` and assert it fails with an AgentKeepError of `kind` whose message + hint match `re`
 * and that carries a hint (every error names the fix).
 */
export async function expectAgentKeepError(p: Promise<unknown>, kind: string, re?: RegExp): Promise<AgentKeepError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AgentKeepError, `expected AgentKeepError, got ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    if (re) assert.match(`${e.message} ${e.hint ?? ''}`, re);
    assert.ok(e.hint, 'error has a hint');
    return e;
  }
  assert.fail(`expected ${kind} error`);
}
