/**
 * The agent's tool call as a hook receives it, normalised. Both agents speak the same JSON on the
 * hook's stdin (Hermes' shell-hook wire protocol, agent/shell_hooks.py `_serialize_payload`; the Agent
 * Zero extensions that `hook install agent-zero` writes send the same shape):
 *
 *     {"hook_event_name": "pre_tool_call" | "post_tool_call", "tool_name": "terminal",
 *      "tool_input": {"command": "pip install requests"}, "session_id": "sess_abc123",
 *      "cwd": "/home/user/project", "extra": {"tool_call_id": "call_1", "task_id": "...", ...}}
 *
 * Hermes puts every other kwarg of invoke_hook under `extra`: model_tools.py passes `tool_call_id`
 * (and task_id, turn_id, api_request_id) to pre_tool_call and post_tool_call alike, post_tool_call
 * also `result`, `duration_ms`, `status`. Older Hermes versions passed no tool_call_id to
 * pre_tool_call: then the pre and post are paired by session + tool + a hash of the input.
 * Pure and small: the hook's fast path loads it.
 */
import { createHash } from 'node:crypto';

/** The agents whose hooks AgentKeep installs. */
export type HookAgentKind = 'hermes' | 'agent-zero';

/** One tool call, before (pre) or after (post) it ran. */
export interface HookCall {
  event: 'pre' | 'post';
  tool: string;
  /** The tool's arguments (`tool_input`; {} when Hermes sent null). */
  input: Record<string, unknown>;
  /** The agent's session id ("" when none). */
  session: string;
  /** The agent's tool call id (`extra.tool_call_id`), when it sent one. */
  toolCallId?: string;
  /** The agent's working directory, for relative paths. */
  cwd?: string;
  /** Hermes profile name (multiplexed gateway), when sent. */
  profile?: string;
}

/** A payload that is not a hook call: the message says what is wrong with it. */
export class PayloadError extends Error {}

/** How deep tool_input may nest (objects and arrays); a deeper one is bad stdin (pairing hashes it). */
export const MAX_INPUT_DEPTH = 256;

/** What a JSON value is, for messages: "a string", "a number", "an array", "null". */
function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Whether `v` nests deeper than `max` levels (iterative: a deep value does not overflow the stack). */
function deeperThan(v: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (!x || typeof x !== 'object') continue;
    if (d > max) return true;
    for (const c of Object.values(x as object)) if (c && typeof c === 'object') stack.push([c, d + 1]);
  }
  return false;
}

/** The tools whose tool_input.command is a shell command (./verdict.ts). */
const COMMAND_TOOLS = new Set(['terminal', 'Bash', 'shell', 'execute_code']);

/**
 * Parse the hook's stdin.
 * @returns the call, or null for an event AgentKeep does not act on (pre_llm_call, on_session_start, …)
 * @throws PayloadError when stdin is not JSON or not an object with a tool_name, or its tool_input is
 *   not an object (a string, number, array), nests deeper than MAX_INPUT_DEPTH, or has a command
 *   (terminal, Bash, shell, execute_code) that is not a string
 */
export function parseHookPayload(text: string): HookCall | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const shown = text.trim().slice(0, 60);
    throw new PayloadError(
      `stdin is not JSON (${(e as Error).message.replace(/\s+/g, ' ')}${shown ? `; it starts with ${JSON.stringify(shown)}` : '; it is empty'})`,
    );
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new PayloadError('stdin is JSON but not an object with hook_event_name and tool_name');
  const o = raw as Record<string, unknown>;
  const ev = o.hook_event_name;
  const event =
    ev === 'pre_tool_call' || ev === 'PreToolUse'
      ? 'pre'
      : ev === 'post_tool_call' || ev === 'PostToolUse'
        ? 'post'
        : null;
  if (!event) {
    if (typeof ev !== 'string') throw new PayloadError('stdin has no hook_event_name');
    return null;
  }
  if (typeof o.tool_name !== 'string' || !o.tool_name)
    throw new PayloadError(`stdin has no tool_name for ${String(ev)}`);
  const extra = o.extra && typeof o.extra === 'object' ? (o.extra as Record<string, unknown>) : {};
  if (o.tool_input !== undefined && o.tool_input !== null) {
    if (typeof o.tool_input !== 'object' || Array.isArray(o.tool_input))
      throw new PayloadError(`stdin's tool_input is ${jsonKind(o.tool_input)}, not an object`);
    if (deeperThan(o.tool_input, MAX_INPUT_DEPTH))
      throw new PayloadError(`stdin's tool_input nests deeper than ${MAX_INPUT_DEPTH} levels`);
    const cmd = (o.tool_input as Record<string, unknown>).command;
    if (COMMAND_TOOLS.has(o.tool_name) && cmd !== undefined && typeof cmd !== 'string')
      throw new PayloadError(`stdin's tool_input.command for ${o.tool_name} is ${jsonKind(cmd)}, not a string`);
  }
  const input =
    o.tool_input && typeof o.tool_input === 'object' && !Array.isArray(o.tool_input)
      ? (o.tool_input as Record<string, unknown>)
      : {};
  const id = extra.tool_call_id ?? o.tool_use_id;
  return {
    event,
    tool: o.tool_name,
    input,
    session: typeof o.session_id === 'string' ? o.session_id : '',
    ...(typeof id === 'string' && id ? { toolCallId: id } : {}),
    ...(typeof o.cwd === 'string' && o.cwd ? { cwd: o.cwd } : {}),
    ...(typeof o.profile === 'string' && o.profile ? { profile: o.profile } : {}),
  };
}

/** JSON with sorted keys, so the same input hashes the same in pre and post. */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * The key that pairs a call's pre and post: the tool call id when the agent sent one, else
 * session + tool + sha256 of the input (the same arguments reach pre and post).
 * @returns 24 hex chars (a file name)
 */
export function pairKey(kind: HookAgentKind, c: HookCall): string {
  const keys = pairKeys(kind, c);
  return keys.id ?? keys.input;
}

/**
 * Both keys of a call: `id` (the tool call id's, when the agent sent one) and `input` (session +
 * tool + sha256 of the input, always). A pre is recorded under both, and a post looks for its id's
 * key first, then the input's: so a pre and a post pair even when only one of them carries the
 * tool call id (a Hermes that passes it to post_tool_call but not pre_tool_call, or the other way).
 * @returns 24 hex chars each (file names)
 */
export function pairKeys(kind: HookAgentKind, c: HookCall): { id?: string; input: string } {
  const hash = (basis: string): string => createHash('sha256').update(basis).digest('hex').slice(0, 24);
  const input = hash(`${kind}\0${c.session}\0${c.tool}\0${stable(c.input)}`);
  return c.toolCallId ? { id: hash(`${kind}\0${c.session}\0id\0${c.toolCallId}`), input } : { input };
}
