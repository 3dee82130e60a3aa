import { eventData } from '../events/event-data';
import { EventType } from '../events/event-type';
import { Events } from '../events/events';
import { NewPlantDto } from './dto/new-plant.dto';
import { Plant } from './plant';

/**
 * The port through which the plants feature publishes "a plant was created", in the
 * transaction that stores it (`InsertOnce`), never for a replay or a 409. `PlantsModule` binds it.
 */
export abstract class PlantCreated extends Events<Plant> {}

/**
 * The `plant.created` webhook event: its body is the NewPlant itself (`bare`), ids exact,
 * without the Standard Webhooks envelope.
 */
// The document's example of both webhooks, written as they are sent: NewPlant's own examples.
const EXAMPLE: Plant = { id: 10n, name: 'Monstera deliciosa', tag: 'tropical' };

export const PLANT_CREATED: EventType<Plant> = {
  name: 'plant.created',
  port: PlantCreated,
  data: eventData,
  bare: true,
  webhook: {
    name: 'newPlant',
    summary: 'A new plant was added to the store',
    description: 'Sent once per stored plant (a create that is not a replay), with the NewPlant as its body.',
    data: NewPlantDto,
    example: EXAMPLE,
  },
};

/**
 * The port through which the plants feature publishes "a plant was deleted", in the
 * transaction that deletes it (`InsertOnce`), never for a 404. `PlantsModule` binds it.
 */
export abstract class PlantDeleted extends Events<Plant> {}

/** The `plant.deleted` webhook event, in the Standard Webhooks envelope: its `data` is the plant as it was stored. */
export const PLANT_DELETED: EventType<Plant> = {
  name: 'plant.deleted',
  port: PlantDeleted,
  data: eventData,
  webhook: {
    name: 'plantDeleted',
    summary: 'A plant was deleted from the store',
    description:
      'Sent once per `DELETE /plants/{id}` answered 204, with the plant as it was stored as its `data` ' +
      '(a 404 sends nothing). Endpoints receive it only when their `eventTypes` name it.',
    data: NewPlantDto,
    example: EXAMPLE,
  },
};
