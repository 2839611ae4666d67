/** Tests wait on conditions, never on the clock, through the relay's one polling helper (src/poll.ts). */
export { waitFor } from '../../src/poll';
