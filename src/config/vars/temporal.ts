/**
 * Rows of the env table for Temporal: the frontend, namespace and task queue, and how to reach and authenticate
 * to it, in the contract's names and in Temporal's own (the TOML profile, and the standard names the SDK reads
 * itself). The contract's names and the Temporal names the relay checks itself are parsed here; temporalEnv.ts
 * reads them through these rows and owns their precedence. The names only the SDK reads (`sdk`) carry no schema.
 * Each row is the variable's one home (envVar.ts).
 */
import { DEFAULT_TASK_QUEUE } from '../../contract/names';
import { RELAY, TEMPORAL_USERS, parsed, rows } from '../envVar';
import { z } from 'zod';
import { hostPort, httpUrl, nonEmpty, readableFile } from '../schema';
import { caFile, certFile, keyFile } from '../tls';

/**
 * A switch as Temporal's loader reads it (envconfig takes `true` and `1` as on, anything else as off), so the relay
 * refuses what the SDK would silently take for off.
 */
const temporalBool = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

export const TEMPORAL = rows({
  TEMPORAL_ADDRESS: parsed({
    description: 'Temporal frontend, host:port',
    readBy: TEMPORAL_USERS,
    connection: true,
    flagArg: '<host:port>',
    schema: hostPort,
    default: '127.0.0.1:7233',
  }),
  TEMPORAL_NAMESPACE: parsed({
    description: 'Temporal namespace',
    readBy: TEMPORAL_USERS,
    connection: true,
    flagArg: '<namespace>',
    schema: nonEmpty,
    default: 'default',
  }),
  TEMPORAL_TASK_QUEUE: parsed({
    description: 'task queue of the dispatch workflows',
    readBy: RELAY,
    flagArg: '<queue>',
    schema: nonEmpty,
    default: DEFAULT_TASK_QUEUE,
  }),
  TEMPORAL_API_KEY: parsed({
    description: 'API key sent as a bearer token; implies TLS (never logged)',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  TEMPORAL_TLS_CERT: parsed({
    description: 'PEM client certificate (mTLS), with TEMPORAL_TLS_KEY',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: certFile,
  }),
  TEMPORAL_TLS_KEY: parsed({
    description: 'PEM private key of TEMPORAL_TLS_CERT',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: keyFile,
  }),
  TEMPORAL_TLS_CA: parsed({
    description: "PEM CA(s) of the frontend's certificate",
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: caFile,
  }),
  TEMPORAL_API_KEY_FILE: parsed({
    description: 'API key read from this file and re-read on rotation, without a restart',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  TEMPORAL_CONFIG_FILE: parsed({
    description: "Temporal's TOML client config file (default ~/.config/temporalio/temporal.toml)",
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: readableFile,
  }),
  TEMPORAL_PROFILE: parsed({
    description: 'the profile of that file to use (default: default)',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: nonEmpty,
  }),
  TEMPORAL_TLS: parsed({
    description: 'true: TLS with the system roots; false: no TLS',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: temporalBool,
  }),
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: parsed({
    description: 'refused when true: the TypeScript SDK cannot skip the check',
    readBy: TEMPORAL_USERS,
    connection: true,
    schema: temporalBool,
  }),
  TEMPORAL_TLS_CLIENT_CERT_PATH: {
    description: "Temporal's name for the client certificate (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_CLIENT_CERT_DATA: {
    description: 'the client certificate, inline PEM; read by the SDK',
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_CLIENT_KEY_PATH: {
    description: "Temporal's name for the client key (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_CLIENT_KEY_DATA: {
    description: 'the client key, inline PEM; read by the SDK',
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: {
    description: "Temporal's name for the server's CA (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: {
    description: "the server's CA, inline PEM; read by the SDK",
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  TEMPORAL_TLS_SERVER_NAME: {
    description: "the name the server's certificate is checked against; read by the SDK",
    readBy: TEMPORAL_USERS,
    sdk: true,
    connection: true,
  },
  'TEMPORAL_GRPC_META_<NAME>': {
    description: 'gRPC metadata header <name> (underscores as dashes) on every call',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  POIMEN_TEMPORAL_UI_URL: parsed({
    description: 'Temporal Web UI base URL, for the links `dispatch status` prints',
    readBy: ['temporal-cli'],
    schema: httpUrl,
    default: 'http://127.0.0.1:8233',
  }),
});
