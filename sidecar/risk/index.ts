/** Risk scan: find risky commands and risky config files by file kind, classify them, evaluate against labels. Pure functions, no I/O. */
export {
  scanText,
  scanCommands,
  scanNotebookCell,
  logicalCommands,
  fileKind,
  CLASS_REASON,
  FILE_KINDS,
  type FileKind,
  type LogicalCommand,
  type RiskyCommand,
  type RiskyPart,
} from './scan';
export { classifyText, classifyWords, maxClass, type RiskClass } from './classify';
export { riskyConfigFile, type RiskyConfig } from './config';
export { evaluate, formatEval, type EvalLabel, type EvalResult } from './eval';
export { parseJsonc } from './jsonc';
