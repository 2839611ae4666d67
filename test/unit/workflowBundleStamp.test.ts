/**
 * The prebuilt workflow bundle's stamp covers every compiled module the bundle is made from: the workflow code and
 * the contract modules it takes values from (patch ids, task queue names). A stamp that missed the contract let a
 * plain `tsc` change LARGE_INPUT_BYTES under a bundle that kept the old value, and the worker ran it as current.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compiledWorkflowHash } from '../../src/worker/workflowBundle';

function compiledTree(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-stamp-'));
  fs.mkdirSync(path.join(root, 'workflows'));
  fs.mkdirSync(path.join(root, 'contract'));
  fs.writeFileSync(path.join(root, 'workflows', 'index.js'), 'exports.dispatch = 1;');
  fs.writeFileSync(path.join(root, 'contract', 'workflow.js'), 'exports.LARGE_INPUT_BYTES = 32 * 1024;');
  fs.writeFileSync(path.join(root, 'contract', 'workflow.d.ts'), 'export declare const X: number;');
  return root;
}

test('a changed contract module, as well as a changed workflow module, changes the stamp; declarations do not', () => {
  const root = compiledTree();
  const before = compiledWorkflowHash(root);
  expect(compiledWorkflowHash(root)).toBe(before);
  fs.writeFileSync(path.join(root, 'contract', 'workflow.js'), 'exports.LARGE_INPUT_BYTES = 16 * 1024;');
  const contractChanged = compiledWorkflowHash(root);
  expect(contractChanged).not.toBe(before);
  fs.writeFileSync(path.join(root, 'workflows', 'index.js'), 'exports.dispatch = 2;');
  expect(compiledWorkflowHash(root)).not.toBe(contractChanged);
  const last = compiledWorkflowHash(root);
  fs.writeFileSync(path.join(root, 'contract', 'workflow.d.ts'), 'export declare const Y: number;');
  expect(compiledWorkflowHash(root)).toBe(last);
  fs.rmSync(root, { recursive: true, force: true });
});
