import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { SEARCH_ATTRIBUTE_NAMES, type SearchAttributeName } from '../contract';
import { TEMPORAL } from '../config/vars/temporal';
import { ConfigError, StackError } from '../errors';
import { GRPC, GRPC_NAME, grpcStatus } from './grpcStatus';

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
 * Whether the attributes can be used in this namespace, asked with what a namespace-scoped credential may do (a
 * visibility query naming each of them) where listing them needs more: Temporal Cloud's namespace API keys and a
 * self-hosted authorizer may refuse OperatorService calls to a client that may start workflows. A query naming
 * an attribute the namespace lacks is refused with INVALID_ARGUMENT.
 */
async function attributesUsable(connection: Connection, namespace: string): Promise<boolean> {
  try {
    await connection.workflowService.countWorkflowExecutions({
      namespace,
      query: SEARCH_ATTRIBUTE_NAMES.map((name) => `${name} = ''`).join(' AND '),
    });
    return true;
  } catch (err) {
    if (grpcStatus(err)?.code === GRPC.INVALID_ARGUMENT) return false;
    throw err;
  }
}

/**
 * The ingester sets these attributes on every start, and Temporal rejects a start naming an unregistered
 * one: refuse to run instead. Waits (with a log line) while Temporal is unreachable; a credential Temporal
 * refuses is one line naming the settings, not a wait.
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
      try {
        missing = await missingSearchAttributes(connection, namespace);
      } catch (err) {
        if (grpcStatus(err)?.code !== GRPC.PERMISSION_DENIED) throw err;
        if (!(await attributesUsable(connection, namespace))) {
          throw new StackError(
            `search attributes ${SEARCH_ATTRIBUTE_NAMES.join(', ')} are not all registered on namespace ${namespace} (a query naming them was refused as invalid); run: poimen-relay temporal setup`,
          );
        }
        missing = [];
      }
    } catch (err) {
      if (err instanceof StackError) throw err;
      const status = grpcStatus(err);
      if (status?.code === GRPC.PERMISSION_DENIED || status?.code === GRPC.UNAUTHENTICATED) {
        throw new ConfigError(
          `${TEMPORAL.TEMPORAL_API_KEY.name}/${TEMPORAL.TEMPORAL_TLS_CERT.name}`,
          `are refused by Temporal on namespace ${namespace} (${GRPC_NAME[status.code]}: ${status.details.split('\n')[0]})`,
        );
      }
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
