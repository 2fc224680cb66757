# One image for every app service (consumers, api, simulator, topics, issue-key): the sources run
# with tsx, a devDependency, so this installs the full lockfile (`npm ci`), not `--omit=dev`.
FROM node:20-slim

WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .

ENV NODE_ENV=production
USER node

# Each compose service names its command; running the image alone starts the API.
CMD ["npx", "tsx", "api/main.ts"]
