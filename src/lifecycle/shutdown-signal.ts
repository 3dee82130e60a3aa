import { Injectable } from '@nestjs/common';

/**
 * Raised once, when SIGTERM (or SIGINT) arrives, before anything closes: readiness answers 503 from
 * then on, and the webhook dispatcher aborts its sends in flight and stops claiming.
 */
@Injectable()
export class ShutdownSignal {
  private readonly controller = new AbortController();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get raised(): boolean {
    return this.controller.signal.aborted;
  }

  raise(): void {
    this.controller.abort();
  }
}
