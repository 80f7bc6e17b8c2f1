/** The sidecar version (from package.json, inlined by esbuild). */
import { version } from '../../package.json';

export const VERSION: string = version;
