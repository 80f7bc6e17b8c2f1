/**
 * The demo agent's session history (written to state.db by demoHistory.ts): which user message led
 * to which MEMORY.md entry. Plain data, so the extension-host tests can import it without SQLite.
 */
import { DEMO_MEMORY_ENTRIES } from '../../extension/demo';

/** One Hermes session whose `memory` tool call added `entry`. */
export interface DemoSession {
  id: string;
  source: string;
  title: string;
  /** Seconds since the epoch. */
  start: number;
  user: string;
  entry: string;
  reply: string;
}

/** The two demo sessions: one from the CLI, one from Telegram. */
export const DEMO_SESSIONS: readonly DemoSession[] = [
  {
    id: '20260312_091500_a1b2c3',
    source: 'cli',
    title: 'Staging deploys',
    start: Date.UTC(2026, 2, 12, 9, 15) / 1000,
    user: 'Deploy to staging with ./deploy.sh staging from the workspace, and never pass --force: it skips the health check. Remember that.',
    entry: DEMO_MEMORY_ENTRIES[0]!,
    reply: 'Saved: staging deploys use ./deploy.sh staging, never --force.',
  },
  {
    id: '20260402_230100_d4e5f6',
    source: 'telegram',
    title: 'Backup window',
    start: Date.UTC(2026, 3, 2, 23, 1) / 1000,
    user: "btw the nightly backup runs 02:30 UTC, don't restart the db between 02:15 and 03:00",
    entry: DEMO_MEMORY_ENTRIES[4]!,
    reply: 'Noted, I will keep the database up during the backup window.',
  },
];
