import { Events } from '../events/events';
import { EventType } from '../events/event-type';
import { NewPlantDto } from './dto/new-plant.dto';
import { newPlantPayload } from './new-plant.payload';
import { Plant } from './plant';

/**
 * The ports through which plants publishes its changes, in the transaction that makes them:
 * `PlantsModule` binds each with `publishes(…)` to whoever publishes events (the webhook outbox);
 * plants knows nothing more of who listens.
 */
export abstract class PlantCreated extends Events<Plant> {}
export abstract class PlantDeleted extends Events<Plant> {}

/** The plant of the document's examples: the NewPlant schema's own example. */
const EXAMPLE_PLANT: Plant = { id: 10n, name: 'Monstera deliciosa', tag: 'tropical' };

/** The new-plant event: its subscribers get the NewPlant exactly, as the specification's webhook does. */
export const PLANT_CREATED: EventType<Plant> = {
  name: 'plant.created',
  port: PlantCreated,
  data: newPlantPayload,
  bare: true,
  webhook: {
    name: 'newPlant',
    summary: 'A new plant was added to the store',
    description: 'Sent once per stored plant (a create that is not a replay), with the NewPlant as its body.',
    data: NewPlantDto,
    example: EXAMPLE_PLANT,
  },
};

/** A plant was deleted: its data is the plant as it was stored. */
export const PLANT_DELETED: EventType<Plant> = {
  name: 'plant.deleted',
  port: PlantDeleted,
  data: newPlantPayload,
  webhook: {
    name: 'plantDeleted',
    summary: 'A plant was deleted from the store',
    description:
      'Sent once per `DELETE /plants/{id}` answered 204, with the plant as it was stored as its `data` ' +
      '(a 404 sends nothing). Endpoints receive it only when their `eventTypes` name it.',
    data: NewPlantDto,
    example: EXAMPLE_PLANT,
  },
};
