/** Risk scan: find risky commands and risky config files by file kind, classify them, evaluate against labels. Pure functions, no I/O. */
export {
  scanText,
  scanCommands,
  scanNotebookCell,
  classifyCommand,
  type CommandVerdict,
  logicalCommands,
  fileKind,
  CLASS_REASON,
  FILE_KINDS,
  type FileKind,
  type LogicalCommand,
  type RiskyCommand,
  type RiskyPart,
} from './scan';
export { classifyText, classifyWords, maxClass, maxHit, RISK_CLASSES, type RiskClass, type RiskHit } from './classify';
export { riskyConfigFile, configWriteTarget, type RiskyConfig } from './config';
export { evaluate, formatEval, type EvalLabel, type EvalResult } from './eval';
export {
  evaluateCommands,
  formatCommandEval,
  parseCommandCases,
  type CommandCase,
  type CommandEvalResult,
} from './eval-commands';
export { parseJsonc } from './jsonc';
