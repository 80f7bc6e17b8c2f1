/**
 * The demo agent: a realistic Hermes-style agent home with a workspace that holds a real package
 * install. PURE NODE (no `vscode` import): used by the extension's "Set up demo agent" button, by
 * `npm start` (scripts/start.ts) and by the integration and e2e test runners.
 *
 * Layout created under `root`:
 *   root/agent-home/                 the target (`dir:<root>/agent-home`)
 *     .hermes/                       a Hermes home (the memory store `hermes:<root>/agent-home/.hermes`)
 *       config.yaml                  memory char limits
 *       .env                         obviously fake keys, mode 0600
 *       SOUL.md
 *       memories/MEMORY.md, USER.md  entries separated by "\n§\n"
 *       skills/devops/deploy-staging/SKILL.md
 *     workspace/                     the folder to open in VS Code
 *       package.json, setup.sh (a real `npm install` of left-pad), README.md (a bash fence)
 *       .vscode/settings.json        agentkeep.target / stores / stateDir for this demo
 *   root/state/                      the sidecar's state dir, outside the target
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Paths of a demo agent (all absolute). */
export interface DemoAgent {
  root: string;
  /** The agent's home: the target directory. */
  agentHome: string;
  /** `dir:<agentHome>` */
  target: string;
  /** The Hermes home inside the agent home. */
  hermesHome: string;
  /** `hermes:<hermesHome>` */
  store: string;
  /** The folder to open in VS Code. */
  workspace: string;
  /** workspace/setup.sh */
  setupScript: string;
  /** The sidecar state dir (outside the target). */
  stateDir: string;
  /** False when an existing demo was left as it was. */
  created: boolean;
}

/** Options of createDemoAgent. */
export interface DemoOptions {
  /** Remove and recreate an existing demo (default false: an existing demo is left untouched). */
  force?: boolean;
}

const SEP = '\n§\n';

const MEMORY_ENTRIES = [
  'The staging server is staging.example.internal; deploy with `./deploy.sh staging` from ~/agent-home/workspace, never with --force.',
  'Node 20 is the runtime for the demo-agent-tools package; npm is the package manager (not pnpm or yarn).',
  'Tests live in workspace/test and run with `npm test`; the suite takes about 40 seconds.',
  'The user prefers short status reports: what changed, what is left, any risk. No emojis.',
  'The nightly backup job runs at 02:30 UTC from cron; do not restart the database between 02:15 and 03:00.',
  "left-pad is pinned at 1.3.0 in the team's other projects; upgrading it was discussed and rejected in March.",
];

const USER_ENTRIES = [
  'Name: Sam Rivera. Platform engineer, works in UTC+1, usually online 08:00-17:00.',
  'Prefers bash scripts over Makefiles, and wants every destructive command confirmed first.',
  'Owns the staging environment; production changes need a second reviewer (Priya).',
];

const CONFIG_YAML = `# Hermes Agent configuration (demo)
model:
  provider: openrouter
  default: anthropic/claude-sonnet-4
memory:
  memory_enabled: true
  user_profile_enabled: true
  memory_char_limit: 2200
  user_char_limit: 1375
terminal:
  backend: local
  cwd: ~/agent-home/workspace
`;

const ENV_FILE = `# Demo only: these keys are fake and do not work anywhere.
OPENROUTER_API_KEY=sk-or-v1-FAKE-DEMO-KEY-0000000000000000000000000000
TELEGRAM_BOT_TOKEN=000000000:FAKE-DEMO-TOKEN-not-a-real-token
`;

const SOUL_MD = `# Soul

You are a careful DevOps assistant for a small platform team. You explain what a command will change
before running it, you prefer reversible steps, and you ask before touching production.
`;

const SKILL_MD = `---
name: deploy-staging
description: Deploy the current main branch to the staging server and check that it is healthy.
---

# Deploy to staging

1. \`git pull --ff-only\` in ~/agent-home/workspace.
2. \`npm ci\` then \`npm test\`.
3. \`./deploy.sh staging\` and wait for "healthy".
4. Report the deployed commit and the health check output to the user.
`;

const SETUP_SH = `#!/usr/bin/env bash
# Set up the tools this agent uses (demo). The install below changes node_modules, package.json and
# package-lock.json: take a restore point first (AgentKeep: "Snapshot & run" above the line).
set -euo pipefail
npm install --no-audit --no-fund left-pad@1.3.0
`;

const README_MD = `# demo-agent-tools

Helper scripts for the demo agent. Run \`./setup.sh\` once to install the JavaScript tools.

The Python helpers need one package:

\`\`\`bash
pip install requests
\`\`\`
`;

/**
 * Create the demo agent under `root` (created if missing; must be an absolute path). Idempotent: when
 * `root/agent-home/workspace/setup.sh` already exists and `force` is not set, nothing is written and
 * the existing paths are returned with `created: false`. Every file is written to a temp file and
 * renamed into place. Throws if `root` is relative.
 */
export function createDemoAgent(root: string, options: DemoOptions = {}): DemoAgent {
  if (!path.isAbsolute(root)) {
    throw new Error(
      `The demo root "${root}" is not an absolute path. Pass an absolute folder, e.g. path.resolve(root).`,
    );
  }
  const agentHome = path.join(root, 'agent-home');
  const hermesHome = path.join(agentHome, '.hermes');
  const workspace = path.join(agentHome, 'workspace');
  const stateDir = path.join(root, 'state');
  const demo: DemoAgent = {
    root,
    agentHome,
    target: `dir:${agentHome}`,
    hermesHome,
    store: `hermes:${hermesHome}`,
    workspace,
    setupScript: path.join(workspace, 'setup.sh'),
    stateDir,
    created: true,
  };
  if (fs.existsSync(demo.setupScript) && !options.force) return { ...demo, created: false };
  if (options.force) {
    fs.rmSync(agentHome, { recursive: true, force: true });
    fs.rmSync(stateDir, { recursive: true, force: true });
  }

  write(path.join(hermesHome, 'config.yaml'), CONFIG_YAML);
  write(path.join(hermesHome, '.env'), ENV_FILE, 0o600);
  write(path.join(hermesHome, 'SOUL.md'), SOUL_MD);
  write(path.join(hermesHome, 'memories', 'MEMORY.md'), MEMORY_ENTRIES.join(SEP));
  write(path.join(hermesHome, 'memories', 'USER.md'), USER_ENTRIES.join(SEP));
  write(path.join(hermesHome, 'skills', 'devops', 'deploy-staging', 'SKILL.md'), SKILL_MD);

  write(
    path.join(workspace, 'package.json'),
    JSON.stringify({ name: 'demo-agent-tools', private: true }, null, 2) + '\n',
  );
  write(demo.setupScript, SETUP_SH, 0o755);
  write(path.join(workspace, 'README.md'), README_MD);
  const settings = {
    'agentkeep.target': demo.target,
    'agentkeep.stores': [demo.store],
    'agentkeep.stateDir': stateDir,
  };
  write(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2) + '\n');
  fs.mkdirSync(stateDir, { recursive: true });
  return demo;
}

/** Write `text` to `file` through a temp file + rename, creating parent folders; optional mode. */
function write(file: string, text: string, mode?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  fs.writeFileSync(tmp, text, mode === undefined ? undefined : { mode });
  if (mode !== undefined) fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

/** The memory entries the demo writes (for tests). */
export const DEMO_MEMORY_ENTRIES: readonly string[] = MEMORY_ENTRIES;
/** The user-profile entries the demo writes (for tests). */
export const DEMO_USER_ENTRIES: readonly string[] = USER_ENTRIES;
