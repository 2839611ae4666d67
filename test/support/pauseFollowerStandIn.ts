/**
 * A scripted stand-in for kafkajs's admin and consumer, as the pause follower (src/kafka/tenantPauseFollower.ts) uses
 * them: test/unit/tenantPauseFollower.test.ts drives it.
 */
import type { Kafka, KafkaMessage } from 'kafkajs';
import { TENANT_PAUSES_TOPIC, encodeTenantPause } from '../../src/contract';

export interface Script {
  connect?: () => Promise<void>;
  /** What a listing shows (default: the pause topic). */
  listed?: () => string[];
  /** What asking for the topic by name answers when it is not listed (default: it does not exist). */
  byName?: () => Promise<void>;
  high?: bigint;
  /** Records handed over after run(): [offset, tenant, paused]. */
  records?: [bigint, string, boolean][];
  /** The last offset of the fetch, as kafkajs reports it (markers included); default the last record's. */
  fetchedTo?: bigint;
  /** Hand nothing over (a join that takes its time). */
  silent?: boolean;
  /** Before the end offsets are answered. */
  offsets?: () => Promise<void>;
}

export function kafkaError(type: string): Error {
  return Object.assign(new Error(type), { type, name: 'KafkaJSProtocolError' });
}

export function scripted(s: Script) {
  const calls = {
    connects: 0,
    consumers: 0,
    deleted: [] as string[],
    /** The newest consumer's CRASH handler: kafkajs giving up on it. */
    crash: (_error: Error, _restart?: boolean): void => undefined,
    /** The newest consumer's GROUP_JOIN handler (kafkajs joining, a restart's included). */
    join: (): void => undefined,
    /** Whether kafkajs would restart the newest consumer after a crash (its `retry.restartOnFailure`). */
    restarts: async (): Promise<boolean> => true,
    disconnects: 0,
  };
  const kafka = {
    admin: () => ({
      connect: async () => {
        calls.connects++;
        await s.connect?.();
      },
      disconnect: async () => undefined,
      // Asked by name: a listed topic (the default) exists; else the scripted answer, or "no such topic".
      fetchTopicMetadata: async () => {
        if ((s.listed?.() ?? [TENANT_PAUSES_TOPIC]).includes(TENANT_PAUSES_TOPIC)) return { topics: [] };
        return s.byName ? s.byName() : Promise.reject(kafkaError('UNKNOWN_TOPIC_OR_PARTITION'));
      },
      fetchTopicOffsets: async () => {
        await s.offsets?.();
        return [{ partition: 0, low: '0', high: String(s.high ?? 0n), offset: '0' }];
      },
      deleteGroups: async (ids: string[]) => void calls.deleted.push(...ids),
    }),
    consumer: ({
      groupId,
      retry,
    }: {
      groupId: string;
      retry?: { restartOnFailure?: (e: Error) => Promise<boolean> };
    }) => {
      calls.consumers++;
      calls.restarts = () => retry?.restartOnFailure?.(new Error('crash')) ?? Promise.resolve(true);
      const on = new Map<string, (e: { payload: unknown }) => void>();
      return {
        groupId,
        events: { GROUP_JOIN: 'join', CRASH: 'crash', END_BATCH_PROCESS: 'end' },
        on: (event: string, f: (e: { payload: unknown }) => void) => {
          on.set(event, f);
          if (event === 'crash') calls.crash = (error, restart = false) => f({ payload: { error, restart } });
          if (event === 'join') calls.join = () => f({ payload: { memberAssignment: {} } });
        },
        connect: async () => undefined,
        subscribe: async () => undefined,
        disconnect: async () => void calls.disconnects++,
        seek: () => undefined,
        run: async ({
          eachMessage,
        }: {
          eachMessage: (p: { partition: number; message: KafkaMessage }) => Promise<void>;
        }) => {
          if (s.silent) return;
          setImmediate(async () => {
            for (const [offset, tenant, paused] of s.records ?? []) {
              const value = encodeTenantPause({
                tenant,
                paused,
                reason: null,
                at: new Date(0).toISOString(),
                by: null,
              });
              const message = { offset: String(offset), key: Buffer.from(tenant), value: Buffer.from(value) };
              await eachMessage({ partition: 0, message: message as unknown as KafkaMessage });
            }
            const last = s.fetchedTo ?? s.records?.at(-1)?.[0];
            if (last !== undefined) {
              on.get('end')?.({ payload: { partition: 0, firstOffset: '0', lastOffset: String(last) } });
            }
          });
        },
      };
    },
  };
  return { kafka: kafka as unknown as Kafka, calls };
}
