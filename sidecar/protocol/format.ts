/**
 * The one formatting module of every front end: sizes, ages and one-line excerpts of text, so that
 * the CLI, the VS Code extension, the webviews and the sidecar's own messages say the same thing the
 * same way. Pure functions with no imports (the webviews bundle it for the browser).
 *
 * Units: sizes are powers of 1024 and labelled with their binary (IEC) names, KiB, MiB, GiB, TiB, PiB
 * ("10 GiB" is 10 × 1024³ bytes); ages are measured from ISO 8601 times in milliseconds since the epoch.
 */

/** The binary units above bytes, in order. */
const BINARY_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * A byte count for people: "512 B", "1.5 KiB", "12 MiB", "9.5 GiB" (powers of 1024). Below 10 of a
 * unit one decimal is shown, from 10 on whole numbers; a value that rounds to 1024 of a unit moves to
 * the next unit ("1.0 MiB", never "1024 KiB").
 * @param n bytes; a negative, fractional or non-finite value is shown as it is, with "B"
 */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 1024) return `${n} B`;
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < BINARY_UNITS.length - 1);
  let text = v < 10 ? v.toFixed(1) : String(Math.round(v));
  if (text === '10.0') text = '10';
  if (text === '1024' && i < BINARY_UNITS.length - 1) {
    i++;
    text = '1.0';
  }
  return `${text} ${BINARY_UNITS[i]}`;
}

/**
 * How long ago an ISO 8601 time was, relative to `now`: "just now" (under 10 s, and for times in the
 * future: clock skew), "42s ago", "5m ago", "36h ago" (hours up to 48), "3d ago". Units are whole
 * and rounded down, so "5m ago" means at least five minutes.
 * @param iso an ISO 8601 time, e.g. a restore point's createdAt
 * @param now milliseconds since the epoch (default: the current time)
 * @returns the age, or "" when `iso` does not parse as a time
 */
export function formatAge(iso: string, now: number = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.floor((now - t) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ago`;
  return `${Math.floor(h / 24)}d ago`;
}

/** `text` cut to at most `max` characters (code points), the last one an ellipsis when it was cut. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, Math.max(0, max - 1)).join('')}…` : text;
}

/**
 * The first non-blank line of `text`, trimmed and cut to `max` characters with an ellipsis: the title
 * of a memory entry, a label or a message. Blank text gives "".
 * @param max the longest result, in characters (default 120)
 */
export function firstLine(text: string, max = 120): string {
  const line = text.split('\n').find((l) => l.trim()) ?? '';
  return truncate(line.trim(), max);
}

/**
 * `text` with every control character (C0 including newline and tab, DEL, C1) shown as a visible
 * `\xNN` escape, as the CLI's terminalSafe shows them: a label or an agent's command echoed inside a
 * line ("Created restore point …", the hook's stderr line) can neither start a line of its own nor
 * drive the terminal (ESC sequences that clear the screen or retitle the window).
 */
export function escapeControls(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/**
 * All of `text` on one line: every run of whitespace (newlines included) becomes one space, the ends
 * are trimmed, and the result is cut to `max` characters with an ellipsis. For tool-call arguments and
 * messages shown in a list.
 * @param max the longest result, in characters (default 120)
 */
export function oneLine(text: string, max = 120): string {
  return truncate(text.replace(/\s+/g, ' ').trim(), max);
}

/** C escapes of the control characters a path may hold (git's core.quotePath style). */
const C_ESCAPES: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

/**
 * A file path as one unambiguous line: unchanged when it is plain; else in double quotes with C
 * escapes (`\n`, `\t`, `\"`, `\\`, other control characters as `\x1b`), as git prints such names,
 * so a name holding a newline cannot pass for two files and a terminal escape is not run.
 * Leading or trailing spaces are quoted too (they are invisible otherwise).
 */
export function displayPath(p: string): string {
  // eslint-disable-next-line no-control-regex
  const special = /[\u0000-\u001f\u007f"\\]/g;
  if (!special.test(p) && !/^ | $/.test(p)) return p;
  const body = p.replace(special, (c) => C_ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `"${body}"`;
}
