/**
 * Load npm `ssh2` without its optional native parts. ssh2 tries `require('cpu-features')` and its
 * own `lib/protocol/crypto/build/Release/sshcrypto.node` (both built by install scripts where a
 * compiler is around) inside try/catch and falls back to Node's crypto and a WASM poly1305. The
 * sidecar loads no native modules, so both requires are refused here: the pure-JS path is the only
 * one that runs, on every machine alike (the esbuild bundle stubs the same two requests, see
 * esbuild.mjs).
 */
import Module from 'node:module';

type Ssh2 = typeof import('ssh2');
let loaded: Ssh2 | undefined;

/** Requests ssh2 makes for native code. */
export function isNativeSsh2Request(request: string): boolean {
  return request === 'cpu-features' || /(^|[\\/])sshcrypto\.node$/.test(request);
}

/** The ssh2 module, loaded once with its native parts refused. */
export function ssh2(): Ssh2 {
  if (loaded) return loaded;
  const M = Module as unknown as { _load(request: string, parent: unknown, isMain: boolean): unknown };
  const orig = M._load;
  M._load = function (this: unknown, request: string, parent: unknown, isMain: boolean): unknown {
    if (isNativeSsh2Request(request)) throw new Error('AgentKeep loads no native modules');
    return orig.call(this, request, parent, isMain);
  };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('ssh2') as Ssh2;
  } finally {
    M._load = orig;
  }
  return loaded;
}
