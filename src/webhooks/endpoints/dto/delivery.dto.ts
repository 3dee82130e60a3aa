import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsDefined, IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { parse } from 'lossless-json';
import { DEFAULT_PAGE_LIMIT, PageLimit } from '../../../common/paging/page-query.dto';
import { AttemptRecord, DeliveryView } from '../../deliveries';
import { TIMESTAMP_SCHEMA } from './endpoint.dto';
import { IsRfc3339DateTime } from './rfc3339';

/** A `webhook-id`: `msg_` and 32 hex digits (`outbox.writer.ts`). */
const DELIVERY_ID_SCHEMA = { pattern: '^msg_[0-9a-f]{32}$', maxLength: 36 } as const;
/** What an attempt's `error` may hold at most (longer text is cut when served). */
const MAX_ATTEMPT_ERROR_LENGTH = 500;
/** Counts the service keeps in JavaScript numbers (an attempt's length, attempts, a recover's count). */
const COUNT_SCHEMA = { type: 'integer', format: 'int32', minimum: 0, maximum: 2_147_483_647 } as const;
/** An RFC 3339 date-time as `IsRfc3339DateTime` accepts it: seconds, a fraction of at most 9 digits, an offset. */
const DATE_TIME_INPUT_SCHEMA = { format: 'date-time', maxLength: 35 } as const;

/** One try of a delivery. */
@ApiSchema({ name: 'DeliveryAttempt' })
export class AttemptDto {
  /** When it started: RFC 3339, UTC. */
  @ApiProperty(TIMESTAMP_SCHEMA)
  at!: string;
  /** The receiver's status, when it answered. */
  // Three digits: the HTTP parser takes no other status.
  @ApiPropertyOptional({ type: 'integer', format: 'int32', minimum: 0, maximum: 999 })
  responseStatus?: number;
  /** What went wrong when no answer came: a timeout, a refused connection, a blocked address. */
  @ApiPropertyOptional({ maxLength: MAX_ATTEMPT_ERROR_LENGTH })
  error?: string;
  @ApiProperty(COUNT_SCHEMA)
  durationMs!: number;
}

/** One event for one endpoint. */
@ApiSchema({ name: 'Delivery' })
export class DeliveryDto {
  /** The `webhook-id`: the same for every endpoint, on every attempt and on a resend. @example "msg_5f2b8c0e9a7d4e1f8b3c6a9d2e5f8a1b" */
  @ApiProperty(DELIVERY_ID_SCHEMA)
  id!: string;
  @ApiProperty({ pattern: '^ep_[0-9a-f]{1,64}$', maxLength: 67 })
  endpointId!: string;
  /** @example "plant.created" */
  @ApiProperty({ maxLength: 100 })
  eventType!: string;
  /**
   * The body as sent, its integers exact: the body of its event type's webhook (`plant.created`: a
   * NewPlant; any other type: the Standard Webhooks envelope, `{"type", "timestamp", "data"}`).
   */
  @ApiProperty({ type: 'object', additionalProperties: true })
  payload!: unknown;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] })
  status!: string;
  /** Attempts made so far. */
  @ApiProperty(COUNT_SCHEMA)
  attempts!: number;
  @ApiProperty(TIMESTAMP_SCHEMA)
  createdAt!: string;
  /** While pending. */
  @ApiPropertyOptional(TIMESTAMP_SCHEMA)
  nextAttemptAt?: string;
  /** Once tried. */
  @ApiPropertyOptional({ type: AttemptDto })
  lastAttempt?: AttemptDto;
}

/** A delivery with every attempt, oldest first. */
@ApiSchema({ name: 'DeliveryWithAttempts' })
export class DeliveryWithAttemptsDto extends DeliveryDto {
  // Every attempt is kept (no cap): as many as `attempts` counts.
  @ApiProperty({ type: [AttemptDto], maxItems: COUNT_SCHEMA.maximum })
  attemptLog!: AttemptDto[];
}

/** The body of `POST /webhooks/endpoints/{id}/recover`. */
@ApiSchema({ name: 'RecoverRequest' })
export class RecoverDto {
  /** Queue again every failed delivery created at or after this time: an RFC 3339 date-time, with seconds and an offset or `Z`. @example "2026-11-23T00:00:00Z" */
  @ApiProperty(DATE_TIME_INPUT_SCHEMA)
  @IsDefined({ message: 'since is required' })
  @IsRfc3339DateTime({ message: 'since must be an RFC 3339 date-time' })
  @IsString({ message: 'since must be an RFC 3339 date-time' })
  since!: string;

  /** …and before this one (RFC 3339); no end when absent. */
  @ApiPropertyOptional(DATE_TIME_INPUT_SCHEMA)
  @IsOptional()
  @IsRfc3339DateTime({ message: 'until must be an RFC 3339 date-time' })
  @IsString({ message: 'until must be an RFC 3339 date-time' })
  until?: string;
}

/** What a recover queued. */
@ApiSchema({ name: 'RecoverResult' })
export class RecoverResultDto {
  /** Failed deliveries made pending again. */
  @ApiProperty(COUNT_SCHEMA)
  queued!: number;
}

/** `status`, `limit` and `after` of a page of the delivery log. */
export class ListDeliveriesQueryDto {
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'], required: false })
  @IsOptional()
  @IsIn(['pending', 'succeeded', 'failed'], { message: 'status must be pending, succeeded or failed' })
  status?: 'pending' | 'succeeded' | 'failed';

  @PageLimit()
  limit: number = DEFAULT_PAGE_LIMIT;

  /** An opaque cursor: the `Link: rel="next"` header of the previous page carries it. */
  @ApiProperty({ required: false, maxLength: 18 })
  @IsOptional()
  @Matches(/^[0-9]{1,18}$/, { message: 'after must be a cursor from a Link header' })
  @IsString({ message: 'after must be a cursor from a Link header' })
  after?: string;
}

function toAttemptDto(attempt: AttemptRecord): AttemptDto {
  return {
    at: new Date(attempt.atMs).toISOString(),
    ...(attempt.responseStatus === undefined ? {} : { responseStatus: attempt.responseStatus }),
    ...(attempt.error === undefined ? {} : { error: boundedText(attempt.error, MAX_ATTEMPT_ERROR_LENGTH) }),
    durationMs: attempt.durationMs,
  };
}

/**
 * The stored body as an object whose integers are raw JSON, so `JSON.stringify` writes their digits as
 * stored: whatever the event type, a body needs no schema to stay exact (the document says what it is).
 */
function payloadOf(text: string): unknown {
  return parse(text, null, (digits) => (/^-?[0-9]+$/.test(digits) ? rawJson(digits) : Number(digits)));
}

/** `JSON.rawJSON` (Node 21 and later), which TypeScript's libraries do not declare yet. */
const rawJson = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

export function toDeliveryDto(delivery: DeliveryView): DeliveryDto {
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    eventType: delivery.eventType,
    payload: payloadOf(delivery.payload),
    status: delivery.status,
    attempts: delivery.attempts,
    createdAt: new Date(delivery.createdAtMs).toISOString(),
    ...(delivery.nextAttemptAtMs === undefined
      ? {}
      : { nextAttemptAt: new Date(delivery.nextAttemptAtMs).toISOString() }),
    ...(delivery.lastAttempt === undefined ? {} : { lastAttempt: toAttemptDto(delivery.lastAttempt) }),
  };
}

export function toDeliveryWithAttemptsDto(
  delivery: DeliveryView & { attemptLog: AttemptRecord[] },
): DeliveryWithAttemptsDto {
  return { ...toDeliveryDto(delivery), attemptLog: delivery.attemptLog.map(toAttemptDto) };
}

function boundedText(text: string, maxLength: number): string {
  return text.length <= maxLength ? text : `${text.slice(0, maxLength - 1)}…`;
}
