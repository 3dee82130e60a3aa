import { CreatedEvents } from '../common/events/created-events';
import { EventType } from '../common/events/event-type';
import { NewPlantDto } from './dto/new-plant.dto';
import { newPlantPayload } from './new-plant.payload';
import { Plant } from './plant';

/**
 * The port through which plants records "plants created", inside the transaction that stores them
 * (see `CreatedEvents` for how each store asks). `PlantsModule` binds it with `publishes(PLANT_CREATED)`
 * to whoever publishes events (the webhook outbox); plants knows nothing more of who listens.
 */
export abstract class PlantEvents extends CreatedEvents<Plant> {}

/** The new-plant event: its subscribers get the NewPlant exactly, as the specification's webhook does. */
export const PLANT_CREATED: EventType<Plant> = {
  name: 'plant.created',
  port: PlantEvents,
  key: (plant) => plant.id,
  payload: newPlantPayload,
  webhook: {
    name: 'newPlant',
    summary: 'A new plant was added to the store',
    description: 'Sent once per stored plant (a create that is not a replay), with the NewPlant as its body.',
    body: NewPlantDto,
  },
};
