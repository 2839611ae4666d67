/**
 * Recorded `dispatch` histories (test/fixtures/histories/*.json) for the replay test. Each file is one
 * history in the JSON form `temporal workflow show -o json` and the Web UI's "Download" write, so a history
 * taken from production can be dropped in as it is. The workflow id is not part of a history; it is derived
 * from the execution's input, as the ingester derives it (contract §4).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type History, historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { workflowId } from '../../src/contract';
import type { DispatchInput } from '../../src/contract/workflow';

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
 * Proto JSON <-> History with the SDK's own converters. They need the protobufjs copy @temporalio/* were built
 * with to be the only one they see (protojson accepts message types of its own copy only); package.json
 * pins that version as a direct dependency so npm hoists it (the replay test checks there is one copy).
 */
export function historyFromJson(json: unknown): History {
  return historyFromJSON(json);
}

export function historyToJson(history: History): unknown {
  return JSON.parse(historyToJSON(history));
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
 * histories made by an earlier version of the relay (`input-parsed/`: before the input travelled as text;
 * `attempt-count/`: before the retry budget),
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
