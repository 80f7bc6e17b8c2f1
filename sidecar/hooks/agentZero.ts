/**
 * AgentKeep's Agent Zero extensions (issue 15 item 4): two small Python files that Agent Zero loads
 * from `<root>/python/extensions/<point>/` in name order (python/helpers/extension.py: a class derived
 * from Extension, `async def execute(self, **kwargs)`, one instance per call):
 *
 *   tool_execute_before/_15_agentkeep.py   agent.py calls it with tool_name and tool_args
 *   tool_execute_after/_85_agentkeep.py    agent.py calls it with tool_name and response
 *
 * For the code execution tool (code_execution_tool with runtime terminal, python or nodejs) and
 * file-writing tools they run `agentkeep hook run agent-zero` with the Hermes-shaped JSON on stdin
 * (./call.ts), in a worker thread (the event loop keeps running) and time-boxed; a failure or a
 * timeout lets the tool run (one line on stderr). A fail-closed agent's block answer is raised as
 * Agent Zero's RepairableException, which the agent sees as the tool's error. The after extension
 * gets no tool_args, so the before one leaves the call's id and args on the agent (agent.data).
 */

/** The two extension files, relative to the Agent Zero root. */
export const AGENT_ZERO_FILES = {
  before: 'python/extensions/tool_execute_before/_15_agentkeep.py',
  after: 'python/extensions/tool_execute_after/_85_agentkeep.py',
} as const;

/** First line of every file AgentKeep writes (remove and status look for it). */
export const AGENT_ZERO_MARKER = '# Written by `agentkeep hook install agent-zero` (AgentKeep).';

/** Seconds the extension waits for the hook (the hook answers within its 20 s budget). */
export const AGENT_ZERO_TIMEOUT_S = 30;

function py(s: string): string {
  return JSON.stringify(s);
}

const COMMON = (argv: string[]): string => `${AGENT_ZERO_MARKER}
# It runs AgentKeep's hook around this agent's risky tool calls: a restore point before and after a
# risky terminal command or config-file write. Remove it with: agentkeep hook remove agent-zero
import asyncio
import json
import os
import sys
import uuid

from python.helpers.extension import Extension

AGENTKEEP_COMMAND = [${argv.map(py).join(', ')}]
AGENTKEEP_TIMEOUT = ${AGENT_ZERO_TIMEOUT_S}
_CALLS = "_agentkeep_calls"
_FILE_TOOLS = {"write_file", "patch", "text_editor", "file_write", "edit_file", "replace_in_file", "str_replace_editor"}


def _wanted(tool_name, tool_args):
    if tool_name == "code_execution_tool":
        return str((tool_args or {}).get("runtime", "")).lower().strip() in {"terminal", "python", "nodejs"}
    return tool_name in _FILE_TOOLS


def _session(agent):
    ctx = getattr(agent, "context", None)
    return str(getattr(ctx, "id", "") or "")


def _calls(agent):
    data = getattr(agent, "data", None)
    if not isinstance(data, dict):
        data = {}
        try:
            agent.data = data
        except Exception:
            return []
    return data.setdefault(_CALLS, [])


def _run(payload):
    import subprocess

    try:
        proc = subprocess.run(
            AGENTKEEP_COMMAND, input=json.dumps(payload), capture_output=True, text=True, timeout=AGENTKEEP_TIMEOUT
        )
    except Exception as e:  # not installed, timed out: the tool runs anyway
        print(f"agentkeep hook: {e}; the tool call goes ahead without a restore point", file=sys.stderr)
        return None
    if proc.stderr.strip():
        print(proc.stderr.strip(), file=sys.stderr)
    try:
        return json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        return None


async def _hook(agent, event, tool_name, tool_args, call_id):
    payload = {
        "hook_event_name": event,
        "tool_name": tool_name,
        "tool_input": tool_args or {},
        "session_id": _session(agent),
        "cwd": os.getcwd(),
        "extra": {"tool_call_id": call_id, "agent_number": getattr(agent, "number", 0)},
    }
    return await asyncio.to_thread(_run, payload)
`;

/** The two files' text for a hook command (argv, run without a shell). */
export function agentZeroFiles(argv: string[]): { before: string; after: string } {
  const before = `${COMMON(argv)}

try:
    from python.helpers.errors import RepairableException as _Block
except Exception:  # an Agent Zero without it
    _Block = Exception


class AgentKeepBefore(Extension):
    async def execute(self, tool_name="", tool_args={}, **kwargs):
        if not _wanted(tool_name, tool_args):
            return
        call_id = uuid.uuid4().hex
        _calls(self.agent).append({"id": call_id, "tool_name": tool_name, "tool_args": dict(tool_args or {})})
        answer = await _hook(self.agent, "pre_tool_call", tool_name, tool_args, call_id)
        if isinstance(answer, dict) and answer.get("decision") == "block":
            raise _Block(str(answer.get("reason") or "Blocked by AgentKeep."))
`;
  const after = `${COMMON(argv)}


class AgentKeepAfter(Extension):
    async def execute(self, tool_name="", response=None, **kwargs):
        calls = _calls(self.agent)
        for i in range(len(calls) - 1, -1, -1):
            if calls[i].get("tool_name") == tool_name:
                call = calls.pop(i)
                break
        else:
            return
        await _hook(self.agent, "post_tool_call", tool_name, call.get("tool_args"), call.get("id"))
`;
  return { before, after };
}
