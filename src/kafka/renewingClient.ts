/**
 * A long-lived kafkajs client (an admin or a producer) for calls about tenants' topics, made anew when kafkajs's
 * memory of topics turns against it. A kafkajs client keeps every topic it has been asked about and asks about all
 * of them at each metadata refresh: once one of them is deleted by anyone else (an operator offboarding a tenant or
 * purging its DLQ), every later call of that client fails with UNKNOWN_TOPIC_OR_PARTITION, whatever topic the call
 * is about, until the process ends (tulios/kafkajs#1622 and #651); one this principal may no longer see fails them
 * with TOPIC_AUTHORIZATION_FAILED alike. A call that fails so is tried once more on a new client, which knows only
 * the topics of that call: a topic that is really missing (or refused) fails that try too, and the caller hears
 * so. The client given up on is disconnected once the calls still running on it end.
 *
 * Its users: the ingester's gauges (ingest/monitor.ts), the DLQ publisher (./dlqPublisher.ts) and the worker's
 * source-record reader (./sourceRecord.ts).
 */
import { topicLost } from './errors';

interface Connectable {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

interface Link<C> {
  client: C;
  connected: Promise<void>;
  /** Calls running on it now. */
  calls: number;
  /** Given up on: no new call; disconnected when `calls` is 0. */
  stale: boolean;
}

export interface UseOptions {
  /** Whether the call may be tried again on a new client now (default: always); false leaves it to the caller. */
  again?: () => boolean;
}

export class RenewingClient<C extends Connectable> {
  private link: Link<C> | undefined;
  /** Every client made and not yet disconnected, the current one included. */
  private readonly links = new Set<Link<C>>();
  private closed = false;

  constructor(private readonly make: () => C) {}

  /** Runs `call` on the client, connecting it first; once more on a new client when a topic was lost. */
  async use<T>(call: (client: C) => Promise<T>, opts: UseOptions = {}): Promise<T> {
    try {
      return await this.on(call);
    } catch (err) {
      if (this.closed || !topicLost(err) || opts.again?.() === false) throw err;
      return this.on(call);
    }
  }

  /**
   * Disconnects every client made, the ones given up on included, each once its connect has ended: a client
   * disconnected while connecting would finish connecting after, and keep its socket open.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.link = undefined;
    const all = [...this.links];
    this.links.clear();
    await Promise.all(
      all.map(async (l) => {
        await l.connected.catch(() => undefined);
        await l.client.disconnect().catch(() => undefined);
      }),
    );
  }

  private async on<T>(call: (client: C) => Promise<T>): Promise<T> {
    const link = this.current();
    link.calls++;
    try {
      await link.connected;
      if (this.closed) throw new Error('Kafka client is closed');
      return await call(link.client);
    } catch (err) {
      if (topicLost(err)) this.retire(link);
      throw err;
    } finally {
      link.calls--;
      if (link.stale && link.calls === 0) this.drop(link);
    }
  }

  private current(): Link<C> {
    if (this.closed) throw new Error('Kafka client is closed');
    if (this.link) return this.link;
    const client = this.make();
    const link: Link<C> = { client, connected: client.connect(), calls: 0, stale: false };
    // A client that could not connect is not used again: the next call makes another.
    link.connected.catch(() => this.retire(link));
    this.links.add(link);
    this.link = link;
    return link;
  }

  /** No new call on it; the call that gave it up (there is always one running) disconnects it as the last ends. */
  private retire(link: Link<C>): void {
    link.stale = true;
    if (this.link === link) this.link = undefined;
  }

  private drop(link: Link<C>): void {
    if (!this.links.delete(link)) return;
    void link.client.disconnect().catch(() => undefined);
  }
}
