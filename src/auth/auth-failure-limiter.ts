import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { RateLimitStorage } from '../counters/rate-limit.storage';
import { clientNetwork } from './client-network';

const WINDOW_MS = 60_000;

/** A 429 for an address past its failed authentications, with the seconds the filter sends as `Retry-After`. */
export class TooManyAuthFailuresException extends HttpException {
  constructor(
    readonly retryAfterSeconds: number,
    perMinute: number,
  ) {
    super(
      `Too many failed authentications from this address (at most ${perMinute} per minute); retry after ${retryAfterSeconds} s`,
      HttpStatus.TOO_MANY_REQUESTS,
    );
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
   * limit); resolves with what to answer: the 401 itself, or a 429 past the limit.
   */
  async failed(address: string, unauthorized: HttpException): Promise<HttpException> {
    const key = `plant-store:auth-failures:${clientNetwork(address)}`;
    const { limited, resetInMs } = await this.counters.hit(key, WINDOW_MS, this.perMinute);
    if (!limited) return unauthorized;
    return new TooManyAuthFailuresException(Math.max(1, Math.ceil(resetInMs / 1000)), this.perMinute);
  }
}
