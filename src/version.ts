import fs from 'node:fs';
import path from 'node:path';

/** The package version, sent as `user-agent: poimen-relay/<version>` (SPEC §5). */
export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version;
