# syntax=docker/dockerfile:1
#
# poimen-relay image: one image, two processes (`worker`, `ingest`) plus the operator CLI
# (`topics apply`, `dlq list`, ...). The command is the CLI sub-command:
#   docker run poimen-relay worker        (default)
#   docker run poimen-relay ingest
#   docker run poimen-relay topics apply --tenant acme
#
# Base image: Node 24 LTS (Node 20 is end-of-life since April 2026; package.json's engines still accept
# >= 20.18.1 for hosts that run the CLI), Debian (glibc) on purpose, never alpine. @temporalio/core-bridge
# ships its native module prebuilt for glibc only (x86_64/aarch64-unknown-linux-gnu) inside the npm
# package; on musl the worker cannot load it. Nothing is downloaded at install time, so `npm ci` needs
# no toolchain.
#
# The image holds the product only: the build context is an allow-list (.dockerignore), tools/ and test/
# never enter it, and the docker compose samples (deploy/compose) run on stock images.
# Its contents, file by file with sizes: node deploy/docker/image-contents.mjs (docs/operations.md).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------------------------------
# build: install everything, compile TypeScript to dist/, then drop the dev dependencies.
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first, so source edits do not invalidate this layer.
# --ignore-scripts: the only install scripts in the tree are dev-only native builds (ssh2/cpu-features
# from testcontainers, @parcel/watcher) and self-checks (@swc/core, protobufjs) that the runtime
# does not need; skipping them keeps the build free of node-gyp/python and of network fallbacks.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# The commit poimen_relay_build_info reports (src/version.ts reads build-info.json): `docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD)`.
# Without it the gauge says "unknown" rather than guess.
ARG GIT_COMMIT=
RUN node -e "require('node:fs').writeFileSync('build-info.json', JSON.stringify(process.argv[1] ? { commit: process.argv[1] } : {}) + '\\n')" "${GIT_COMMIT}"

# The Temporal core bridge ships a ~28 MB native module for each of five platforms and its Rust sources:
# keep the target platform's module only. TARGETARCH is set by BuildKit (docker build --platform ...);
# the classic builder leaves it empty and builds for its own architecture, which dpkg names.
ARG TARGETARCH
COPY deploy/docker/prune-core-bridge.sh /tmp/prune-core-bridge.sh
RUN sh /tmp/prune-core-bridge.sh "${TARGETARCH:-$(dpkg --print-architecture)}" node_modules

# ---------------------------------------------------------------------------------------------------
# runtime: production dependencies, compiled code and the launcher; nothing else.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app

# Owned by root and read-only for the runtime user: the process cannot rewrite its own code.
# dist/version.js reads ../package.json at start (user-agent), so package.json sits next to dist/.
COPY --from=build /app/package.json /app/package-lock.json /app/build-info.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin

# The official node image ships the unprivileged `node` user (uid 1000).
USER node

# Metrics, /healthz and /readyz (contract §7): ingester 9464, worker 9465 (METRICS_PORT overrides).
EXPOSE 9464 9465

# Both processes drain on SIGTERM: the ingester stops fetching and commits what Temporal has
# accepted, the worker finishes in-flight activities; then they exit. Node runs as PID 1 here and
# the relay installs its own SIGTERM/SIGINT handlers, so the signal reaches it directly.
# Give it time to drain (compose: stop_grace_period; Kubernetes: terminationGracePeriodSeconds).
STOPSIGNAL SIGTERM

ENTRYPOINT ["node", "bin/poimen-relay.js"]
CMD ["worker"]
