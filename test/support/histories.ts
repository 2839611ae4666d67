/**
 * Recorded `dispatch` histories (test/fixtures/histories/*.json) for the replay test. Each file is one
 * history in the JSON form `temporal workflow show -o json` and the Web UI's "Download" write, so a history
 * taken from production can be dropped in as it is. The workflow id is not part of a history; it is derived
 * from the execution's input, as the ingester derives it (SPEC §4).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import { workflowId } from '../../src/contract';
import type { DispatchInput } from '../../src/workflows/types';

export const HISTORIES_DIR = path.resolve(__dirname, '..', 'fixtures', 'histories');

export interface HistoryFixture {
  name: string;
  workflowId: string;
  /** The history as proto JSON, as stored. */
  json: unknown;
  /** The same as a History message, as Worker.runReplayHistories takes it. */
  history: History;
}

/*
 * Proto JSON <-> History. The SDK's own historyFromJSON/historyToJSON (@temporalio/common/lib/proto-utils) throw
 * "type must be a Type" in this install: @temporalio/common and @temporalio/proto each get a nested copy of
 * protobufjs 8 (the top level holds grpc-js's protobufjs 7), and protobufjs' protojson only accepts message
 * types of its own copy. So the conversion uses the protojson of the copy that @temporalio/proto's types
 * were built with, wherever npm placed it. Worker.runReplayHistories converts JSON itself with the broken
 * function, so it is given History messages.
 */
interface ProtoJson {
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
  toJson(type: unknown, message: unknown): unknown;
}
// A require by resolved path: which protobufjs copy is the point here.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const protojson = require(
  require.resolve('protobufjs/ext/protojson', {
    paths: [path.dirname(require.resolve('@temporalio/proto/package.json'))],
  }),
) as ProtoJson;
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType(
  'temporal.api.history.v1.History',
);

export function historyFromJson(json: unknown): History {
  return protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History;
}

export function historyToJson(history: History): unknown {
  return protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history));
}

interface JsonHistory {
  events?: {
    eventType?: string;
    workflowExecutionStartedEventAttributes?: {
      workflowType?: { name?: string };
      input?: { payloads?: { data?: string }[] };
    };
  }[];
}

/** The workflow id of a recorded `dispatch` execution, from its first event's input. */
export function dispatchWorkflowId(history: unknown): string {
  const first = (history as JsonHistory).events?.[0];
  const attrs = first?.workflowExecutionStartedEventAttributes;
  if (first?.eventType !== 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED' || !attrs) {
    throw new Error('history does not start with WorkflowExecutionStarted');
  }
  if (attrs.workflowType?.name !== 'dispatch') {
    throw new Error(`history is of workflow type ${attrs.workflowType?.name}, not dispatch`);
  }
  const data = attrs.input?.payloads?.[0]?.data;
  if (!data) throw new Error('history has no workflow input');
  const input = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as DispatchInput;
  return workflowId(input.tenant, input.dispatch.dispatch_key);
}

/**
 * The fixtures in `dir` and its subdirectories, named `<name>` or `<subdirectory>/<name>`. A subdirectory keeps
 * histories made by an earlier version of the relay (e.g. `input-parsed/`: before the input travelled as text),
 * which executions still running at a deploy have, so they must go on replaying.
 */
export function loadHistoryFixtures(dir: string = HISTORIES_DIR): HistoryFixture[] {
  const entries = fs.readdirSync(dir, { withFileTypes: true });
  const files = [
    ...entries.filter((e) => e.isFile()).map((e) => e.name),
    ...entries
      .filter((e) => e.isDirectory())
      .flatMap((d) => fs.readdirSync(path.join(dir, d.name)).map((f) => `${d.name}/${f}`)),
  ];
  return files
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const json: unknown = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
      return {
        name: f.slice(0, -'.json'.length),
        workflowId: dispatchWorkflowId(json),
        json,
        history: historyFromJson(json),
      };
    });
}
