"""Runs AgentKeep's hooks the way Hermes does (agent/shell_hooks.py), for test/unit/hooks-hermes.test.ts.

Reads config.yaml with yaml.safe_load (as hermes_cli.config), takes the `hooks:` entries, and for each
step fires every entry whose event matches and whose matcher fullmatches the tool name: the command is
split with shlex after os.path.expanduser (shell=False), the payload is the JSON Hermes serialises
(_serialize_payload: hook_event_name, tool_name, tool_input, session_id, cwd, profile, extra), sent on
stdin with communicate(timeout=entry timeout); stdout is parsed like _parse_response (empty = no-op,
{"decision": "block"} / {"action": "block"} blocks a pre_tool_call).

Usage: python3 hermes_runner.py CONFIG.yaml STEPS.json   (prints one JSON line per fired hook)
"""
import json
import os
import re
import shlex
import subprocess
import sys
import time

import yaml


def main():
    config, steps_file = sys.argv[1], sys.argv[2]
    with open(config, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    hooks = cfg.get("hooks") or {}
    steps = json.load(open(steps_file, encoding="utf-8"))
    for step in steps:
        event = step["event"]
        for entry in hooks.get(event) or []:
            matcher = (entry.get("matcher") or "").strip() or None
            if matcher and re.fullmatch(matcher, step["tool_name"]) is None:
                continue
            timeout = int(entry.get("timeout", 60))
            argv = shlex.split(os.path.expanduser(entry["command"]))
            kwargs = {k: v for k, v in step.get("kwargs", {}).items()}
            payload = json.dumps(
                {
                    "hook_event_name": event,
                    "tool_name": step["tool_name"],
                    "tool_input": step["args"] if isinstance(step["args"], dict) else None,
                    "session_id": step.get("session_id", ""),
                    "cwd": os.getcwd(),
                    "profile": "default",
                    "extra": kwargs,
                },
                ensure_ascii=False,
                default=str,
            )
            t0 = time.monotonic()
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, encoding="utf-8", errors="replace", shell=False, process_group=0)
            except (FileNotFoundError, PermissionError) as e:  # Hermes logs "command not found" and fails open
                print(json.dumps({"event": event, "tool": step["tool_name"], "matcher": matcher, "argv": argv, "error": str(e)}))
                continue
            timed_out = False
            try:
                out, err = proc.communicate(input=payload, timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                timed_out = True
            parsed = None
            out_s = (out or "").strip()
            if out_s:
                try:
                    data = json.loads(out_s)
                    if isinstance(data, dict) and (data.get("decision") == "block" or data.get("action") == "block"):
                        parsed = {"action": "block", "message": data.get("reason") or data.get("message")}
                except json.JSONDecodeError:
                    parsed = {"invalid_stdout": out_s[:200]}
            print(json.dumps({
                "event": event, "tool": step["tool_name"], "matcher": matcher, "argv": argv, "timeout": timeout,
                "returncode": proc.returncode, "timed_out": timed_out, "elapsed": round(time.monotonic() - t0, 3),
                "parsed": parsed, "stderr": err,
            }))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
