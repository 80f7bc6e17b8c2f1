/**
 * Writing lines to the terminal, shared by the CLI (./index.ts processIO) and the launcher's fast
 * paths (./fast.ts), with no other imports so the launcher stays small.
 */

/**
 * Text made safe for a terminal: control characters (C0 but tab and newline, DEL, C1: ESC sequences
 * that retitle the window, clear the screen or hide text) shown as visible `\xNN` escapes. Memory
 * entries and labels can come from an agent (and from a prompt injection), so the CLI never lets
 * them drive the terminal.
 */
export function terminalSafe(s: string): string {
  return s.replace(
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/** Write `s` as one line (a trailing newline is not doubled); through terminalSafe when the stream is a terminal. */
export function writeLine(stream: NodeJS.WriteStream, s: string): void {
  const line = s.endsWith('\n') ? s.slice(0, -1) : s;
  stream.write(`${stream.isTTY ? terminalSafe(line) : line}\n`);
}
