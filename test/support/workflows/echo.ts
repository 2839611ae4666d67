// A trivial workflow for the stack smoke test: proves a real worker runs a real workflow task.
export async function echo(text: string): Promise<string> {
  return `echo: ${text}`;
}
