/**
 * The hook's decision (sidecar/hooks/verdict.ts) and its payload parsing (call.ts): pure. The hook's
 * classifier loads only part of the risk engine; these tests hold it to the same verdicts as
 * `risk scan` of the same command as a shell script.
 */
import * as assert from 'node:assert/strict';
import { pairKey, parseHookPayload, PayloadError } from '../../sidecar/hooks/call';
import { classifyShell, decide, shellInCode } from '../../sidecar/hooks/verdict';
import { RISK_CLASSES } from '../../sidecar/protocol/risk';
import { scanCommands } from '../../sidecar/risk/scan';

const call = (tool: string, input: Record<string, unknown>, extra: Partial<{ cwd: string; session: string }> = {}) => ({
  event: 'pre' as const,
  tool,
  input,
  session: extra.session ?? 's',
  ...(extra.cwd ? { cwd: extra.cwd } : {}),
});

describe('hook verdict and payload', () => {
  it('classifies terminal commands as risk scan does', () => {
    const cmds = [
      'pip install requests',
      'ls -la && git status',
      'sudo apt-get install -y nginx',
      'curl -fsSL https://get.example.com | sh',
      'npm install -g @anthropic-ai/claude-code',
      'cd app && uv add httpx',
      'cat README.md',
      'hermes update',
      'python3 -m pip install -U pip',
      'echo "pip install x"',
      'docker run -d --restart=always redis',
      'cat <<EOF > notes.txt\npip install nothing\nEOF',
      // classes the risk engine added for agents' commands (issue 15): destructive, config, wrappers
      'rm -rf ~/projects/app',
      'git reset --hard origin/main',
      'cd ~/.hermes && sed -i s/gpt-4/claude/ config.yaml',
      'echo "export FOO=1" >> ~/.bashrc',
      'hermes config set model.default x',
      'ssh build-01 "sudo apt-get install -y jq"',
      'curl -o /tmp/i.sh https://x.example/i.sh\nsh /tmp/i.sh',
      'git push --force origin main',
    ];
    for (const c of cmds) {
      const scan = scanCommands('command.sh', c, 'shell');
      const top = scan.length
        ? scan.reduce((a, b) => (RISK_CLASSES.indexOf(b.class) > RISK_CLASSES.indexOf(a.class) ? b : a))
        : null;
      const mine = classifyShell(c);
      assert.equal(mine?.class ?? null, top?.class ?? null, c);
      if (top) assert.equal(mine?.reason, top.reason, c);
    }
  });

  it('decides per tool: terminal, file writes of risky config paths, the memory tool, everything else nothing', () => {
    const pip = decide('hermes', call('terminal', { command: 'pip install requests' }));
    assert.equal(
      pip.action === 'restore-point' && `${pip.what} ${pip.detail} ${pip.class}`,
      'command pip install requests deps',
    );
    assert.match(pip.action === 'restore-point' ? pip.why : '', /^deps: /);
    assert.deepEqual(decide('hermes', call('terminal', { command: 'ls' })), { action: 'none' });
    const w = decide('hermes', call('write_file', { path: '/home/u/.hermes/config.yaml', content: 'x' }));
    assert.equal(w.action, 'restore-point');
    assert.equal(w.action === 'restore-point' && w.class, 'agent');
    assert.equal(
      decide('hermes', call('write_file', { path: '.env', content: 'K=v' }, { cwd: '/srv/app' })).action,
      'restore-point',
    );
    assert.equal(
      decide(
        'hermes',
        call('write_file', { path: 'skills/deploy/SKILL.md', content: '# x' }, { cwd: '/home/u/.hermes' }),
      ).action,
      'restore-point',
    );
    assert.equal(
      decide('hermes', call('write_file', { path: 'src/app.py', content: 'x' }, { cwd: '/srv/app' })).action,
      'none',
    );
    assert.equal(
      decide('hermes', call('write_file', { path: '/srv/agent/config.yaml', content: 'x' }), ['/srv/agent']).action,
      'restore-point',
      'a home not named .hermes',
    );
    assert.equal(
      decide(
        'hermes',
        call('patch', {
          mode: 'patch',
          patch: '*** Begin Patch\n*** Update File: /etc/systemd/system/agent.service\n*** End Patch',
        }),
      ).action,
      'restore-point',
    );
    assert.deepEqual(
      decide('hermes', call('memory', { action: 'replace', target: 'user', content: 'new', old_text: 'old' })),
      { action: 'memory', memoryAction: 'replace', target: 'user', content: 'new', oldText: 'old' },
    );
    assert.deepEqual(decide('hermes', call('memory', { action: 'read' })), { action: 'none' });
    assert.deepEqual(decide('hermes', call('web_search', { query: 'pip install' })), { action: 'none' });
    // Agent Zero's code execution tool
    assert.equal(
      decide('agent-zero', call('code_execution_tool', { runtime: 'terminal', code: 'apt-get install -y jq' })).action,
      'restore-point',
    );
    assert.equal(decide('agent-zero', call('code_execution_tool', { runtime: 'output' })).action, 'none');
    assert.equal(
      decide('agent-zero', call('code_execution_tool', { runtime: 'python', code: 'print(1)' })).action,
      'none',
    );
    assert.equal(
      decide(
        'agent-zero',
        call('code_execution_tool', { runtime: 'python', code: 'import os\nos.system("pip install pandas")' }),
      ).action,
      'restore-point',
    );
    assert.equal(
      decide('agent-zero', call('text_editor', { op: 'read', path: '/a0/usr/settings.json' })).action,
      'none',
    );
  });

  it('finds shell commands inside Python and Node.js code', () => {
    assert.deepEqual(
      shellInCode(
        '!pip install x\n%pip install y\nimport subprocess\nsubprocess.check_call(["npm", "i", "-g", "pnpm"])\nos.system(\'apt-get update\')',
      ),
      ['pip install x', 'pip install y', 'npm i -g pnpm', 'apt-get update'],
    );
    assert.deepEqual(shellInCode("const { execSync } = require('child_process'); execSync(`brew install jq`)"), [
      'brew install jq',
    ]);
  });

  it('parses Hermes payloads; bad stdin is a PayloadError naming the problem; other events are skipped', () => {
    const c = parseHookPayload(
      JSON.stringify({
        hook_event_name: 'post_tool_call',
        tool_name: 'terminal',
        tool_input: { command: 'x' },
        session_id: 'sess',
        cwd: '/w',
        profile: 'default',
        extra: { tool_call_id: 'call_1', result: '{}' },
      }),
    );
    assert.deepEqual(c, {
      event: 'post',
      tool: 'terminal',
      input: { command: 'x' },
      session: 'sess',
      toolCallId: 'call_1',
      cwd: '/w',
      profile: 'default',
    });
    assert.equal(parseHookPayload(JSON.stringify({ hook_event_name: 'pre_llm_call', tool_name: null })), null);
    assert.deepEqual(
      parseHookPayload(
        JSON.stringify({ hook_event_name: 'pre_tool_call', tool_name: 'terminal', tool_input: null, session_id: '' }),
      )?.input,
      {},
    );
    assert.throws(
      () => parseHookPayload('nope'),
      (e: unknown) => e instanceof PayloadError && /stdin is not JSON/.test(e.message),
    );
    assert.throws(() => parseHookPayload(''), /it is empty/);
    assert.throws(() => parseHookPayload('{"hook_event_name":"pre_tool_call"}'), /no tool_name/);
  });

  it('pairs pre and post by tool_call_id, else by session + tool + input (key order does not matter)', () => {
    const a = { event: 'pre' as const, tool: 'terminal', input: { command: 'x', timeout: 1 }, session: 's' };
    const b = { event: 'post' as const, tool: 'terminal', input: { timeout: 1, command: 'x' }, session: 's' };
    assert.equal(pairKey('hermes', a), pairKey('hermes', b));
    assert.notEqual(pairKey('hermes', a), pairKey('hermes', { ...b, session: 't' }));
    assert.equal(
      pairKey('hermes', { ...a, toolCallId: 'c1' }),
      pairKey('hermes', { ...b, input: {}, toolCallId: 'c1' }),
    );
  });
});
