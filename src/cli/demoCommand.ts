import { Command } from 'commander';
import { loadStackConfig } from '../config';
import { consoleProgress } from '../stack/progress';
import { smokeCheck } from '../stack/smoke';
import { LocalStack } from '../stack/stack';
import { printStatus } from './stackCommands';

export function demoCommand(): Command {
  return new Command('demo')
    .description('start the local stack and show the relay end to end')
    .action(async () => {
      const cfg = loadStackConfig();
      const stack = new LocalStack(cfg, consoleProgress('demo'));
      printStatus(await stack.up());
      for (const line of await smokeCheck(stack)) process.stdout.write(`${line}\n`);
      process.stdout.write(
        `Temporal Web UI: http://127.0.0.1:${cfg.temporalUiPort}\nstop the stack with: npx poimen-relay stack down\n`,
      );
    });
}
