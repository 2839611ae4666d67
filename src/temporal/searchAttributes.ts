import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { SEARCH_ATTRIBUTE_NAMES, type SearchAttributeName } from '../contract';
import { StackError } from '../errors';

const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

const keywordKey = (name: SearchAttributeName) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);

/** The typed keys of the contract's search attributes (§4), made from the one list of names. */
export const SEARCH_ATTRIBUTE_KEYS = Object.fromEntries(
  SEARCH_ATTRIBUTE_NAMES.map((name) => [name, keywordKey(name)]),
) as Record<SearchAttributeName, ReturnType<typeof keywordKey>>;

/** Search attributes of contract §4 missing on the namespace (empty when all are registered as Keyword). */
export async function missingSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  const custom = res.customAttributes ?? {};
  return SEARCH_ATTRIBUTE_NAMES.filter((name) => custom[name] !== KEYWORD);
}

/**
 * Registers the relay's Keyword search attributes; idempotent. The dev server registers `--search-attribute`
 * flags only when it creates its database, so a persisted stack needs this after every start too.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length > 0) {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((name) => [name, KEYWORD])),
    });
  }
  return missing;
}

/**
 * The ingester sets these attributes on every start, and Temporal rejects a start naming an unregistered
 * one: refuse to run instead. Waits (with a log line) while Temporal is unreachable.
 */
export async function requireSearchAttributes(
  connection: Connection,
  namespace: string,
  logger: { warn(obj: object, msg: string): void },
  retryMs = 2000,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let missing: string[];
    try {
      missing = await missingSearchAttributes(connection, namespace);
    } catch (err) {
      if (attempt === 1 || attempt % 10 === 0) logger.warn({ err }, 'Temporal not reachable yet; waiting');
      await new Promise((r) => setTimeout(r, retryMs));
      continue;
    }
    if (missing.length > 0) {
      throw new StackError(
        `search attributes ${missing.join(', ')} are not registered on namespace ${namespace}; run: poimen-relay temporal setup`,
      );
    }
    return;
  }
}
