/** `poimen-relay tenant pause | resume | status`: wiring only. */
import { Command } from 'commander';
import { printable } from '../printable';
import { Client } from '@temporalio/client';
import { checkTenantArg, pauseLine, setTenantPause, tenantPauses, wakeHeld } from '../ops/tenantPause';
import { withKafkaAdmin } from './kafkaAdmin';
import { withTemporal } from './temporalConnection';

function changeCommand(name: 'pause' | 'resume'): Command {
  const paused = name === 'pause';
  const command = new Command(name)
    .description(
      paused
        ? "stop the tenant's dispatches: ingesters start none (they wait in Kafka), workers hold their calls"
        : "let every ingester start the tenant's dispatches again, those that waited first, and wake its held calls",
    )
    .argument('<tenant>', 'the tenant')
    .option('--reason <text>', "why, shown by `tenant status` and in the ingesters' logs")
    .option('--json', paused ? 'print JSON: {before, after}' : 'print JSON: {before, after, woken}');
  if (!paused) {
    command.option('--no-wake', 'do not signal the held calls (each looks again on its own, within an hour)');
  }
  return command.action(async (tenant: string, opts: { reason?: string; json?: boolean; wake?: boolean }) => {
    checkTenantArg(tenant);
    const change = await withKafkaAdmin((kafka, admin) =>
      setTenantPause(kafka, admin, { tenant, paused, ...(opts.reason ? { reason: opts.reason } : {}) }),
    );
    const woken = paused || opts.wake === false ? undefined : await wakeHeldAfter(tenant);
    if (opts.json) {
      const out = woken === undefined ? change : { ...change, woken };
      return void process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    }
    const was = change.before?.paused ?? false;
    const note = was === paused ? ` (it was ${paused ? 'paused already' : 'not paused'})` : '';
    process.stdout.write(`${printable(pauseLine(change.after))}${note}\n`);
    if (woken !== undefined) process.stdout.write(`woke ${woken} running dispatch(es) of ${tenant}\n`);
  });
}

/**
 * The resume is written; the held calls are woken through Temporal. Should that fail, the error says the resume
 * holds and how the held calls go on.
 */
async function wakeHeldAfter(tenant: string): Promise<number> {
  try {
    return await withTemporal((connection, cfg) =>
      wakeHeld(new Client({ connection, namespace: cfg.temporal.namespace }), tenant),
    );
  } catch (err) {
    if (err instanceof Error) {
      err.message = `${tenant} is resumed, but its held calls were not woken (each looks again within an hour; run the command again to wake them now): ${err.message}`;
    }
    throw err;
  }
}

export function tenantCommand(): Command {
  const tenant = new Command('tenant').description(
    'pause and resume a tenant (operations.md, "Pause and resume a tenant")',
  );
  tenant.addCommand(changeCommand('pause')).addCommand(changeCommand('resume'));
  tenant
    .command('status')
    .description('which tenants are paused, since when, by whom and why (all tenants ever paused, or one)')
    .argument('[tenant]', 'only this tenant')
    .option('--json', 'print JSON: [{tenant, paused, reason, at, by}]')
    .action(async (name: string | undefined, opts: { json?: boolean }) => {
      if (name !== undefined) checkTenantArg(name);
      const pauses = await withKafkaAdmin((kafka) => tenantPauses(kafka, name));
      if (opts.json) return void process.stdout.write(`${JSON.stringify(pauses, null, 2)}\n`);
      if (pauses.length === 0) {
        return void process.stdout.write(
          name ? `${name}: not paused (never paused)\n` : 'no tenant is paused\n',
        );
      }
      for (const p of pauses) process.stdout.write(`${printable(pauseLine(p))}\n`);
    });
  return tenant;
}
