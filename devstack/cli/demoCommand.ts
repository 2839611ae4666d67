/** `poimen-dev demo`: wiring only; the demo itself is devstack/demo.ts. */
import { Command } from 'commander';
import { loadStackConfig } from '../config';
import { runDemo } from '../demo';
import { createLocalKafka } from '../kafka';
import { consoleProgress } from '../stack/progress';
import { LocalStack } from '../stack/stack';
import { printStatus } from './stackCommands';

export function demoCommand(): Command {
  return new Command('demo')
    .description('run the relay end to end on the local stack with a sample runs API and sample dispatches')
    .action(async () => {
      const cfg = loadStackConfig();
      const progress = consoleProgress('demo');
      const stack = new LocalStack(cfg, progress);
      printStatus(await stack.up());
      const kafka = createLocalKafka('poimen-demo', [stack.services.kafka.address]);
      const report = await runDemo(stack, kafka, cfg, progress);
      for (const line of report.lines) process.stdout.write(`${line}\n`);
      if (!report.ok) {
        process.stderr.write(
          'demo: not every dispatch reached its expected outcome; see the relay logs above\n',
        );
        process.exitCode = 1;
      }
    });
}
