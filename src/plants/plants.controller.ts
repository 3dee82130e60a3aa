import { Body, Controller, HttpCode, HttpStatus, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses } from '../errors/api-error-responses.decorator';
import { NewPlantDto } from './dto/new-plant.dto';
import { PlantDto, toPlantDto } from './dto/plant.dto';
import { PlantsService } from './plants.service';

@ApiTags('plants')
@Controller('plants')
export class PlantsController {
  constructor(private readonly plants: PlantsService) {}

  /**
   * Creates a new plant in the store.
   *
   * A 200 means the plant is durably stored. Sending the same plant again (same id, name and tag)
   * is a safe retry and returns it again; the same id with a different name or tag is a 409.
   */
  @Post()
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ operationId: 'createPlant', summary: 'Create a plant' })
  @ApiOkResponse({ type: PlantDto, description: 'The plant is stored (or was already, identically).' })
  @ApiErrorResponses({
    400: 'The body is missing, is not JSON, or is not a valid NewPlant.',
    401: 'No bearer token, a malformed Authorization header, or an unknown token.',
    409: 'The id is already stored with a different name or tag; nothing was changed.',
    413: 'The body is larger than the configured limit (BODY_LIMIT, 1 MiB by default).',
    415: 'The body is not application/json.',
    429: 'Over the rate limit (RATE_LIMIT_PER_MINUTE per token, when set); see Retry-After (seconds).',
    500: 'An unexpected failure; the details are in the service log.',
    503:
      'The database is unreachable (the plant was not stored) or did not answer within DATABASE_QUERY_TIMEOUT_MS ' +
      '(it may have been). Either way, send the same request again after a short wait: a replay is safe.',
  })
  async create(@Body() newPlant: NewPlantDto): Promise<PlantDto> {
    return toPlantDto(await this.plants.create(newPlant));
  }
}
