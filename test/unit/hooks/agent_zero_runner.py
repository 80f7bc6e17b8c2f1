"""Loads AgentKeep's Agent Zero extensions the way Agent Zero does and calls them, for
test/unit/hooks-agent-zero.test.ts.

Agent Zero (python/helpers/extension.py call_extensions) loads every class derived from
python.helpers.extension.Extension from the files of python/extensions/<point>/ (sorted by file
name), makes one instance per call with `cls(agent=agent)` and awaits `execute(**kwargs)`; agent.py
calls tool_execute_before with tool_args and tool_name, tool_execute_after with response and
tool_name. The root given here holds a minimal stand-in for python/helpers/extension.py and errors.py.

Usage: python3 agent_zero_runner.py ROOT STEPS.json   (prints one JSON line per step)
"""
import asyncio
import importlib.util
import inspect
import json
import os
import sys


def load_classes(root, point):
    sys.path.insert(0, root)
    from python.helpers.extension import Extension

    folder = os.path.join(root, "python", "extensions", point)
    classes = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(folder, name))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Extension) and cls is not Extension and cls.__module__ == mod.__name__:
                classes.append(cls)
    return classes


class Context:
    id = "ctx_a0_1"


class Agent:
    number = 0
    agent_name = "A0"

    def __init__(self):
        self.context = Context()
        self.data = {}


class Response:
    def __init__(self, message):
        self.message = message
        self.break_loop = False


async def main():
    root, steps_file = sys.argv[1], sys.argv[2]
    before = load_classes(root, "tool_execute_before")
    after = load_classes(root, "tool_execute_after")
    agent = Agent()
    for step in json.load(open(steps_file, encoding="utf-8")):
        out = {"tool": step["tool_name"], "before": [c.__name__ for c in before], "after": [c.__name__ for c in after]}
        try:
            for cls in before:
                await cls(agent=agent).execute(tool_args=step["tool_args"] or {}, tool_name=step["tool_name"])
            for cls in after:
                await cls(agent=agent).execute(response=Response("done"), tool_name=step["tool_name"])
            out["ok"] = True
        except Exception as e:  # Agent Zero hands a RepairableException to the model as the tool's error
            out["ok"] = False
            out["error_type"] = type(e).__name__
            out["error"] = str(e)
        out["pending"] = len(agent.data.get("_agentkeep_calls", []))
        print(json.dumps(out))
        sys.stdout.flush()


asyncio.run(main())
