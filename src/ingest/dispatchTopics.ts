import { tenantFromTopic } from '../contract';

/**
 * The dispatch topics to consume among all topics: those matching DISPATCH_TOPIC_PATTERN that are
 * `poimen.<tenant>.dispatch` with a valid tenant, sorted. A topic that matches the pattern but has no valid tenant
 * is never consumed (there is no tenant to relay it under, nor a tenant DLQ to dead-letter it to): `ignored`
 * hears of it.
 */
export function dispatchTopics(all: string[], pattern: RegExp, ignored: (topic: string) => void): string[] {
  return all
    .filter((t) => pattern.test(t))
    .filter((t) => {
      if (tenantFromTopic(t) !== undefined) return true;
      ignored(t);
      return false;
    })
    .sort();
}
