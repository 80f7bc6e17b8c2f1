/**
 * The base URL of a store's own HTTP API (Agent Zero's web UI, mem0's REST server), checked once for
 * both clients (sidecar/memory/agent-zero/api.ts, sidecar/memory/mem0/api.ts).
 */
import { AgentKeepError } from '../core/errors';

/**
 * Parse an API base URL given in a store string or the environment.
 * @param baseUrl e.g. http://127.0.0.1:8888
 * @param what how messages name it, e.g. "mem0 API URL", "Agent Zero URL"
 * @param example the fix for a URL that does not parse / for another scheme (what to give instead)
 * @returns the parsed URL (http: or https:)
 * @throws AgentKeepError BadStore for a URL that does not parse or is not http(s), naming it and the fix
 */
export function parseApiUrl(baseUrl: string, what: string, example: { unparsable: string; scheme: string }): URL {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    throw new AgentKeepError('BadStore', `${what} "${baseUrl}" does not parse.`, example.unparsable);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new AgentKeepError('BadStore', `${what} "${baseUrl}" is not http(s).`, example.scheme);
  return u;
}
