// Shared by esbuild.mjs and the tests' bundler (test/unit/helpers/sidecar.ts): plain CommonJS so both load it.
/* global require, exports, __dirname */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const path = require('node:path');

/**
 * The imports the slim create bundle (out/create.js, sidecar/createMain.ts) resolves to
 * sidecar/slimStub.ts instead of the real module: the Proxmox backend (proxmox-api) and the remote
 * stores' transports (ssh2, the guest agents), which a create of a dir: target with stores on this
 * machine never uses (sidecar/cli/slimCreate.ts decides which command lines go there).
 */
const SLIM_STUBS = [
  { importer: /sidecar[\\/]machine[\\/]index\.ts$/, path: /^\.\/proxmox$/ },
  { importer: /sidecar[\\/]memory[\\/](files|reach)\.ts$/, path: /^\.\/transport\/(ssh|guestAgent|pveAgent)$/ },
];

/** The esbuild plugin that does it (for the out/create.js build only). */
exports.slimStubs = {
  name: 'slim-stubs',
  setup(build) {
    const stub = path.join(__dirname, '..', '..', 'sidecar', 'slimStub.ts');
    build.onResolve({ filter: /^\.\// }, (a) =>
      SLIM_STUBS.some((s) => s.importer.test(a.importer) && s.path.test(a.path)) ? { path: stub } : undefined,
    );
  },
};
