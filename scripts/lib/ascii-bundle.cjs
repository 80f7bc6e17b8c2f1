// Shared by esbuild.mjs and the tests' bundler (test/unit/helpers/sidecar.ts): plain CommonJS so both load it.
/* global require, exports */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { readFileSync, writeFileSync } = require('node:fs');

/**
 * Rewrite every non-ASCII character of a bundle as a `\uXXXX` escape (UTF-16 code units). esbuild escapes them in strings
 * and templates but leaves comments and regular expression literals as written; one such character makes
 * V8 hold the whole 5 MB source as a two-byte string (11 MB instead of 5.6 MB: measured, the largest
 * object of a CLI process; issue 14), and sidecar/codeCache.ts reads an ASCII bundle as latin1. In a
 * comment, a string, an identifier or a regex (with or without the u flag, also in a character class)
 * the escape means the same character; one right after a backslash would not, so that fails the build.
 * @param {string} file the bundle, rewritten in place (left alone when it is ASCII already)
 * @throws Error for a non-ASCII character right after a backslash
 */
exports.asciiOnly = function asciiOnly(file) {
  const src = readFileSync(file, 'utf8');
  if (!/[\u0080-\uffff]/.test(src)) return;
  const out = src.replace(/[\u0080-\uffff]/g, (c, at) => {
    let n = 0;
    while (src[at - 1 - n] === '\\') n++;
    if (n % 2) throw new Error(`${file}: a non-ASCII character right after a backslash at ${at}: cannot escape it`);
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  writeFileSync(file, out);
};
