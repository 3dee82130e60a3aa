'use strict';
// A span processor that exports nothing and only keeps the spans that end, for a while, in turns of
// 30,000 requests (the `hold` copies of variants.js, for the ninth pass's step): drops each span as it
// ends, then keeps them in a buffer emptied every 300 ms, then every 30 ms, and again. A span in a buffer
// emptied every T ms lives 0 to T ms after it ends (T / 2 on average), as in a batch that leaves on a
// timer. The only difference between the turns is how long an ended span stays alive.
// The turn follows the request count the sampling decision keeps (globalThis.variantRequests).
const { performance } = require('node:perf_hooks');

const TURNS = [0, 300, 30];

class HoldProcessor {
  held = [];
  since = 0;

  onStart() {}

  onEnd(span) {
    const holdMs = TURNS[Math.floor((globalThis.variantRequests | 0) / 30000) % TURNS.length];
    if (holdMs === 0) {
      this.held = [];
      return;
    }
    const now = performance.now();
    if (this.held.length === 0) this.since = now;
    else if (now - this.since > holdMs) {
      this.held = [];
      this.since = now;
    }
    this.held.push(span);
  }

  forceFlush() {
    return Promise.resolve();
  }

  shutdown() {
    this.held = [];
    return Promise.resolve();
  }
}

module.exports = { HoldProcessor };
