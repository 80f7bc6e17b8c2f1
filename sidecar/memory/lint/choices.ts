/**
 * Choices among exclusive alternatives (issue 12): the slot model across sentence shapes. "Prefers
 * pnpm over npm", "Uses npm for everything", "Neovim is my editor", "Editor: VS Code", "Always use
 * zsh" all state one choice in one family of tools (the JavaScript package manager, the editor, the
 * shell ...), whatever the sentence looks like; two entries that choose different members of one
 * family, with nothing else that tells them apart (a scope, another subject), contradict each other.
 *
 * The families are a small documented list (`FAMILIES`: tool families a memory states a choice in),
 * not words picked case by case. A family is either exclusive by use (one JavaScript package manager,
 * one editor, one login shell, one terminal at a time: "uses X" is a choice) or only by preference
 * (people use several programming languages, databases, clouds, chat apps: only "prefers X", "X by
 * default", "always X", "only X", "X for everything" or the family's own noun, "Database: X", is a
 * choice). Pure functions over prepared entries; linear in the entry length.
 */
import { normOf, polarity, type SoftEntry } from './soft';
import { canon, type Token } from './text';

/** A family of exclusive alternatives. */
export interface Family {
  /** What the members are, for the evidence ("JavaScript package manager"). */
  name: string;
  /** Members as written (canonicalised at load). */
  members: string[];
  /** Whether "uses X" alone states the choice (one at a time), or only a preference does. */
  byUse: boolean;
  /** The family's own nouns: "editor", "shell" (canonical); next to a member they state the choice. */
  nouns: string[];
  /**
   * Words that must be next to a member for it to be a choice at all (natural languages: "replies in
   * English", "language: English"; "Loves Chinese food" names a cuisine, not a language).
   */
  only?: string[];
}

/**
 * Families (documented in docs/memory-lint.md, "Choices"): tools and settings a memory states one
 * choice of. Members are the names people write (canonicalised like every token: "PostgreSQL" and
 * "Postgres" are listed both).
 */
export const FAMILIES: Family[] = [
  {
    name: 'JavaScript package manager',
    members: ['npm', 'pnpm', 'yarn', 'bun'],
    byUse: true,
    nouns: ['pkg', 'manager'],
  },
  {
    name: 'Python package manager',
    members: ['pip', 'pipenv', 'poetry', 'uv', 'conda', 'pdm'],
    byUse: true,
    nouns: ['pkg', 'manager'],
  },
  {
    name: 'editor',
    members: [
      'vim',
      'neovim',
      'nvim',
      'emacs',
      'nano',
      'vscode',
      'helix',
      'sublime',
      'zed',
      'intellij',
      'pycharm',
      'webstorm',
      'jetbrains',
    ],
    byUse: true,
    nouns: ['editor', 'ide'],
  },
  { name: 'shell', members: ['bash', 'zsh', 'fish', 'powershell', 'nushell'], byUse: true, nouns: ['shell'] },
  {
    name: 'terminal emulator',
    members: ['iterm', 'iterm2', 'ghostty', 'alacritty', 'kitty', 'wezterm', 'konsole'],
    byUse: true,
    nouns: ['terminal'],
  },
  { name: 'operating system', members: ['macos', 'mac', 'linux', 'windows'], byUse: false, nouns: ['os'] },
  {
    name: 'Linux distribution',
    members: ['ubuntu', 'debian', 'fedora', 'arch', 'alpine', 'centos', 'rhel', 'nixos', 'manjaro'],
    byUse: false,
    nouns: ['distro', 'os'],
  },
  {
    name: 'programming language',
    members: ['python', 'javascript', 'typescript', 'go', 'golang', 'rust', 'java', 'ruby', 'php', 'kotlin', 'swift'],
    byUse: false,
    nouns: [],
  },
  {
    name: 'database',
    members: ['postgres', 'postgresql', 'mysql', 'sqlite', 'mariadb', 'mongodb'],
    byUse: false,
    nouns: ['db'],
  },
  { name: 'container engine', members: ['docker', 'podman'], byUse: false, nouns: ['container'] },
  { name: 'code host', members: ['github', 'gitlab', 'bitbucket', 'gitea', 'forgejo'], byUse: false, nouns: [] },
  { name: 'test runner', members: ['jest', 'vitest', 'mocha', 'pytest'], byUse: false, nouns: [] },
  { name: 'bundler', members: ['webpack', 'esbuild', 'vite', 'rollup', 'parcel'], byUse: false, nouns: ['bundler'] },
  { name: 'web framework', members: ['react', 'vue', 'svelte', 'angular'], byUse: false, nouns: ['framework'] },
  {
    name: 'browser',
    members: ['chrome', 'chromium', 'firefox', 'safari', 'brave'],
    byUse: false,
    nouns: ['browser'],
  },
  {
    name: 'browser automation',
    members: ['puppeteer', 'playwright', 'selenium', 'cypress'],
    byUse: false,
    nouns: ['automation'],
  },
  { name: 'indentation', members: ['tab', 'space'], byUse: true, nouns: ['indent'] },
  { name: 'colour theme', members: ['light', 'dark'], byUse: false, nouns: ['mode', 'theme'] },
  { name: 'temperature unit', members: ['celsius', 'fahrenheit'], byUse: true, nouns: ['unit', 'temperature'] },
  { name: 'unit system', members: ['metric', 'imperial'], byUse: true, nouns: ['unit', 'system'] },
  {
    name: 'reply language',
    members: [
      'english',
      'chinese',
      'german',
      'french',
      'spanish',
      'italian',
      'dutch',
      'japanese',
      'korean',
      'russian',
      'portuguese',
      'thai',
      'greek',
      'arabic',
    ],
    byUse: false,
    nouns: ['language'],
    only: ['reply', 'answer', 'respond', 'response', 'language', 'communication', 'communicate', 'write', 'output'],
  },
  // members are not listed: any time zone value (tzOffsets) is one, compared by its UTC offsets
  {
    name: 'time zone',
    members: [],
    byUse: false,
    nouns: ['timezone', 'zone', 'time', 'live', 'base', 'locate', 'work'],
  },
];

/** The family of time zones (the last of FAMILIES): its members are values, compared by offset. */
const TZ = FAMILIES.length - 1;

/** Abbreviations with one meaning (not CST, IST: China/Central, India/Ireland/Israel), as offsets in minutes. */
const TZ_ABBR = new Map<string, number[]>(
  Object.entries({
    utc: [0],
    gmt: [0],
    wet: [0],
    west: [60],
    bst: [60],
    cet: [60],
    cest: [120],
    eet: [120],
    eest: [180],
    msk: [180],
    pst: [-480],
    pdt: [-420],
    mst: [-420],
    mdt: [-360],
    est: [-300],
    edt: [-240],
    hkt: [480],
    sgt: [480],
    jst: [540],
    kst: [540],
    aest: [600],
    aedt: [660],
  }),
);
const IANA_AREA =
  /^(?:africa|america|antarctica|asia|atlantic|australia|europe|indian|pacific)\/[a-z_-]+(?:\/[a-z_-]+)?$/;
const tzMemo = new Map<string, number[] | null>();

/**
 * The UTC offsets (minutes) a time zone value names: "utc+8", "gmt-5", "utc+05:30", an IANA zone
 * ("europe/berlin": its offsets in January and July, from the ICU data Node carries: +60 and +120), or
 * an abbreviation with one meaning ("pst", "cet"); undefined when the word is no time zone. An IANA zone
 * gives two offsets [January, July], a fixed offset or an abbreviation one (sameZone compares them).
 */
export function tzOffsets(w: string): number[] | undefined {
  const hit = tzMemo.get(w);
  if (hit !== undefined) return hit ?? undefined;
  let out: number[] | undefined;
  const m = /^(?:utc|gmt)([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(w);
  if (m) out = [(m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0))];
  else if (TZ_ABBR.has(w)) out = TZ_ABBR.get(w);
  else if (IANA_AREA.test(w)) {
    const at = (month: number): number | undefined => {
      try {
        const f = new Intl.DateTimeFormat('en-US', { timeZone: w, timeZoneName: 'shortOffset' });
        const p = f.formatToParts(new Date(Date.UTC(2026, month, 15, 12))).find((x) => x.type === 'timeZoneName');
        const o = /^GMT(?:([+-])(\d{1,2})(?::(\d{2}))?)?$/.exec(p?.value ?? '');
        if (!o) return undefined;
        return o[1] ? (o[1] === '-' ? -1 : 1) * (Number(o[2]) * 60 + Number(o[3] ?? 0)) : 0;
      } catch {
        return undefined; // not a zone ICU knows
      }
    };
    const jan = at(0);
    const jul = at(6);
    if (jan !== undefined && jul !== undefined) out = [jan, jul];
  }
  if (tzMemo.size > 10_000) tzMemo.clear();
  tzMemo.set(w, out ?? null);
  return out;
}

/**
 * Whether two time zone values name one zone: two IANA zones when their January and July offsets are
 * equal ("America/New_York" and "America/Chicago" are not, though New York's winter is Chicago's
 * summer); a fixed offset or abbreviation and a zone when the offset is one of the zone's ("CET" /
 * "Europe/Berlin", "UTC+8" / "Asia/Shanghai").
 */
export function sameZone(x: string, y: string): boolean {
  if (!mayBeZone(x) || !mayBeZone(y)) return false;
  const a = tzOffsets(x);
  const b = tzOffsets(y);
  if (!a || !b) return false;
  if (a.length === 2 && b.length === 2) return a[0] === b[0] && a[1] === b[1];
  return a.some((o) => b.includes(o));
}

/** Whether two mentions name the same member (time zones: sameZone). */
function same(x: string, y: string, fam: number): boolean {
  return x === y || (fam === TZ && sameZone(x, y));
}

/** A choice word: a preference, a default, an exclusive quantifier ("for everything", "only"). */
const STRONG = new Set(
  [
    'prefer',
    'like',
    'choose',
    'pick',
    'default',
    'favorite',
    'always',
    'exclusively',
    'everything',
    'primary',
    'stick',
    'dislike',
  ].map(canon),
);
/** "Uses X": a choice in a family that is exclusive by use. */
const USE = new Set(['use', 'using'].map(canon));
/** Words that turn the member into what the entry is against ("hates vim", "avoid npm"). */
const AGAINST_CUE = new Set(['dislike']);
/** Ends of the window a cue is looked for in (a member and its cue are in one clause). */
const CLAUSE = /[.;!?\n。；！？]/;

const MEMBER = new Map<string, number>();
FAMILIES.forEach((f, i) => {
  f.members = f.members.map((m) => canon(m));
  f.nouns = f.nouns.map((m) => canon(m));
  if (f.only) f.only = f.only.map((m) => canon(m));
  for (const m of f.members) if (!MEMBER.has(m)) MEMBER.set(m, i);
});

/** The family of a canonical word, if it is a member of one. */
export function familyOf(w: string): number | undefined {
  const m = MEMBER.get(w);
  if (m !== undefined) return m;
  return mayBeZone(w) && tzOffsets(w) ? TZ : undefined;
}

/**
 * Whether a word has one of the three forms tzOffsets reads (an IANA zone has a "/", a fixed offset
 * starts with "utc" or "gmt", or an abbreviation of TZ_ABBR): no other word is looked up there.
 */
function mayBeZone(w: string): boolean {
  return w.includes('/') || TZ_ABBR.has(w) || w.startsWith('utc') || w.startsWith('gmt');
}

/** One mention of a family member. */
export interface Mention {
  family: number;
  member: string;
  /** As written in the entry. */
  shown: string;
  /** Stated as a choice (a cue next to it in its clause). */
  choice: boolean;
  /** What the entry is against: negated, after "over"/"instead of", or "hates X". */
  against: boolean;
  /** The cue that made it a choice. */
  cue?: string;
}

/** What choices reads of an entry (a subset of pairs.ts Prepared). */
export interface ChoiceEntry extends SoftEntry {
  toks: Token[];
  mentions?: Mention[];
  /** scopeWords per family, computed on first use (a pair of entries asks for them again and again). */
  scopes?: Map<number, Set<string>>;
}

/** The mentions of family members in an entry, each with whether it is stated as a choice (computed once). */
export function mentions(p: ChoiceEntry): Mention[] {
  if (p.mentions) return p.mentions;
  const out: Mention[] = [];
  let pol: Map<string, number> | undefined;
  const s = normOf(p);
  p.toks.forEach((t, k) => {
    if (t.type !== 'word' || t.cjk) return;
    // names of two words: "VS Code", "Visual Studio Code", "Sublime Text"
    const next = p.toks[k + 1]?.t;
    if (t.t === 'vs' && next === 'code') return mention(t, k, 'vscode', 'VS Code');
    if (t.t === 'visual' && next === 'studio' && p.toks[k + 2]?.t === 'code')
      return mention(t, k, 'vscode', 'Visual Studio Code');
    // (a slashed compound names each of its parts: "Puppeteer/Chromium")
    // (but "Europe/Berlin" is one time zone)
    const whole = !t.t.includes('/') || familyOf(t.t) !== undefined;
    for (const w of whole ? [t.t] : t.t.split('/').map((x) => canon(x))) mention(t, k, w);
  });
  function mention(t: Token, k: number, w: string, as?: string): void {
    const fam = familyOf(w);
    if (fam === undefined) return;
    const f = FAMILIES[fam];
    pol ??= polarity(p);
    let cue: string | undefined;
    // in a negation's scope, unless a choice starts again after a comma ("Never use yarn, use pnpm")
    let against = (pol.get(t.t) ?? 1) < 0 && !restarted(s, t.at ?? 0);
    // the cue: within three tokens before or two after, in the same clause
    for (let d = -3; d <= 2 && !cue; d++) {
      const u = p.toks[k + d];
      if (!d || !u || u.type !== 'word' || u.at === undefined || t.at === undefined) continue;
      const between = d < 0 ? s.slice(u.at, t.at) : s.slice(t.at, u.at);
      if (CLAUSE.test(between)) continue;
      if (f.only && !f.only.includes(u.t)) continue;
      if (STRONG.has(u.t) || f.nouns.includes(u.t) || (f.byUse && USE.has(u.t)) || f.only?.includes(u.t)) {
        cue = u.t;
        if (AGAINST_CUE.has(u.t) && d < 0) against = true;
      }
    }
    // the member as written ("Emacs", not the canonical "emac"), for the evidence
    const shown = as ?? (t.at === undefined ? w : (/^[^\s,.;:!?()]+/.exec(s.slice(t.at))?.[0] ?? w));
    out.push({ family: fam, member: w, shown, choice: cue !== undefined, against, ...(cue ? { cue } : {}) });
  }
  p.mentions = out;
  return out;
}

/** A choice word right after a comma that follows the last negation before `at`: the negation's scope ended. */
function restarted(s: string, at: number): boolean {
  const before = s.slice(Math.max(0, at - 80), at);
  let neg = -1;
  for (const m of before.matchAll(/\b(?:not|no|never|without|avoid)\b/g)) neg = m.index;
  if (neg < 0) return false;
  return /,\s*(?:and\s+|but\s+)?(?:use|uses|using|prefer|prefers|like|likes|choose|chooses|pick|picks|default|always|only)\b[^,]*$/.test(
    before.slice(neg),
  );
}

/** Words a choice is stated with, besides the members: they say nothing about which subject or scope. */
const GENERIC = new Set(
  [
    ...STRONG,
    ...USE,
    'now',
    'currently',
    'nowadays',
    'only',
    'instead',
    'tool',
    'thing',
    'stuff',
    'anything',
    'everywhere',
    'mainly',
    'mostly',
    'usually',
    'generally',
    'go-to',
    'want',
    'wants',
    // the words of a weak update marker ("these days", "lately") and of the families' compound nouns
    'day',
    'lately',
    'recently',
    'login',
    'text',
    'emulator',
    'package',
  ].map(canon),
);

/** Prepositions that open a scope ("for indentation in Go", "on the staging box"). */
const SCOPE = /\b(?:for|in|on|at|inside|within|when|during|under)\s+/g;

/** The content words of the scopes of an entry (up to three words after each scope preposition, in the clause). */
function scopeWords(p: ChoiceEntry, fam: number): Set<string> {
  p.scopes ??= new Map();
  const hit = p.scopes.get(fam);
  if (hit) return hit;
  const out = scopeWordsOf(p, fam);
  p.scopes.set(fam, out);
  return out;
}

/** scopeWords, computed. */
function scopeWordsOf(p: ChoiceEntry, fam: number): Set<string> {
  const s = normOf(p);
  const out = new Set<string>();
  for (const m of s.matchAll(SCOPE)) {
    const from = m.index + m[0].length;
    let n = 0;
    for (const t of p.toks) {
      if (t.at === undefined || t.at < from) continue;
      if (CLAUSE.test(s.slice(from, t.at)) || /[,(]/.test(s.slice(from, t.at))) break;
      if (n++ >= 3) break;
      if (t.type !== 'word' || GENERIC.has(t.t) || FAMILIES[fam].members.includes(t.t)) continue;
      if (FAMILIES[fam].only?.includes(t.t)) continue;
      out.add(t.t);
    }
  }
  return out;
}

/** Two entries choosing differently in one family. */
export interface ChoiceConflict {
  family: string;
  /** The member each entry chooses. */
  a: string;
  b: string;
  /** The cues, for the evidence ("prefer", "use", "editor"). */
  cueA: string;
  cueB: string;
}

/**
 * Whether two entries choose different members of one family: each states a choice (a cue next to
 * the member) of a member the other does not name as chosen or used at all, and nothing tells the two
 * apart — no scope on each side that the other lacks ("for indentation in Go" / "in Python"), no word
 * of a subject on each side that the other lacks ("the frontend uses npm" / "the backend uses pnpm"),
 * and no second family where they also differ with a scope. `rest`: each side's content words the
 * other lacks (pairs.ts, after typos).
 */
export function choiceConflict(
  a: ChoiceEntry,
  b: ChoiceEntry,
  restA: string[],
  restB: string[],
): ChoiceConflict | undefined {
  const ma = mentions(a);
  const mb = mentions(b);
  if (!ma.length || !mb.length) return undefined;
  for (const x of ma) {
    if (!x.choice || x.against) continue;
    for (const y of mb) {
      if (y.family !== x.family || !y.choice || y.against || same(x.member, y.member, x.family)) continue;
      // the other entry names this side's member as something it uses or chooses too: a list, not a choice
      if (mb.some((z) => same(z.member, x.member, x.family) && !z.against)) continue;
      if (ma.some((z) => same(z.member, y.member, x.family) && !z.against)) continue;
      // a subject or scope on each side: two things, not one choice
      const nouns = FAMILIES[x.family].nouns;
      const own = (ws: string[]): string[] =>
        ws.filter(
          (w) => !GENERIC.has(w) && familyOf(w) === undefined && !nouns.includes(w) && !partOf(w, x.member, y.member),
        );
      if (own(restA).length && own(restB).length) return undefined;
      const sa = scopeWords(a, x.family);
      const sb = scopeWords(b, x.family);
      if ([...sa].some((w) => !sb.has(w)) && [...sb].some((w) => !sa.has(w))) return undefined;
      // members of another family that differ on both sides, in a scope: "tabs in Go" / "spaces in Python"
      const famsA = new Set(ma.filter((z) => z.family !== x.family).map((z) => z.member));
      const famsB = new Set(mb.filter((z) => z.family !== x.family).map((z) => z.member));
      const otherA = [...famsA].filter((w) => !famsB.has(w));
      const otherB = [...famsB].filter((w) => !famsA.has(w));
      // members of another family that differ on both sides: two subjects ("Go code uses tabs" / "Python
      // code uses 4 spaces"), or a second choice that the other rules judge ("Puppeteer/Chromium" /
      // "Playwright with Firefox")
      if (otherA.some((u) => otherB.some((v) => familyOf(u) === familyOf(v)))) return undefined;
      return { family: FAMILIES[x.family].name, a: x.shown, b: y.shown, cueA: x.cue!, cueB: y.cue! };
    }
  }
  return undefined;
}

/** Whether a word is a compound of a chosen member ("oh-my-zsh" beside "zsh"). */
function partOf(w: string, ...members: string[]): boolean {
  return (w.includes('-') || w.includes('/')) && w.split(/[-/]/).some((x) => members.includes(canon(x)));
}

/**
 * Opposite characters of Chinese (长/短 long/short, 高/低, 多/少, 大/小, 快/慢, 早/晚, 新/旧, 开/关,
 * 冷/热, 深/浅, 涨/跌, 买/卖, 增/减, 强/弱, 轻/重, 远/近, 松/紧, 难/易, 简/繁, 明/暗, 黑/白, 真/假,
 * 正/负, 贵/廉): a word of two characters whose one character is swapped for its opposite, the other
 * kept, is its antonym ("长线" / "短线" long-term / short-term, "高频" / "低频").
 */
const ZH_OPPOSITE = new Map<string, string>();
for (const pair of '长短 高低 多少 大小 快慢 早晚 新旧 开关 冷热 深浅 涨跌 买卖 增减 强弱 轻重 远近 松紧 难易 简繁 明暗 黑白 真假 正负 贵廉'.split(
  ' ',
)) {
  ZH_OPPOSITE.set(pair[0], pair[1]);
  ZH_OPPOSITE.set(pair[1], pair[0]);
}

/** Whether two Chinese character bigrams (text.ts tokens) are antonyms by one opposite character (ZH_OPPOSITE). */
export function cjkAntonyms(x: string, y: string): boolean {
  if (x.length !== 2 || y.length !== 2 || x === y) return false;
  if (x[1] === y[1]) return ZH_OPPOSITE.get(x[0]) === y[0];
  if (x[0] === y[0]) return ZH_OPPOSITE.get(x[1]) === y[1];
  return false;
}
