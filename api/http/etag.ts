import { hash } from 'node:crypto';

// A strong validator of the exact body bytes: the same body from any replica gives the same tag.
// 27 base64url characters keep 162 bits of sha256, far beyond any collision a cache could meet.
export function etagOf(body: string | Buffer): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;
}
