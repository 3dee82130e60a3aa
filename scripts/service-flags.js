'use strict';
// The Node flags the service ships with: those `npm start` gives node before dist/main.js (the
// Dockerfile's CMD is held to them by test/e2e/runtime.e2e-spec.ts). The bench scripts
// (bench/lib.js) and the tests that start the built service (test/support/service-process.ts) run
// it with these, so each measures and tests what is shipped.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const start = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).scripts.start;
const match = /^node ((?:--\S+ )*)dist\/main\.js$/.exec(start);
if (match === null) throw new Error(`package.json's start script is not "node [--flag ...] dist/main.js": ${start}`);

/** @type {string[]} */
const SERVICE_NODE_FLAGS = match[1].split(' ').filter(Boolean);

module.exports = { SERVICE_NODE_FLAGS };
