/**
 * Bounds the ingester's work in flight across all partitions of the process, by count and by bytes. The byte
 * bound is what keeps a burst of large records inside the heap limit: a record's parsed JSON can take twenty
 * times its size (hundreds of thousands of `{}` in 1 MB), so four partitions each parsing a 1 MB record at
 * once can need 80 MiB. A record larger than the whole byte budget still runs, alone. Waiters are served in
 * order, so a large record is not starved by a stream of small ones.
 */
export class Semaphore {
  private permits: number;
  private bytes: number;
  private readonly waiters: { weight: number; resolve: () => void }[] = [];

  constructor(
    permits: number,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {
    this.permits = permits;
    this.bytes = maxBytes;
  }

  /** Takes one permit and `bytes` (capped at the budget) of the byte budget; resolves once both are free. */
  async acquire(bytes = 0): Promise<number> {
    const weight = Math.min(Math.max(0, bytes), this.maxBytes);
    if (this.waiters.length === 0 && this.fits(weight)) {
      this.take(weight);
      return weight;
    }
    await new Promise<void>((resolve) => this.waiters.push({ weight, resolve }));
    return weight;
  }

  /** Returns what `acquire` took (pass its result). */
  release(weight = 0): void {
    this.permits++;
    this.bytes += weight;
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.weight)) {
      const next = this.waiters.shift()!;
      this.take(next.weight);
      next.resolve();
    }
  }

  private fits(weight: number): boolean {
    return this.permits > 0 && this.bytes >= weight;
  }

  private take(weight: number): void {
    this.permits--;
    this.bytes -= weight;
  }
}
