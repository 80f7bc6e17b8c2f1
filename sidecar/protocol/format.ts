/**
 * Shared formatting of the sidecar and its front ends (pure functions, no imports, so the extension
 * and the webviews can use it too).
 */

/** Bytes as "512 B", "1.5 KB", "12.0 MB" (powers of 1024; the CLI's `size`, whose output it keeps). */
export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}
