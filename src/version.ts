import fs from 'node:fs';
import path from 'node:path';

/**
 * The folder holding the relay's package.json. Found by walking up rather than by a fixed depth, because the
 * same module runs compiled at different depths: dist/ in the image, dist-tools/src/ under the tools' build.
 */
export const PACKAGE_ROOT: string = ((): string => {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
})();

/** The package version, sent as `user-agent: poimen-relay/<version>` (contract §5). */
export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
