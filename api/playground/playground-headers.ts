import { createHash } from 'node:crypto';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

// Headers of the playground's pages, where users type a key: helmet's set (nosniff, no
// framing, no referrer, same-origin isolation) and a strict Content-Security-Policy. The page
// Scalar renders has one inline bootstrap script; it runs because its SHA-256 is listed, so
// no inline script an attacker might inject does. Everything else comes from this origin.
// Styles: Scalar injects <style> elements and style attributes at run time ('unsafe-inline').

const POLICY = [
  "default-src 'none'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "object-src 'none'",
].join('; ');

const INLINE_SCRIPT = /<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi;

/** The policy for one page: its inline scripts allowed by hash, nothing else inline. */
export function contentSecurityPolicy(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)].map(
    (m) =>
      `'sha256-${createHash('sha256')
        .update(m[1] as string)
        .digest('base64')}'`,
  );
  return `${POLICY}; script-src 'self' ${hashes.join(' ')}`.trimEnd();
}

/** Registers helmet and the policy on `scope` (the playground's routes only: not the API's). */
export async function registerPlaygroundHeaders(scope: FastifyInstance): Promise<void> {
  await scope.register(helmet, {
    // Set below from each page's own inline scripts.
    contentSecurityPolicy: false,
    frameguard: { action: 'deny' },
    // TLS, when there is any, ends in front of this server, which sets HSTS itself.
    strictTransportSecurity: false,
  });
  let lastPage = '';
  let lastPolicy = `${POLICY}; script-src 'self'`;
  scope.addHook('onSend', (_request, reply, payload, done) => {
    if (
      typeof payload === 'string' &&
      /^text\/html/.test(String(reply.getHeader('content-type')))
    ) {
      // The page is the same on every request: hash it once.
      if (payload !== lastPage) {
        lastPage = payload;
        lastPolicy = contentSecurityPolicy(payload);
      }
      reply.header('content-security-policy', lastPolicy);
    } else {
      reply.header('content-security-policy', `${POLICY}; script-src 'self'`);
    }
    done(null, payload);
  });
}
