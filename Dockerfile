# One image for every app service (consumers, api, simulator, topics, issue-key): the sources run
# with tsx, a devDependency, so this installs the full lockfile (`npm ci`), not `--omit=dev`.
# The base is a build argument: the official image on a Docker host; where no registry is reachable,
# a local stand-in (infra/containers/build-images.sh node builds one: Debian with Node 20).
ARG NODE_IMAGE=node:20-slim
FROM ${NODE_IMAGE}

WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .

ENV NODE_ENV=production
USER node

# Each compose service names its command; running the image alone starts the API. node itself,
# with tsx as a loader: the tsx and npx wrappers turn a SIGTERM not acknowledged within ~60 ms
# into a SIGKILL, so the batch in hand or in-flight requests were lost (docs/reliability.md).
CMD ["node", "--import", "tsx", "api/main.ts"]
