// Bundles the three outputs of AgentKeep:
//   out/extension.js   the VS Code extension (CommonJS, `vscode` external)
//   out/sidecar.js     the `agentkeep` bin (a Node program with a shebang): a small launcher that answers
//                      --version and the agent hooks' calls that need nothing itself (sidecar/cli/fast.ts)
//                      and loads out/cli.js for everything else, with V8's code cache (sidecar/codeCache.ts)
//   out/cli.js         the full CLI and the servers (sidecar/main.ts), loaded by out/sidecar.js only
//   out/create.js      the slim `restore-point create` of a dir: target (sidecar/createMain.ts), loaded by
//                      out/sidecar.js instead of out/cli.js for that command line (sidecar/cli/slimCreate.ts)
//   out/hook.js        the agent hook's small entry point (`hook install` writes it into the agent's
//                      config): stdin + the risk classifier only, so a non-risky call costs little
//   out/hook-full.js   the rest of the hook (restore points, memory records), loaded by hook.js only
//                      for a call that needs it
//   out/webview.js     the restore point details webview bundle (browser IIFE)
//   out/memory.js      the memory inspector webview bundle (browser IIFE, with @vscode-elements/elements)
// plus out/test/exthost/index.js, the mocha suite that runs inside a real extension host.
// Flags: --watch (rebuild on change), --production (minify, no source maps).
import * as esbuild from 'esbuild';
import { chmodSync, copyFileSync, cpSync, mkdirSync, rmSync } from 'node:fs';
import { asciiOnly } from './scripts/lib/ascii-bundle.cjs';
import { slimStubs } from './scripts/lib/slim-stubs.cjs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

/** Prints errors as `✘ [ERROR] file:line:col` so a VS Code watch task can match them. */
const problemMatcher = {
  name: 'problem-matcher',
  setup(build) {
    build.onStart(() => console.log(`[watch] build started: ${build.initialOptions.outfile}`));
    build.onEnd((result) => {
      for (const { text, location } of result.errors) {
        console.error(`✘ [ERROR] ${text}`);
        if (location) console.error(`    ${location.file}:${location.line}:${location.column}:`);
      }
      if (ASCII_BUNDLES.includes(build.initialOptions.outfile) && result.errors.length === 0)
        asciiOnly(build.initialOptions.outfile);
      if (build.initialOptions.outfile?.endsWith('sidecar.js') && result.errors.length === 0) {
        try {
          chmodSync(build.initialOptions.outfile, 0o755);
        } catch {
          /* first build in watch */
        }
      }
      console.log(`[watch] build finished: ${build.initialOptions.outfile}`);
    });
  },
};

/** The bundles a CLI process loads whole (out/cli.js, out/hook-full.js): ASCII (asciiOnly). */
const ASCII_BUNDLES = ['out/cli.js', 'out/create.js', 'out/hook-full.js'];

const common = {
  bundle: true,
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'warning',
  plugins: watch ? [problemMatcher] : [],
};

// ssh2's optional native parts (cpu-features, its sshcrypto.node binding) stay out of the bundle; the
// sidecar refuses them at run time too (sidecar/memory/transport/ssh2.ts), so ssh2 runs its pure-JS path.
// The memory lint's sentence encoder (sidecar/memory/lint/encoder.ts) is required only when a lint runs,
// from node_modules: TensorFlow.js finds its WASM files and the model its weights next to their own code.
const NO_NATIVE = ['cpu-features', '*.node', '@energetic-ai/*'];

// The slim create (out/create.js) leaves out what a create of a dir: target with local stores never
// uses: the Proxmox backend (proxmox-api) and the remote stores' transports (ssh2, the guest agents);
// sidecar/slimStub.ts stands in for them (scripts/lib/slim-stubs.cjs; its doc says why that is safe).

// mainFields: prefer ESM entries (jsonc-parser's UMD `main` does not bundle).
const node = { ...common, platform: 'node', target: 'node20', format: 'cjs', mainFields: ['module', 'main'] };

const builds = [
  { ...node, entryPoints: ['extension/extension.ts'], outfile: 'out/extension.js', external: ['vscode'] },
  {
    ...node,
    entryPoints: ['sidecar/bin.ts'],
    outfile: 'out/sidecar.js',
    banner: { js: '#!/usr/bin/env node' },
    minify: true,
    external: NO_NATIVE,
  },
  { ...node, entryPoints: ['sidecar/main.ts'], outfile: 'out/cli.js', external: NO_NATIVE },
  {
    ...node,
    entryPoints: ['sidecar/createMain.ts'],
    outfile: 'out/create.js',
    external: NO_NATIVE,
    plugins: [...node.plugins, slimStubs],
  },
  {
    ...node,
    entryPoints: ['sidecar/hooks/entry.ts'],
    outfile: 'out/hook.js',
    banner: { js: '#!/usr/bin/env node' },
    minify: true,
    external: NO_NATIVE,
  },
  { ...node, entryPoints: ['sidecar/hooks/run.ts'], outfile: 'out/hook-full.js', external: NO_NATIVE },
  {
    ...common,
    entryPoints: ['webview-ui/main.ts'],
    outfile: 'out/webview.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  },
  {
    ...common,
    entryPoints: ['webview-ui/memory/main.ts'],
    outfile: 'out/memory.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  },
  {
    ...node,
    entryPoints: ['test/exthost/index.ts'],
    outfile: 'out/test/exthost/index.js',
    external: ['vscode', 'mocha'],
  },
];

// node-sqlite3-wasm loads its .wasm from the directory of the running script (out/ once bundled).
mkdirSync('out', { recursive: true });
copyFileSync('node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.wasm', 'out/node-sqlite3-wasm.wasm');

// The memory lint's bundled sentence encoder (sidecar/memory/lint/encoder.ts) is not bundled (its
// weights and WASM are files it reads from its package): for the VSIX (--production, packaged with
// --no-dependencies) its three packages go to out/node_modules, where out/cli.js finds them first.
if (production) {
  for (const pkg of ['core', 'embeddings', 'model-embeddings-en']) {
    const to = `out/node_modules/@energetic-ai/${pkg}`;
    rmSync(to, { recursive: true, force: true });
    cpSync(`node_modules/@energetic-ai/${pkg}`, to, { recursive: true });
  }
}

if (watch) {
  for (const b of builds) {
    const ctx = await esbuild.context(b);
    await ctx.watch();
  }
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  for (const f of ASCII_BUNDLES) asciiOnly(f);
  chmodSync('out/sidecar.js', 0o755);
  chmodSync('out/hook.js', 0o755);
}
