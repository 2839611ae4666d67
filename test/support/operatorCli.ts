/**
 * The operator commands of the Kafka ACL suite (test/it_kafka_acls.test.ts): each command runs under a
 * certificate of its own, granted exactly its rows of docs/access.md ("The ACLs, role by role"), so a row one
 * command needs and only another's lists fails the test; and dead letters written as the worker writes them,
 * by the super user.
 */
import path from 'node:path';
import type { Admin, Producer } from 'kafkajs';
import { type DlqRecordInput, buildDlqRecord, dlqRecordHeaders, topics } from '../../src/contract';
import { certPrincipal } from './authKafka';
import { runCli } from './cli';
import { type AclRow, aclEntries } from './kafkaAcls';
import { uniqueName } from './names';
import { CLIENT_EXT, type Certs, issue } from './tlsServices';

/** Runs `poimen-relay <args>`, expects exit 0 and no refusal in its output, and returns its stdout. */
export type OperatorRun = (args: string[]) => Promise<string>;

/** A runner of `command` (e.g. `dlq replay`) under CN=poimen-op-<command>, granted only its own rows. */
export async function operatorFor(
  command: string,
  rows: AclRow[],
  ctx: { admin: Admin; certs: Certs; brokers: string; tenant: string },
): Promise<OperatorRun> {
  const own = rows.filter((r) => r.role === `operator: \`${command}\``);
  expect(own.length).toBeGreaterThan(0);
  const name = `op-${command.replace(/ /g, '-')}`;
  const cn = `poimen-${name}`;
  issue(ctx.certs.dir, 'ca', name, cn, CLIENT_EXT);
  await ctx.admin.createAcls({ acl: aclEntries(own, certPrincipal(cn), { tenant: ctx.tenant }) });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
    KAFKA_BROKERS: ctx.brokers,
    KAFKA_SSL_CA: ctx.certs.ca,
    KAFKA_SSL_CERT: path.join(ctx.certs.dir, `${name}.pem`),
    KAFKA_SSL_KEY: path.join(ctx.certs.dir, `${name}.key`),
  };
  return async (args) => {
    const res = await runCli(args, env, 120_000);
    // The whole error output on a failure: it names what Kafka refused.
    expect({ args, code: res.code, out: res.code === 0 ? '' : res.stderr + res.stdout }).toEqual({
      args,
      code: 0,
      out: '',
    });
    expect(res.stdout + res.stderr).not.toMatch(/AUTHORIZATION_FAILED|refused|not authorized/i);
    return res.stdout;
  };
}

/** Writes a dead letter of `tenant` as the worker or the ingester would (the operators have no Write on the DLQ). */
export async function writeDeadLetter(
  producer: Producer,
  tenant: string,
  input: Pick<DlqRecordInput, 'type' | 'dispatchKey' | 'error' | 'httpStatus' | 'value'>,
): Promise<string> {
  const record = buildDlqRecord({
    id: uniqueName('dlq-id'),
    timestamp: Date.now(),
    tenant,
    source: { topic: topics.dispatch(tenant), partition: 0, offset: '0', timestamp: String(Date.now()) },
    key: `${tenant}:${input.dispatchKey}`,
    ...input,
  });
  await producer.send({
    topic: topics.dlq(tenant),
    acks: -1,
    messages: [
      {
        key: `${tenant}:${input.dispatchKey}`,
        value: JSON.stringify(record),
        headers: { ...dlqRecordHeaders(record), 'dlq-type': record.type },
      },
    ],
  });
  return record.id;
}
