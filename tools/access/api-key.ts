import { randomInt, randomUUID } from 'node:crypto';
import { hashApiKey } from '../../src/domain/access-rule.js';

// API keys for integrators: `itk_` + 40 characters of [A-Za-z0-9] from the OS CSPRNG.
// Only the SHA-256 hash (the domain's hashApiKey) ever leaves this process on a topic.

export const API_KEY_PREFIX = 'itk_';
export const API_KEY_BODY_LENGTH = 40;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Uniform integer in [0, max); node:crypto's randomInt is unbiased (rejection sampling). */
export type RandomIndex = (max: number) => number;

export interface IssuedKey {
  readonly keyId: string;
  readonly apiKey: string;
  readonly keyHash: string;
}

export function generateApiKey(random: RandomIndex = randomInt): string {
  let body = '';
  for (let i = 0; i < API_KEY_BODY_LENGTH; i++) body += ALPHABET[random(ALPHABET.length)];
  return `${API_KEY_PREFIX}${body}`;
}

export function issueKey(random: RandomIndex = randomInt): IssuedKey {
  const apiKey = generateApiKey(random);
  return { keyId: `key-${randomUUID()}`, apiKey, keyHash: hashApiKey(apiKey) };
}
