import { ErrorCodes, type ErrorName } from '../protocol';

export type ErrorKind = keyof typeof ErrorCodes;

/**
 * The one error type of the sidecar core. `kind` picks the JSON-RPC code and the CLI's string code
 * (see ErrorCodes in sidecar/protocol); `message` names the problem, `hint` names the fix. Transports
 * turn it into a JSON-RPC error with data `{code, hint}`; the CLI prints `message` (+ hint) on one
 * line, or `{error: {code, message, hint}}` with --json.
 */
export class AgentKeepError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly hint?: string,
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

  /** One line for humans: message, then the fix. */
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
