/**
 * Validation of a protocol method's params with its zod schema (the servers' and the CLI's boundary,
 * sidecar/core/dispatch.ts). Its own module so a front end that calls one core function directly (the
 * launcher's slim `restore-point create`, sidecar/createMain.ts) validates exactly as `call` does,
 * without loading the dispatch table (vscode-jsonrpc, the risk classifier).
 */
import type { z } from 'zod';
import { Methods, type MethodName } from '../protocol';
import { AgentKeepError } from './errors';

/** Describe a zod error as one sentence naming the field path and the expected shape. */
export function describeZodError(err: z.ZodError, what = 'params'): string {
  const parts = err.issues.slice(0, 3).map((i) => {
    const at = i.path.length ? `${what}.${i.path.map(String).join('.')}` : what;
    return `${at}: ${i.message}`;
  });
  return parts.join('; ');
}

/**
 * Params that fail a method's schema. `fields` keeps each issue's path in the params object and its
 * message, so a front end can name the field its own way (the CLI: `--target` instead of the wire
 * text `params.target`); the message and hint stay the wire's, for JSON-RPC clients.
 */
export class InvalidParamsError extends AgentKeepError {
  constructor(
    message: string,
    hint: string,
    readonly fields: { path: string[]; message: string }[],
  ) {
    super('InvalidParams', message, hint);
  }
}

/**
 * Validate params with the schema of method `key`.
 * @returns the parsed params (zod output: unknown keys dropped, strings trimmed where the schema says)
 * @throws InvalidParamsError (kind InvalidParams) naming the field path and the expected shape
 */
export function parseParams<K extends MethodName>(key: K, params: unknown): z.infer<(typeof Methods)[K]['params']> {
  const def = Methods[key];
  const parsed = def.params.safeParse(params ?? {});
  if (!parsed.success) {
    const shape = Object.keys((def.params as unknown as z.ZodObject).shape ?? {}).join(', ');
    throw new InvalidParamsError(
      `Invalid params for ${def.method}: ${describeZodError(parsed.error)}.`,
      `Send an object with: ${shape} (see sidecar/protocol/protocol.schema.json).`,
      parsed.error.issues.slice(0, 3).map((i) => ({ path: i.path.map(String), message: i.message })),
    );
  }
  return parsed.data as z.infer<(typeof Methods)[K]['params']>;
}
