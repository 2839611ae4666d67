/**
 * Rows of the env table for Temporal: the frontend, namespace and task queue, and how to reach and authenticate
 * to it, in the contract's names and in Temporal's own (the TOML profile, and the standard names the SDK reads
 * itself). The contract's names are parsed here; Temporal's are read by temporalEnv.ts, which owns their
 * precedence, or by the SDK, so their rows carry no schema. Each row is the variable's one home (envVar.ts).
 */
import { DEFAULT_TASK_QUEUE } from '../../contract/names';
import { RELAY, TEMPORAL_USERS, parsed, rows } from '../envVar';
import { hostPort, httpUrl, nonEmpty } from '../schema';
import { caFile, certFile, keyFile } from '../tls';

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
  TEMPORAL_API_KEY_FILE: {
    description: 'API key read from this file and re-read on rotation, without a restart',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  TEMPORAL_CONFIG_FILE: {
    description: "Temporal's TOML client config file (default ~/.config/temporalio/temporal.toml)",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  TEMPORAL_PROFILE: {
    description: 'the profile of that file to use (default: default)',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  TEMPORAL_TLS: {
    description: 'true: TLS with the system roots; false: no TLS',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: {
    description: 'refused when true: the TypeScript SDK cannot skip the check',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
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
