import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_NAMES } from '../contract';

const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;

/** Search attributes of SPEC §4 missing on the namespace (empty when all are registered as Keyword). */
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
