# Node 26: the active LTS line since October 2026 (supported to April 2029); CI runs the whole suite
# on it as well as on the machines' Node 20. better-sqlite3 12 compiles against it in the build stage.
ARG NODE_IMAGE=node:26-slim

# --- build: dev dependencies, the toolchain better-sqlite3 falls back to, and the compiler
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# patches/: our changes to dependencies, applied by `npm ci` (postinstall: patch-package); `npm prune`
# below removes patch-package and keeps the patched files.
COPY package.json package-lock.json .npmrc ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
# Production dependencies only; of better-sqlite3's build, only the addon itself (its SQLite sources
# and the compiler's objects were a quarter of node_modules).
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src build/deps \
 && find build/Release -mindepth 1 ! -name better_sqlite3.node -exec rm -rf {} +

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
CMD ["node", "--max-old-space-size=256", "--no-allocation-site-pretenuring", "dist/main.js"]
