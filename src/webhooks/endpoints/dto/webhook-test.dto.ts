import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ENDPOINT_ID_SCHEMA } from './endpoint.dto';

/** The `data` of a `webhook.test` event. */
@ApiSchema({ name: 'WebhookTest' })
export class WebhookTestDto {
  /** The endpoint the test was sent to. @example "ep_019ab3c4d5e600002f4e1a9b7c3d" */
  @ApiProperty(ENDPOINT_ID_SCHEMA)
  endpointId!: string;
}
