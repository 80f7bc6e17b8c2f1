/** Usage errors of the CLI: exit code 2 (unknown option, missing or bad argument). */
import { AgentKeepError } from '../core/errors';

/** An AgentKeepError that the CLI reports with exit code 2 (a usage error) instead of 1. */
export class UsageError extends AgentKeepError {}
