import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// docker-compose.yml as data, for the tests that hold it against the Dockerfile and run its
// commands in the built image.

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | number>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  expose?: string[];
  network_mode?: string;
  profiles?: string[];
}

export interface Compose {
  services: Record<string, ComposeService>;
  networks?: unknown;
}

const root = new URL('../../', import.meta.url);
export const readRepoFile = (path: string): string => readFileSync(new URL(path, root), 'utf8');

// merge: compose's `<<: *app` keys.
export const compose = (): Compose => parse(readRepoFile('docker-compose.yml'), { merge: true });
