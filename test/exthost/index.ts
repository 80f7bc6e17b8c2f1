/**
 * Mocha entry point inside the real VS Code extension host (code-server, started by
 * scripts/test-exthost.ts with the smoke-test-driver payload). VS Code calls run(); a rejection
 * makes the workbench report a non-zero exit code. The suites are imported statically so esbuild
 * bundles them into out/test/exthost/index.js; mocha itself stays external (the project's
 * node_modules).
 */
import Mocha from 'mocha';
import { registerAgentSuite } from './agent.test';
import { registerAgentOwnSuite } from './agentOwn.test';
import { registerFlowSuite } from './flow.test';
import { registerMemorySuite } from './memory.test';
import { registerProxmoxSuite } from './proxmox.test';
import { registerRemoteSuite } from './remote.test';

export function run(): Promise<void> {
  // AGENTKEEP_EXTHOST_GREP (inherited from scripts/test-exthost.ts): run only the matching tests
  const mocha = new Mocha({
    ui: 'bdd',
    timeout: 60000,
    color: false,
    reporter: 'spec',
    grep: process.env.AGENTKEEP_EXTHOST_GREP || undefined,
  });
  // Define describe/it/before/... as globals, then let the suites register their tests.
  mocha.suite.emit('pre-require', globalThis, 'agentkeep-exthost', mocha);
  registerAgentSuite();
  registerFlowSuite();
  registerMemorySuite();
  registerAgentOwnSuite();
  registerProxmoxSuite(); // it points the workspace at the Proxmox simulator (and back)
  registerRemoteSuite(); // last: it points the editor at a remote sidecar (and back)
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures ? reject(new Error(`${failures} extension-host test(s) failed`)) : resolve()));
  });
}
