/**
 * The DLQ publisher on a producer that must be made anew (src/kafka/renewingClient.ts): a refused or unknown topic
 * may be another one the producer knew, so the send is tried once more on a new producer, but only while the caller
 * that started it waits. kafkajs's producer is the scripted stand-in of test/support/dlqPublisherStandIn.ts; real
 * Kafka: it_dlq_recreated_topic.
 */
import { KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import { publisher, record, scriptedKafka } from '../support/dlqPublisherStandIn';

/** Kafka's answer as kafkajs makes it an error. */
function kafkaRefusal(type: string, code: number, retriable: boolean, message: string): KafkaJSProtocolError {
  return new KafkaJSProtocolError({ type, code, retriable, message } as unknown as Error);
}

const refusedTopic = () =>
  kafkaRefusal('TOPIC_AUTHORIZATION_FAILED', 29, false, 'Not authorized to access topics');

describe('DLQ publisher, its producer made anew', () => {
  it('reports a refusal no retry can cure at once, after one try on a new producer', async () => {
    const refused = refusedTopic();
    // The first refusal may be of another topic the producer knew (kafka/renewingClient.ts): a new one is asked.
    const { kafka, sent, producerConfigs } = scriptedKafka(refused, refused);
    await expect(publisher(kafka).dlq.publish(record('a'), null)).rejects.toBe(refused);
    expect(sent).toHaveLength(2);
    expect(producerConfigs).toHaveLength(2);
  });

  it('a refusal wrapped by kafkajs (a new producer fetching the topic first) is reported at once too', async () => {
    // kafkajs's retrier wraps a non-retriable error this way, the protocol error as its cause.
    const wrapped = () => {
      const cause = refusedTopic();
      return Object.assign(new KafkaJSNonRetriableError(cause), { cause });
    };
    const last = wrapped();
    const { kafka, sent, producerConfigs } = scriptedKafka(wrapped(), last, wrapped(), wrapped());
    const deadline = AbortSignal.timeout(3_000);
    await expect(publisher(kafka).dlq.publish(record('a'), null, { signal: deadline })).rejects.toBe(last);
    expect(deadline.aborted).toBe(false);
    expect(sent).toHaveLength(2);
    expect(producerConfigs).toHaveLength(2);
  });

  it('a refusal the new producer does not repeat was another topic’s: the dead letter goes out', async () => {
    const { kafka, sent, producerConfigs } = scriptedKafka(refusedTopic(), 'ok');
    await publisher(kafka).dlq.publish(record('a'), null);
    expect(sent).toEqual(['id-a', 'id-a']);
    expect(producerConfigs).toHaveLength(2);
  });

  it('a lost topic after its caller gave up is not sent again on a new producer', async () => {
    let fail!: (err: Error) => void;
    const answered = new Promise<void>((_, reject) => (fail = reject));
    answered.catch(() => undefined);
    const { kafka, sent, producerConfigs } = scriptedKafka(answered, 'ok');
    const deadline = new AbortController();
    const publishing = publisher(kafka).dlq.publish(record('a'), null, { signal: deadline.signal });
    while (sent.length === 0) await new Promise((r) => setTimeout(r, 5));
    deadline.abort();
    await expect(publishing).rejects.toThrow(/not published before the deadline/);
    fail(
      kafkaRefusal('UNKNOWN_TOPIC_OR_PARTITION', 3, true, 'This server does not host this topic-partition'),
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(sent).toHaveLength(1);
    expect(producerConfigs).toHaveLength(1);
  });
});
