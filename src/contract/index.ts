/**
 * The contract (docs/contract.md) in code: names, the dispatch validator, the dead-letter record. Product code
 * imports it from here; workflow code imports ./names, ./dispatch and ./workflow (the shapes the workflow and
 * its activities pass each other, imported from there by every process) directly (lint keeps Node-only modules
 * such as ./dlqRecord out of the workflow bundle).
 */
export * from './base64';
export * from './dispatch';
export * from './dlqErrorClass';
export * from './dlqHeaders';
export * from './dlqRecord';
export * from './names';
export * from './tenantPause';
export * from './testDeadLetter';
