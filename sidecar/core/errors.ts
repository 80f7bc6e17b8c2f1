import { ErrorCodes, type ErrorName } from '../protocol/errors';
import type { NextAction } from '../protocol';

export type ErrorKind = keyof typeof ErrorCodes;

/**
 * The one error type of the sidecar core. `kind` picks the JSON-RPC code and the CLI's string code
 * (see ErrorCodes in sidecar/protocol); `message` names the problem, `hint` names the fix in words,
 * `actions` are what the user can do next as data (a method with its params, see NextAction in
 * sidecar/protocol; never CLI text). Transports turn it into a JSON-RPC error with data
 * `{code, hint, actions}`; the CLI prints `message`, the actions as CLI command lines and
 * the hint on one line, or `{error: {code, message, hint, actions}}` with --json; the extension shows
 * the actions as buttons.
 */
export class AgentKeepError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly hint?: string,
    readonly actions?: NextAction[],
  ) {
    super(message);
    this.name = 'AgentKeepError';
  }

  /** The numeric JSON-RPC error code. */
  get rpcCode(): number {
    return ErrorCodes[this.kind].code;
  }

  /** The stable string code, e.g. "target_busy". */
  get code(): ErrorName {
    return ErrorCodes[this.kind].name;
  }

  /** One line for humans: message, then the fix in words (the actions are rendered by each front end). */
  oneLine(): string {
    return this.hint ? `${this.message} ${this.hint}` : this.message;
  }
}

/** Wrap any thrown value as an AgentKeepError (unknown errors become `Internal`). */
export function asAgentKeepError(e: unknown): AgentKeepError {
  if (e instanceof AgentKeepError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new AgentKeepError('Internal', msg);
}
