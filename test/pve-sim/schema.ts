/**
 * Request validation for the Proxmox contract simulator, generated from the API schema
 * (pve-api-schema.json = ../shared/proxmox/pve-api-snapshot-subset.json with return schemas and
 * descriptions stripped; pve-docs api-viewer/apidata.js). Error texts as pve-common
 * src/PVE/JSONSchema.pm (`check_prop`, `validate`) words them.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

interface PropSchema {
  type?: string;
  optional?: number;
  format?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: string[];
  pattern?: string;
  requires?: string;
}

interface MethodSchema {
  parameters: { additionalProperties?: number; properties: Record<string, PropSchema> };
  permissions?: { check?: unknown[] };
  allowtoken?: number;
}

/** path template -> method -> schema */
export type ApiSchema = Record<string, Record<string, MethodSchema>>;

/** The schema shipped next to the simulator. */
export function loadSchema(file = path.join(__dirname, 'pve-api-schema.json')): ApiSchema {
  return JSON.parse(readFileSync(file, 'utf8')) as ApiSchema;
}

/** pve-common JSONSchema.pm `$CONFIGID_RE`, anchored in pve_verify_configid. */
const CONFIGID_RE = /^[a-z][a-z0-9_-]+$/i;
/** pve_verify_node_name: a DNS label. */
const NODE_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

/** One compiled route: a regex for the path and the schema of each method. */
export interface Route {
  template: string;
  re: RegExp;
  vars: string[];
  methods: Record<string, MethodSchema>;
}

/** Compile every path template of the schema into a route. */
export function compileRoutes(schema: ApiSchema): Route[] {
  return Object.entries(schema).map(([template, methods]) => {
    const vars: string[] = [];
    const re = new RegExp(
      `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_m, v: string) => {
        vars.push(v);
        return '([^/]+)';
      })}$`,
    );
    return { template, re, vars, methods };
  });
}

/** Match a path (without /api2/json) to a route and its path variables. */
export function matchRoute(routes: Route[], p: string): { route: Route; vars: Record<string, string> } | undefined {
  for (const route of routes) {
    const m = route.re.exec(p);
    if (m) return { route, vars: Object.fromEntries(route.vars.map((v, i) => [v, decodeURIComponent(m[i + 1])])) };
  }
  return undefined;
}

/**
 * Validate parameters (path variables merged in) against a method schema, as Proxmox does before
 * calling the handler. Returns the `errors` map (empty = valid) and the typed parameters.
 */
export function validateParams(
  ms: MethodSchema,
  raw: Record<string, string>,
): { errors: Record<string, string>; params: Record<string, unknown> } {
  const errors: Record<string, string> = {};
  const params: Record<string, unknown> = {};
  const props = ms.parameters.properties;
  for (const k of Object.keys(raw)) {
    if (!(k in props) && ms.parameters.additionalProperties === 0)
      errors[k] = 'property is not defined in schema and the schema does not allow additional properties';
  }
  for (const [k, s] of Object.entries(props)) {
    const v = raw[k];
    if (v === undefined) {
      if (!s.optional) errors[k] = 'property is missing and it is not optional';
      continue;
    }
    const e = checkValue(s, v);
    if (e) errors[k] = e;
    else
      params[k] =
        s.type === 'integer' || s.type === 'number'
          ? Number(v)
          : s.type === 'boolean'
            ? /^(1|true|yes|on)$/i.test(v)
            : v;
  }
  for (const [k, s] of Object.entries(props)) {
    if (s.requires && raw[k] !== undefined && raw[s.requires] === undefined && !errors[k])
      errors[s.requires] = `property is missing and it is not optional`;
  }
  return { errors, params };
}

function checkValue(s: PropSchema, v: string): string | undefined {
  switch (s.type) {
    case 'integer':
      if (!/^-?\d+$/.test(v)) return `type check ('integer') failed - got '${v}'`;
      break;
    case 'number':
      if (!/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) return `type check ('number') failed - got '${v}'`;
      break;
    case 'boolean':
      if (!/^(0|1|true|false|yes|no|on|off)$/i.test(v)) return `type check ('boolean') failed - got '${v}'`;
      break;
    default:
      break;
  }
  if (s.minimum !== undefined && Number(v) < s.minimum) return `value must have a minimum value of ${s.minimum}`;
  if (s.maximum !== undefined && Number(v) > s.maximum) return `value must have a maximum value of ${s.maximum}`;
  if (s.maxLength !== undefined && v.length > s.maxLength) return `value may only be ${s.maxLength} characters long`;
  if (s.enum && !s.enum.includes(v))
    return `value '${v}' does not have a value in the enumeration '${s.enum.join(', ')}'`;
  if (s.pattern && !new RegExp(`^${s.pattern}$`).test(v)) return `value does not match the regex pattern`;
  switch (s.format) {
    case 'pve-configid':
      if (!CONFIGID_RE.test(v)) return `invalid format - invalid configuration ID '${v}'\n`;
      break;
    case 'pve-node':
      if (!NODE_RE.test(v)) return `invalid format - value does not look like a valid node name\n`;
      break;
    default:
      break;
  }
  return undefined;
}

/**
 * The privileges a method's `permissions.check` demands: `["perm", "/vms/{vmid}", ["VM.Snapshot", ...], "any", 1]`
 * (`any`: one of them suffices; else all).
 */
export function requiredPrivs(ms: MethodSchema): { privs: string[]; any: boolean } {
  const c = ms.permissions?.check;
  if (!Array.isArray(c) || c[0] !== 'perm' || !Array.isArray(c[2])) return { privs: [], any: false };
  return { privs: (c[2] as unknown[]).filter((x): x is string => typeof x === 'string'), any: c[3] === 'any' };
}
