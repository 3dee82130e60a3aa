#!/usr/bin/env bash
# The generator can't rot, and plants is its output: in a scratch copy of this working tree (tracked
# and untracked files, no node_modules, no dist), the generator first writes plants with its options
# into a tree of its own and diffs it against src/plants (no build; the differences allowed are listed
# below, each with its reason). Then `npm run generate:resource` makes a scratch resource with a field of every
# kind, required and optional, a pattern's `^ [ ] { } $ ?` and a list's `|` given as on a command line
# (which builds and refreshes openapi.json); ESLint and Prettier check what it wrote, the OpenAPI
# linters the refreshed document, while (on the other core) its own tests run on both stores (unit,
# repository, and the e2e contract of its create, list, get and delete), with the test that reads every resource (the live document equal to openapi.json, every operation
# documented as served); then its one line to publish events is turned on, and the document checked
# again. (A second build is not avoidable: an incremental one saved ~1 s of the ~13 s of CPU.)
# The copy is removed at the end, pass or fail; the tests drop the PostgreSQL schemas they make.
#
# node_modules is not copied (568 MiB): the scratch one holds a symlink to each entry of this one,
# except `plant-store-schematics`, which points at the scratch copy's schematics/, as npm links it.
#
# The scratch resource needs TEST_DATABASE_URL (set by .ci/run): both stores, never one; the plants diff
# runs without it. Usage: bash scripts/check-generator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ ! -f package.json ] || [ ! -f schematics/collection.json ]; then
  echo "check-generator: run it from the repository (scripts/check-generator.sh)" >&2
  exit 1
fi
name=${GENERATOR_CHECK_NAME:-scratch-probes}

if [ -e "src/$name" ]; then
  echo "check-generator: src/$name exists here; set GENERATOR_CHECK_NAME to another name" >&2
  exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/plant-store-generator-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
started=$SECONDS

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | grep -zv '^node_modules/' |
    tar --null --ignore-failed-read -cf - -T - | tar -xf - -C "$scratch"
else
  tar --exclude=./node_modules --exclude=./dist --exclude=./coverage --exclude=./test-output -cf - . | tar -xf - -C "$scratch"
fi
mkdir "$scratch/node_modules"
for entry in node_modules/* node_modules/.bin; do
  [ "$entry" = node_modules/plant-store-schematics ] || ln -s "$root/$entry" "$scratch/$entry"
done
ln -s ../schematics "$scratch/node_modules/plant-store-schematics"

cd "$scratch"
# Plants is the generator's output with its options: generated in a tree of its own (the schematic,
# the settings it reads, the scratch node_modules; not registered, so no build), it must equal
# src/plants but for the differences listed here, each made the same on both sides before the diff.
# The script itself, not `npm run generate:resource`, whose Node check is not in that tree.
plants_tree="$scratch/.plants-generated"
mkdir -p "$plants_tree/scripts"
cp package.json nest-cli.json .prettierrc "$plants_tree/"
cp scripts/generate-resource.js "$plants_tree/scripts/"
cp -r schematics "$plants_tree/"
ln -s "$scratch/node_modules" "$plants_tree/node_modules"
(cd "$plants_tree" && node scripts/generate-resource.js plants --field name:text:200 --field 'tag?:text:100' \
  --answer-without-id --bare-created-event --group-commit --publish-events --date 2026-11-20 --skip-import)
allowed_only() {
  # The DTOs' property comments: the descriptions and examples of the document come from the
  # specification (the id's notes on exact integers, the tag's meaning, "Monstera deliciosa").
  find "$1/dto" -name '*.ts' -exec sed -i -E -e '/^  \/\*\*.*\*\/$/d' -e '/^  \/\*\*/,/^   \*\//d' {} +
  # The events' example: the NewPlant schema's own, which is the specification's.
  sed -i -E 's/^const EXAMPLE: Plant = .*/const EXAMPLE: Plant = (the NewPlant example);/' "$1/plant-events.ts"
  # Plants' first step predates named migrations: databases that recorded it as version 1 know it so.
  sed -i '/^    legacyVersion: 1,$/d' "$1/persistence/plants.migrations.ts"
}
mkdir "$scratch/.plants-kept"
cp -r src/plants/. "$scratch/.plants-kept/"
allowed_only "$plants_tree/src/plants"
allowed_only "$scratch/.plants-kept"
if ! diff -ru "$plants_tree/src/plants" "$scratch/.plants-kept"; then
  echo "check-generator: src/plants differs from the generator's plants beyond the differences listed above" >&2
  exit 1
fi
rm -rf "$plants_tree" "$scratch/.plants-kept" # out of the way of the build, the linters and Jest
echo "check-generator: src/plants is the generator's output, but for the listed differences ($((SECONDS - started)) s)"

if [ -z "${TEST_DATABASE_URL:-}" ]; then
  echo "check-generator: TEST_DATABASE_URL is not set; the scratch resource must be tested on both stores" >&2
  exit 1
fi

# One resource, one build: every kind of field (schematics/resource/fields.js), a camelCase one among them,
# with the options plants' text fields don't exercise: an answer without the id, the group commit.
npm run generate:resource -- "$name" --answer-without-id --group-commit --field name:text:200 --field 'code?:pattern:^[A-Z]{2}-[0-9]{1,4}$' \
  --field count:integer:1..10000 --field 'inStock?:boolean' --field 'stock?:int64' --field 'size:oneof:small|medium|large'
if ! grep -q 'pattern: /^\[A-Z\]{2}-\[0-9\]{1,4}\$/' "src/$name/dto/new-"*.dto.ts; then
  echo "check-generator: the pattern did not reach the DTO as it was given" >&2
  exit 1
fi
if ! grep -q "${name}.module" src/app.module.ts || ! grep -q "/${name}/persistence/" src/app.migrations.ts; then
  echo "check-generator: the resource was not registered in src/app.module.ts and src/app.migrations.ts" >&2
  exit 1
fi
generated=$(find "src/$name" "test/$name-repository.spec.ts" "test/$name.examples.ts" "test/e2e/$name.e2e-spec.ts" -name '*.ts' | sort)
echo "check-generator: generated $(echo "$generated" | wc -l) files, $(cat $generated | wc -l) lines; built at $((SECONDS - started)) s"

# The refreshed document, with the resource in it, against the OpenAPI linters of `npm run lint`.
lint_document() { if [ -f scripts/lint-openapi.js ]; then npm exec -- node scripts/lint-openapi.js; fi; }
lint_generated() {
  npx eslint $generated src/app.module.ts src/app.migrations.ts
  npx prettier --check $generated src/app.module.ts src/app.migrations.ts
  lint_document
}
# The linters (a function) in the background beside the tests given, each on one core: neither writes
# what the other reads. The linters' output is printed when both are done; either failing fails.
# Jest caches in the copy, so its entries for these paths go with it.
lint_beside_tests() {
  local linters=$1 lint=0 tests=0 pid
  shift
  "$linters" >"$scratch/.lint.log" 2>&1 &
  pid=$!
  npx jest --runInBand --cacheDirectory "$scratch/.jest-cache" "$@" || tests=$?
  wait "$pid" || lint=$?
  cat "$scratch/.lint.log"
  if [ "$lint" -ne 0 ] || [ "$tests" -ne 0 ]; then
    echo "check-generator: failed (linters: exit $lint, tests: exit $tests)" >&2
    exit 1
  fi
}

# The resource's own tests, and the document's (every operation documented as served, with its
# failures; the live document equal to the refreshed openapi.json).
# With them, the other tests that read every resource: the migration registry, the typed client
# generated from openapi.json, the document's paths.
lint_beside_tests lint_generated "src/$name/" "test/$name-repository.spec.ts" "test/e2e/$name.e2e-spec.ts" \
  test/e2e/openapi.e2e-spec.ts test/migrations.spec.ts test/e2e/typed-client.e2e-spec.ts test/e2e/shared-kernel.e2e-spec.ts
echo "check-generator: linted and tested at $((SECONDS - started)) s"

# Its lines to publish events, turned on: it builds, the document declares two webhooks more, the
# resource's `<singular>.created` and `<singular>.deleted` with their bodies in the envelope (the type a
# constant), and still lints and equals the live one.
webhooks_before=$(npm exec --silent -- node -p 'Object.keys(require("./openapi.json").webhooks ?? {}).join(",")')
sed -i 's/{ enabled: false }/{ enabled: true }/' "src/$name/$name.module.ts"
if ! grep -q '{ enabled: true }' "src/$name/$name.module.ts"; then
  echo "check-generator: src/$name/$name.module.ts has no \`publishes(…, { enabled: false })\` line to turn on" >&2
  exit 1
fi
npm run openapi
WEBHOOKS_BEFORE=$webhooks_before npm exec -- node -e '
  const webhooks = require("./openapi.json").webhooks ?? {};
  const added = Object.keys(webhooks).filter((key) => !process.env.WEBHOOKS_BEFORE.split(",").includes(key));
  const types = added.map((key) => {
    const post = webhooks[key].post;
    const type = post.requestBody.content["application/json"].schema.properties?.type?.const ?? "";
    return post.description.startsWith(`Event type \`${type}\``) ? type.replace(/^[a-z0-9-]+\./, "<singular>.") : `${key}: no envelope`;
  });
  if (types.sort().join(" ") !== "<singular>.created <singular>.deleted") {
    console.error(`check-generator: with events on, the document should declare two webhooks more, the resource'"'"'s <singular>.created and <singular>.deleted in the envelope; it added: ${types.join(", ") || "none"}`);
    process.exit(1);
  }'
echo "check-generator: built with events on at $((SECONDS - started)) s"
lint_beside_tests lint_document test/e2e/openapi.e2e-spec.ts
echo "check-generator: passed in $((SECONDS - started)) s"
