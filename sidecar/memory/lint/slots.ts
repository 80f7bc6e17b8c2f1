/**
 * The slot model of the memory lint (issue 12): what an entry says about which attribute, so that
 * two wordings of one attribute with different values are found as a conflict, and a change over
 * time ("moved from A to B", "switched to", "now prefers", "upgraded to", "no longer", "已迁移",
 * "改为", "已弃用") as superseded.
 *
 * Three pieces, all pure and linear in the entry length:
 * - `updateMarker(text)`: the words that say a fact changed (English and Chinese, a few Thai), and
 *   the from/to values when the entry names them;
 * - `frameDiff(a, b)`: the two token sequences aligned (longest common subsequence); when they differ
 *   in exactly one short span on each side, the shared frame and the two spans ("Kiran lives in
 *   [Whitefield]" / "Kiran lives in [Electronic City]");
 * - `labelValue(text)`: "Label: value" lines ("**Timezone:** Asia/Shanghai", "- Language: Thai
 *   only", "称呼偏好：叫他“帅哥”").
 */
import { canon, normalise, tokens, type Token } from './text';

/** What says that an entry records a change. */
export interface UpdateMarker {
  /** The marker as written, e.g. "moved from", "no longer", "已迁移". */
  phrase: string;
  /** The entry says the old value is gone ("no longer", "deprecated", "已弃用", "removed"). */
  retires: boolean;
  /** The value it changed from, when named ("moved from Whitefield to Electronic City"). */
  from?: string;
  /** The value it changed to, when named. */
  to?: string;
  /**
   * The marker only says what holds now ("as of June", "these days", "since 2026", "ora", "现在"), not
   * that something changed: it tells which entry is newer when the two disagree by another rule, and
   * is no change by itself ("pod is RUNNING as of 2026-06-27" restates "pod running").
   */
  weak?: boolean;
}

const EN_FROM_TO =
  /\b(moved|migrated|switched|changed|upgraded|downgraded|renamed|transitioned|converted|went)\b[^.;]{0,40}?\bfrom\s+([^.;,()]{1,60}?)\s+(?:to|into)\s+([^.;,()]{1,60})/;
const EN_TO =
  /\b(moved|migrated|switched|upgraded|downgraded|renamed|changed|converted|relocated)\s+(?:over\s+|back\s+|(?:the|my|our|his|her|their|its)\s+[\w-]+(?:\s+[\w-]+)?\s+)?(?:to|into)\s+([^.;,()]{1,60})/;
const EN_COLON = /\b(changed|updated|switched|moved|migrated|renamed)\s*:/;
const EN_NOW = /\b(?:nowadays|these days|now|currently)\b/;
/**
 * "as of", "since 2026", "since March", "since last year", "from now on", "going forward", "these days",
 * "nowadays": the entry states what holds from then on (a weak marker: see UpdateMarker.weak). ("since
 * the upgrade" names an event, not a time: "Postgres 16 since the upgrade" / "Postgres 15" stays a
 * contradiction, with the file order as a hint.)
 */
const EN_SINCE =
  /\bas of\s+(?:\d|now|today|this|last|the|january|february|march|april|may|june|july|august|september|october|november|december)|\bsince\s+(?:\d{4}\b|(?:january|february|march|april|may|june|july|august|september|october|november|december)\b|(?:last|this)\s+(?:week|month|year)\b)|\bfrom now on\b|\bgoing forward\b|\bthese days\b|\bnowadays\b/;
/** "X replaced Y", "replacing Y": a change. */
const EN_REPLACED = /\breplac(?:ed|es|ing)\b/;
/**
 * Markers in other languages of the Latin script (a few words each, documented in docs/memory-lint.md):
 * Italian "non più", "ora", "adesso", "d'ora in poi", "passato a", "sostituito"; Spanish "ya no",
 * "ahora", "cambió a"; French "ne … plus", "désormais", "maintenant"; German "nicht mehr", "jetzt",
 * "inzwischen", "umgestiegen auf"; Portuguese "não … mais", "agora".
 */
const OTHER_RETIRE =
  /(?:^|[^\p{L}])(?:non (?:\p{L}+ )?più|ya no|nicht mehr|kein(?:e|en)? \p{L}+ mehr|não (?:\p{L}+ )?mais|já não|n'(?:\p{L}+) plus|ne (?:\p{L}+ )?plus)(?![\p{L}])/u;
const OTHER_SWITCH =
  /(?:^|[^\p{L}])(?:passat[oaie] a|sostituit[oaie]|cambiat[oaie] in|cambió a|cambiado a|remplacé|umgestiegen auf|gewechselt (?:zu|auf)|ersetzt|mudou para)(?![\p{L}])/u;
/** "now", "from now on" in those languages (weak markers). */
const OTHER_NOW =
  /(?:^|[^\p{L}])(?:ora|adesso|d'ora in poi|ahora|désormais|maintenant|jetzt|inzwischen|mittlerweile|agora)(?![\p{L}])/u;
/** Chinese "now / currently / at present", "changed to", "replaced by": 现在, 目前, 如今, 现为, 已换, 已改. */
const ZH_NOW = /(现在|目前|如今|现为|已换|已改|已替换|替换为)/;
const EN_RETIRE =
  /\b(?:no longer|not any ?more|anymore|deprecated|retired|discontinued|decommissioned|removed|deleted|replaced (?:by|with)|superseded|obsolete|was (?:dropped|removed))\b/;
const EN_CHANGED =
  /\((?:was|formerly|previously|changed from)\s+([^)]{1,40})\)|\binstead of\s+([^.;,()]{1,40})|\bafter the (?:move|upgrade|migration|reinstall|switch)\b/;
const ZH_CHANGE =
  /(已迁移|迁移到|迁移至|切换到|切换为|切到|改为|改成|换成|换为|改用|已改名|改名为|更名为|升级到|升级为|已升级|现用|现在用|现改)/;
const ZH_RETIRE = /(已弃用|弃用|不再|已关停|关停|已删除|已下线|下线了|停用|ไม่มีอยู่แล้ว|ถูกลบ)/;
const ZH_FROM_TO = /从\s*([^，。；,;]{1,30}?)\s*(?:切换|迁移|改|换|升级)(?:到|为|成|至)\s*([^，。；,;]{1,30})/;

/**
 * The update marker of an entry, if any. "now" alone counts only next to a verb of state ("now
 * prefers", "now runs"): a bare "now" in "do it now" is no change.
 */
export function updateMarker(text: string): UpdateMarker | undefined {
  const s = normalise(text);
  let m = EN_FROM_TO.exec(s);
  if (m) return { phrase: `${m[1]} from`, retires: false, from: m[2].trim(), to: m[3].trim() };
  m = ZH_FROM_TO.exec(s);
  if (m) return { phrase: '从…到', retires: false, from: m[1].trim(), to: m[2].trim() };
  m = EN_TO.exec(s);
  if (m) return { phrase: `${m[1]} to`, retires: false, to: m[2].trim() };
  m = EN_COLON.exec(s);
  if (m) return { phrase: m[1], retires: false };
  m = EN_RETIRE.exec(s);
  if (m) return { phrase: m[0], retires: true };
  m = ZH_RETIRE.exec(s);
  if (m) return { phrase: m[0], retires: true };
  m = ZH_CHANGE.exec(s);
  if (m) return { phrase: m[0], retires: false };
  m = EN_CHANGED.exec(s);
  if (m)
    return {
      phrase: m[0].replace(/\s+\S+$/, '').slice(0, 24),
      retires: false,
      ...(m[1] || m[2] ? { from: (m[1] ?? m[2]).trim() } : {}),
    };
  m = EN_REPLACED.exec(s);
  if (m) return { phrase: m[0], retires: false };
  m = OTHER_RETIRE.exec(s);
  if (m) return { phrase: m[0].trim(), retires: true };
  m = OTHER_SWITCH.exec(s);
  if (m) return { phrase: m[0].replace(/^[^\p{L}]/u, ''), retires: false };
  m = EN_SINCE.exec(s) ?? OTHER_NOW.exec(s) ?? ZH_NOW.exec(s);
  if (m) return { phrase: m[0].replace(/^[^\p{L}\p{Script=Han}]/u, '').trim(), retires: false, weak: true };
  m = EN_NOW.exec(s);
  if (
    m &&
    !/\b(?:right|for|until|till|just|by|from) now\b|\bnow (?:and then|or never)\b/.test(s) &&
    (/\b(?:now|currently)\s+(?:\w+\s+)?(?:is|are|uses?|using|prefers?|likes?|runs?|lives?|works?|wants?|goes|go|routes?|has|on|at|in|called|named|set|sets|defaults?|points?|located|based|hosted|deployed|stored|sits?|listens?|serves?|moved|switched|\d)/.test(
      s,
    ) ||
      /\b(?:is|are|uses?|runs?|lives?|prefers?|likes?|works?|wants?|has|goes)\b[^.;]{0,40}\bnow[.!)]?\s*$/.test(s) ||
      // "Editor: now Zed", "shell now zsh": "now" right before the new value after a label or a noun
      /(?:^|[:：]\s*|\b\w+\s+)now\s+[\w./@-]+\s*[.!)]?\s*$/.test(s))
  )
    return { phrase: m[0], retires: false };
  return undefined;
}

/** Past tense of a state: "lived in", "was", "used to" — an entry about the past agrees with a later change. */
export function aboutThePast(text: string): boolean {
  return /\b(?:lived|used to|formerly|previously|had been|was born)\b/.test(normalise(text));
}

/** Frame tokens: canonical words and values in order, without the words that only mark a change. */
const MARK_WORDS = new Set([
  'now',
  'currently',
  'nowadays',
  'anymore',
  'but',
  'still',
  'again',
  'change',
  'changed',
  'update',
  'updated',
]);

/** The tokens of an entry that frameDiff aligns (without the words that only mark a change). */
export function frameTokens(toks: Token[]): Token[] {
  return toks.filter((t) => !(t.type === 'word' && MARK_WORDS.has(t.t)));
}

/** Two spans that differ in otherwise equal wording. */
export interface FrameDiff {
  /** Tokens both share, in order (the frame). */
  frame: string[];
  /** What stands in the differing place on each side (may be empty on one side: an insertion). */
  a: Token[];
  b: Token[];
  /** Tokens of the frame right before the differing place (up to 2), for the attribute. */
  before: string[];
}

/**
 * Align two token sequences (LCS, both capped at 80 tokens) and return the single differing hunk,
 * or undefined when they differ in more than one place or not at all.
 */
export function frameDiff(a: string | Token[], b: string | Token[]): FrameDiff | undefined {
  const r = frameHunks(a, b);
  if (!r || r.hunks.length !== 1) return undefined;
  const [h] = r.hunks;
  return { frame: r.frame, a: h.a, b: h.b, before: r.frame.slice(Math.max(0, h.at - 2), h.at) };
}

/** One place where two aligned wordings differ: the tokens of each side there, and where it is in the frame. */
export interface Hunk {
  a: Token[];
  b: Token[];
  /** Index into the frame of the first shared token after the hunk. */
  at: number;
}

/**
 * Align two token sequences (LCS, both capped at 80 tokens, without the words that only mark a
 * change): the shared frame and every hunk where they differ; undefined when either is empty.
 */
export function frameHunks(a: string | Token[], b: string | Token[]): { frame: string[]; hunks: Hunk[] } | undefined {
  if (typeof a === 'string' || typeof b === 'string') return alignHunks(a, b);
  for (const m of hunkMemo) if (m.a === a && m.b === b) return m.r;
  const r = alignHunks(a, b);
  hunkMemo.unshift({ a, b, r });
  if (hunkMemo.length > 2) hunkMemo.pop();
  return r;
}

/**
 * The last two alignments of token arrays (by identity: pairs.ts passes each entry's cached frame):
 * several rules in a row ask for the same pair, and the result is only read, never changed.
 */
const hunkMemo: Array<{ a: Token[]; b: Token[]; r: ReturnType<typeof alignHunks> }> = [];

/** frameHunks, computed. */
function alignHunks(a: string | Token[], b: string | Token[]): { frame: string[]; hunks: Hunk[] } | undefined {
  const x = frameTokens(typeof a === 'string' ? tokens(a) : a).slice(0, 80);
  const y = frameTokens(typeof b === 'string' ? tokens(b) : b).slice(0, 80);
  const n = x.length;
  const m = y.length;
  if (!n || !m) return undefined;
  const W = m + 1;
  const L = new Uint16Array((n + 1) * W);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i * W + j] = x[i].t === y[j].t ? L[(i + 1) * W + j + 1] + 1 : Math.max(L[(i + 1) * W + j], L[i * W + j + 1]);
  const frame: string[] = [];
  const hunks: Hunk[] = [];
  let cur: Hunk | undefined;
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i].t === y[j].t) {
      if (cur) hunks.push(cur);
      cur = undefined;
      frame.push(x[i].t);
      i++;
      j++;
    } else {
      cur ??= { a: [], b: [], at: frame.length };
      if (j < m && (i >= n || L[i * W + j + 1] >= L[(i + 1) * W + j])) cur.b.push(y[j++]);
      else cur.a.push(x[i++]);
    }
  }
  if (cur) hunks.push(cur);
  return { frame, hunks };
}

/** A "Label: value" statement. */
export interface LabelValue {
  /** Canonical words of the label (e.g. ["timezone"], ["preferred", "language"]). */
  label: string[];
  /** The value as written (trimmed), and its canonical tokens. */
  value: string;
  valueTokens: string[];
}

const LABEL_LINE = /^\s*(?:[-*•]\s*)?(?:\*\*)?([^:：\n*]{1,32}?)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(.+?)\s*$/u;

/** The "Label: value" statements of an entry (one per line; only the first clause of the value). */
export function labelValues(text: string): LabelValue[] {
  const out: LabelValue[] = [];
  for (const line of text.split('\n')) {
    const m = LABEL_LINE.exec(line);
    if (!m || /^\s*(?:https?|ssh|git)$/i.test(m[1])) continue;
    const label = tokens(m[1])
      .filter((t) => t.type === 'word')
      .map((t) => t.t);
    if (!label.length || label.length > 4) continue;
    const value = m[2].split(/[.;。；]\s|[。；]/u)[0].trim();
    out.push({ label, value, valueTokens: tokens(value).map((t) => t.t) });
  }
  return out;
}

/** Canonical form of one word (exported for the rules that compare a span with a lexicon). */
export function canonWord(w: string): string {
  return canon(w.toLowerCase());
}
