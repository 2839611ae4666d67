/**
 * `postRun` and its two successors by shape (recorded histories name each; test/unit/signatures.test.ts): each is
 * one attempt of the runs API call (./runsApiCall) inside its entry in the attempt history (./recordedAttempt).
 */
import { Context } from '@temporalio/activity';
import type { DispatchResult, PostRunHeadInput, PostRunInput } from '../contract/workflow';
import type { ActivityDeps } from './deps';
import { recordedAttempt } from './recordedAttempt';
import { createRunsApiCall } from './runsApiCall';

export function createPostRun(deps: ActivityDeps) {
  const callOnce = createRunsApiCall(deps);

  /**
   * One attempt, with its entry in the attempt history (activities/attemptLog.ts): a failed attempt heartbeats the
   * history with its entry and carries it in its failure's details.
   */
  async function postRun(input: PostRunInput, inputText?: Uint8Array): Promise<DispatchResult> {
    return recordedAttempt(deps, input.tenant, (attemptCtx, onCall) =>
      callOnce(input, inputText, attemptCtx, onCall),
    );
  }

  /**
   * `postRun` for a dispatch whose input's text travels as bytes. A name of its own: `postRun` once took the whole
   * dispatch in one argument, and a worker of that version handed `(head, bytes)` posts `"input": null`. Such a
   * worker does not know this name, so its attempt fails and a current worker takes the retry.
   */
  async function postRunWithInputBytes(
    input: PostRunHeadInput,
    inputText: Uint8Array,
  ): Promise<DispatchResult> {
    return postRun(input, inputText);
  }

  /**
   * `postRun` for a dispatch whose input is over LARGE_INPUT_BYTES: the input is read from the execution's start
   * event here, not carried in the schedule. The SDK core keeps a scheduled activity's arguments for as long as
   * the execution is cached, so a backlog of large calls would otherwise hold each input in memory until its
   * call ends, however few run at once; here only the calls running on the large-input queue's few slots hold one.
   */
  async function postRunReadingInput(input: PostRunHeadInput): Promise<DispatchResult> {
    return recordedAttempt(deps, input.tenant, async (attemptCtx, onCall) => {
      const { workflowExecution: wf } = Context.current().info;
      if (!wf) throw new Error('postRunReadingInput runs only in a workflow execution');
      const { dispatch } = (await deps.startedWith(wf.workflowId, wf.runId)).input;
      // Reading the history may have taken a while: the call that follows gets the whole heartbeat timeout. A
      // retry heartbeats as it calls anyway (and that must be its first heartbeat, to be sent at once); a first
      // attempt beats here, with the history so far (a call scheduled again after a hold has one).
      const { heartbeatTimeoutMs, attempt } = Context.current().info;
      if (heartbeatTimeoutMs && attempt === 1) attemptCtx.heartbeat();
      if (!('input_json' in dispatch)) return callOnce({ ...input, dispatch }, undefined, attemptCtx, onCall);
      return callOnce(input, Buffer.from(dispatch.input_json, 'utf8'), attemptCtx, onCall);
    });
  }

  return { postRun, postRunWithInputBytes, postRunReadingInput };
}
