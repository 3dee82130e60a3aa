/** A plant as the service sees it: no decorators, nothing of the store. */
export interface Plant {
  readonly id: bigint;
  readonly name: string;
  readonly tag?: string;
}
