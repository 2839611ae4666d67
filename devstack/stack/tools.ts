import { spawnSync } from 'node:child_process';
import { StackError } from 'poimen-relay/internal/errors';

/** Host tools the local stack needs, with the Debian packages that provide them. */
const TOOLS = {
  java: { args: ['-version'], install: 'apt-get install -y openjdk-17-jdk-headless' },
  mvn: { args: ['-v'], install: 'apt-get install -y maven' },
  go: {
    args: ['version'],
    // From 1.21 Go fetches the newer toolchain a module asks for (provision.ts sets GOTOOLCHAIN=auto).
    install:
      'apt-get install -y golang-go (Go >= 1.21 is needed; or use the official tarball from go.dev/dl)',
  },
} as const;

export type Tool = keyof typeof TOOLS;

export function requireTool(tool: Tool): void {
  const probe = spawnSync(tool, TOOLS[tool].args, { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new StackError(
      `${tool} is missing: the local stack needs it. Install it with: ${TOOLS[tool].install}`,
    );
  }
}
