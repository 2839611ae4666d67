/**
 * The ingester's place in its consumer group: which consumer is its own now, whether that consumer has joined,
 * what the group assigned it and in which generation (generation.ts). The consumer's lifecycle (ingester.ts)
 * changes it; each batch's turn (batchTurn.ts) reads it to know whether its work still counts.
 */
import type { KafkaConsumer } from '../kafka/port';
import { GroupGeneration } from './generation';

export class GroupMembership {
  /** The consumer running now; a batch of any other (stopped, replaced) is on its way out. */
  consumer: KafkaConsumer | undefined;
  stopping = false;
  joined = false;
  /** What the group assigned this member at its last join: a failure elsewhere is another member's to retry. */
  assignment: Record<string, number[]> | undefined;
  /** The consumer's current group generation; a new one at every join (generation.ts). */
  generation = new GroupGeneration();

  /** True while `consumer` is the one running and the ingester is not stopping. */
  current(consumer: KafkaConsumer): boolean {
    return consumer === this.consumer && !this.stopping;
  }

  /** A new generation for the batches to come; the previous one is over for those still running. */
  nextGeneration(): void {
    this.generation.supersede();
    this.generation = new GroupGeneration();
  }
}
