import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { RateLimitStorage } from '../limit-storage/rate-limit.storage';
import { WindowCount } from '../limit-storage/window-counter';
import { clientNetwork } from './client-network';
import { Refusal } from './refusal';

const WINDOW_MS = 60_000;

/**
 * A 429 for an address past its failed authentications (`Refusal.tooManyFailures`, as an exception
 * for Nest's pipeline), with the seconds the filter sends as `Retry-After`.
 */
export class TooManyAuthFailuresException extends HttpException {
  constructor(
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message, HttpStatus.TOO_MANY_REQUESTS);
  }
}

/**
 * Counts failed authentications per client address (`request.ip`, as TRUST_PROXY resolves it; an
 * IPv6 client by its /64, see `clientNetwork`), in the shared counters (Redis when REDIS_URL is set).
 * Past AUTH_FAILURES_PER_MINUTE, a request from that address without a valid credential is answered
 * 429 instead of 401; a valid credential is never counted nor refused, so a flood from a shared
 * address does not lock out its real users. A failure costs the same at any number of addresses.
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly perMinute: number;

  constructor(
    config: AppConfig,
    private readonly counters: RateLimitStorage,
  ) {
    this.perMinute = config.authFailuresPerMinute;
  }

  /**
   * Counts one failure from `address` (a fixed one-minute window: O(1) per failure, however high the
   * limit); what to answer: the 401 itself, or a 429 past the limit. At once when counted in this
   * process, a promise when counted in Redis.
   */
  failed(address: string, unauthorized: Refusal): Refusal | Promise<Refusal> {
    const key = `plant-store:auth-failures:${clientNetwork(address)}`;
    const counted = this.counters.hit(key, WINDOW_MS, this.perMinute);
    return counted instanceof Promise
      ? counted.then((count) => this.answer(count, unauthorized))
      : this.answer(counted, unauthorized);
  }

  private answer({ limited, resetInMs }: WindowCount, unauthorized: Refusal): Refusal {
    if (!limited) return unauthorized;
    return Refusal.tooManyFailures(Math.max(1, Math.ceil(resetInMs / 1000)), this.perMinute);
  }
}
