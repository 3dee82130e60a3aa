import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';

/**
 * Names new endpoints: `ep_`, 12 hex digits of milliseconds, a 4-digit sequence within the
 * millisecond, 12 random hex digits. Ids sort in creation order (the list's keyset); the random part
 * keeps ids made by two instances in the same millisecond apart.
 */
@Injectable()
export class EndpointIds {
  private lastMs = 0;
  private sequence = 0;

  next(): string {
    const now = Date.now();
    this.sequence = now === this.lastMs ? this.sequence + 1 : 0;
    this.lastMs = now;
    return `ep_${now.toString(16).padStart(12, '0')}${this.sequence.toString(16).padStart(4, '0')}${randomBytes(6).toString('hex')}`;
  }
}
