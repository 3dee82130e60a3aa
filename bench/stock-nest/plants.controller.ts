import {
  Body,
  ConflictException,
  Controller,
  Get,
  HttpCode,
  HttpStatus,
  NotFoundException,
  Param,
  ParseIntPipe,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { ListPlantsQuery, NewPlantDto } from './plant.dto';
import { Plant, PlantsRepository } from './plants.repository';

@ApiTags('plants')
@ApiBearerAuth()
@Controller('plants')
export class PlantsController {
  constructor(private readonly plants: PlantsRepository) {}

  /** 200 with the plant; the same plant again is a replay (200), the same id with other content a 409. */
  @Post()
  @HttpCode(HttpStatus.OK)
  async create(@Body() { id, name, tag }: NewPlantDto): Promise<Omit<Plant, 'id'>> {
    if (!(await this.plants.insert(id, name, tag))) {
      const stored = await this.plants.find(id);
      if (stored?.name !== name || stored.tag !== tag)
        throw new ConflictException(`A plant with id ${id} already exists with a different name or tag`);
    }
    return tag === undefined ? { name } : { name, tag };
  }

  /** Keyset pages: at most `limit` plants after the id `after`, and a Link to the next page. */
  @Get()
  async list(@Query() { limit, after }: ListPlantsQuery, @Res({ passthrough: true }) reply: FastifyReply) {
    const plants = await this.plants.list(limit + 1, after);
    if (plants.length > limit) {
      plants.length = limit;
      void reply.header('link', `</plants?limit=${limit}&after=${plants[limit - 1].id}>; rel="next"`);
    }
    return plants;
  }

  // ParseIntPipe: parseInt, so an id above 2^53 is read rounded (the service answers 400 or the exact plant).
  @Get(':id')
  async get(@Param('id', ParseIntPipe) id: number): Promise<Plant> {
    const plant = await this.plants.find(id);
    if (plant === undefined) throw new NotFoundException(`No plant with id ${id}`);
    return plant;
  }
}
