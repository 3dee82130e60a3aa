'use strict';
// Two of the service's batch span processors on one exporter, in turns of 30,000 requests (the `batches`
// copies of variants.js): batches of 2,048 spans (as shipped), then of 256, and again. The turn follows the
// request count the sampling decision keeps (globalThis.variantRequests). Everything else is as shipped.
const SIZES = [2048, 256];

class AlternatingBatches {
  constructor(processorOf) {
    this.processors = SIZES.map(processorOf);
  }

  onStart() {}

  onEnd(span) {
    this.processors[Math.floor((globalThis.variantRequests | 0) / 30000) % SIZES.length].onEnd(span);
  }

  async forceFlush() {
    await Promise.all(this.processors.map((processor) => processor.forceFlush()));
  }

  /** Both flushed before either shuts the exporter they share down. */
  async shutdown() {
    await this.forceFlush();
    await Promise.all(this.processors.map((processor) => processor.shutdown()));
  }
}

module.exports = { AlternatingBatches, SIZES };
