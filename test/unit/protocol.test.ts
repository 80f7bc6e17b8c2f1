import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  codeLensSettingOf,
  ErrorCodes,
  LENS_SETTING_DEFAULTS,
  LensArgument,
  LensCommands,
  LensSettingKeys,
  Methods,
  Notifications,
  parseCodeLensFilter,
  protocolJsonSchema,
  RISK_CLASSES,
} from '../../sidecar/protocol';
import { SCHEMA_FILE, schemaText } from '../../scripts/write-protocol-schema';
import { dispatch, toResponseError, wireMethods } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import type { CoreApi } from '../../sidecar/core/service';

describe('protocol', () => {
  it('the committed protocol.schema.json is up to date', () => {
    let committed = '';
    try {
      committed = readFileSync(SCHEMA_FILE, 'utf8');
    } catch {
      assert.fail(`${SCHEMA_FILE} is missing: run npm run build`);
    }
    assert.ok(committed === schemaText(), 'sidecar/protocol/protocol.schema.json is stale: run npm run build');
  });

  it('the schema covers every method, notification and error code', () => {
    const s = protocolJsonSchema() as {
      methods: Record<string, { params: unknown; result: unknown }>;
      notifications: Record<string, unknown>;
      errors: unknown[];
    };
    for (const d of Object.values(Methods)) {
      assert.ok(s.methods[d.method], d.method);
      assert.ok(s.methods[d.method].params && s.methods[d.method].result);
    }
    for (const n of Object.values(Notifications)) assert.ok(s.notifications[n.method], n.method);
    assert.equal(s.errors.length, Object.keys(ErrorCodes).length);
    assert.deepEqual(
      wireMethods().sort(),
      Object.values(Methods)
        .map((d) => d.method)
        .sort(),
    );
  });

  it('the lens contract matches what package.json contributes: command ids, setting names and risk classes', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', `file://${__filename}`), 'utf8')) as {
      contributes: {
        commands: Array<{ command: string }>;
        configuration: {
          properties: Record<string, { default?: unknown; anyOf?: Array<{ items?: { enum?: string[] } }> }>;
        };
      };
    };
    const commands = new Set(pkg.contributes.commands.map((c) => c.command));
    for (const id of Object.values(LensCommands)) assert.ok(commands.has(id), `package.json contributes ${id}`);
    const props = pkg.contributes.configuration.properties;
    for (const [k, key] of Object.entries(LensSettingKeys)) {
      assert.ok(props[key], `package.json contributes the setting ${key}`);
      assert.deepEqual(
        props[key]!.default,
        LENS_SETTING_DEFAULTS[k as keyof typeof LENS_SETTING_DEFAULTS],
        `default of ${key}`,
      );
    }
    assert.deepEqual(props[LensSettingKeys.codeLens]!.anyOf?.[1]?.items?.enum, [...RISK_CLASSES]);
    // one parser for both sides
    assert.deepEqual(parseCodeLensFilter(['deps', 'nope', 'system']), ['deps', 'system']);
    assert.equal(codeLensSettingOf({ agentkeep: { codeLens: 'off' } }), 'off');
    assert.deepEqual(codeLensSettingOf({ codeLens: ['remote-code'] }), ['remote-code']);
    assert.equal(codeLensSettingOf({ agentkeep: {} }), undefined, 'no codeLens in the push: nothing changes');
    assert.ok(LensArgument.safeParse({ command: 'npm i', file: '/w/a.sh', line: 3 }).success);
    assert.ok(
      !LensArgument.safeParse({ command: '  ', file: '/w/a.sh', line: 3 }).success,
      'an empty command is refused',
    );
    assert.ok(!LensArgument.safeParse({ command: 'npm i', file: '/w/a.sh', line: 0 }).success, 'lines are 1-based');
  });

  describe('dispatch', () => {
    // A recording core: dispatch must route each method to its core call with validated params.
    const calls: Array<[string, unknown]> = [];
    const rec =
      (name: string, result: unknown = { ok: name }) =>
      async (p: unknown): Promise<never> => {
        calls.push([name, p]);
        return result as never;
      };
    const core: CoreApi = {
      createRestorePoint: rec('createRestorePoint'),
      listRestorePoints: rec('listRestorePoints'),
      diffRestorePoint: rec('diffRestorePoint'),
      compareRestorePoints: rec('compareRestorePoints'),
      usageRestorePoints: rec('usageRestorePoints'),
      readRestorePointFile: rec('readRestorePointFile'),
      restoreRestorePoint: rec('restoreRestorePoint'),
      previewRestorePoint: rec('previewRestorePoint'),
      deleteRestorePoint: rec('deleteRestorePoint'),
      keepRestorePoint: rec('keepRestorePoint'),
      labelRestorePoint: rec('labelRestorePoint'),
      pruneRestorePoints: rec('pruneRestorePoints'),
      listMemory: rec('listMemory'),
      describeStores: rec('describeStores'),
      detectStoresIn: rec('detectStoresIn'),
      agentStatus: rec('agentStatus'),
      agentMemoryReach: rec('agentMemoryReach'),
      showMemory: rec('showMemory'),
      editMemory: rec('editMemory'),
      removeMemory: rec('removeMemory'),
      addMemory: rec('addMemory'),
      lintMemory: rec('lintMemory'),
      diffMemory: rec('diffMemory'),
      discoverAgents: rec('discoverAgents'),
      describeTarget: rec('describeTarget'),
      listAgents: rec('listAgents'),
      beginRun: rec('beginRun'),
      endRun: rec('endRun'),
      runWrapped: rec('runWrapped'),
      addAgent: rec('addAgent'),
      removeAgent: rec('removeAgent'),
      setDefaultAgent: rec('setDefaultAgent'),
      setAgentSettings: rec('setAgentSettings'),
      guestFileRead: rec('guestFileRead'),
      guestFileWrite: rec('guestFileWrite'),
      recordMemoryWrite: rec('recordMemoryWrite'),
      memoryHistory: rec('memoryHistory'),
      memoryUndoWrite: rec('memoryUndoWrite'),
      memoryRestoreEntry: rec('memoryRestoreEntry'),
      memoryForget: rec('memoryForget'),
      memoryLintFix: rec('memoryLintFix'),
      createRequest: rec('createRequest'),
      listRequests: rec('listRequests'),
      approveRequest: rec('approveRequest'),
      denyRequest: rec('denyRequest'),
    };

    it('routes each method to the core and risk.scan to scanText', async () => {
      assert.deepEqual(await dispatch(core, 'agentkeep/restorePoint.list', { target: 'dir:/x' }), {
        ok: 'listRestorePoints',
      });
      assert.deepEqual(calls.at(-1), ['listRestorePoints', { target: 'dir:/x' }]);
      await dispatch(core, 'agentkeep/restorePoint.keep', { target: 'dir:/x', id: 'a1' });
      assert.equal(calls.at(-1)![0], 'keepRestorePoint');
      await dispatch(core, 'agentkeep/memory.list', { stores: ['hermes:/h'] });
      assert.equal(calls.at(-1)![0], 'listMemory');
      await dispatch(core, 'agentkeep/memory.lint', { stores: ['hermes:/h'] });
      assert.equal(calls.at(-1)![0], 'lintMemory');
      await dispatch(core, 'agentkeep/agent.discover', { target: 'proxmox://pve.example:8006' });
      assert.equal(calls.at(-1)![0], 'discoverAgents');
      const n = calls.length;
      const found = await dispatch(core, 'agentkeep/risk.scan', { file: 'a.sh', text: 'echo\npip install x\n' });
      assert.deepEqual(found, [
        {
          file: 'a.sh',
          line: 2,
          endLine: 2,
          command: 'pip install x',
          class: 'deps',
          kind: 'shell',
          risk: 'pip install x (deps: changes project dependencies)',
          reason: 'deps: pip install changes project dependencies',
        },
      ]);
      assert.equal(calls.length, n, 'risk.scan does not touch the core');
    });

    it('rejects bad params with InvalidParams naming the field path', async () => {
      await assert.rejects(
        dispatch(core, 'agentkeep/restorePoint.restore', { target: 'dir:/x', id: 'a', scope: 'all' }),
        (e: unknown) => {
          assert.ok(e instanceof AgentKeepError);
          assert.equal(e.kind, 'InvalidParams');
          assert.match(e.message, /params\.scope/);
          assert.match(e.hint ?? '', /target, id, scope/);
          return true;
        },
      );
      await assert.rejects(dispatch(core, 'agentkeep/restorePoint.list', {}), /params\.target/);
      await assert.rejects(
        dispatch(core, 'agentkeep/nope', {}),
        (e: unknown) => e instanceof AgentKeepError && /Unknown method/.test(e.message),
      );
    });

    it('turns errors into JSON-RPC errors with {code, hint}', () => {
      const r = toResponseError(new AgentKeepError('TargetBusy', 'busy', 'wait'));
      assert.equal(r.code, ErrorCodes.TargetBusy.code);
      assert.equal(r.message, 'busy');
      assert.deepEqual(r.data, { code: 'target_busy', hint: 'wait' });
      const i = toResponseError(new Error('boom'));
      assert.equal(i.code, ErrorCodes.Internal.code);
      assert.deepEqual(i.data, { code: 'internal' });
    });
  });
});
