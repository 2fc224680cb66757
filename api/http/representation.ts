import type { FastifyReply, FastifyRequest } from 'fastify';
import { chooseCoding, codedTag, compress, MIN_COMPRESS_BYTES } from './compression.js';
import { matchingTag, notModifiedSince } from './conditional.js';
import { etagOf } from './etag.js';
import { httpDate } from './last-modified.js';
import { API_HEADERS } from './response-headers.js';

// A 200 body of a read, negotiated (beyond.md §1-3): its ETag, Last-Modified, content coding,
// and whether the client's copy is current (304). Decided before the answer is sent, so a
// quota can charge a 304 less than a 200.

// Content-Type as the answers have always carried it: Fastify appends the charset to a string
// payload only, so a body built as text says `charset=utf-8`, one built as bytes (and every
// compressed payload) does not. Set explicitly, so a text body may be kept as bytes.
export const JSON_TYPE = 'application/json';
export const JSON_TEXT_TYPE = 'application/json; charset=utf-8';

/** A body with its validators: built once, it can be kept and served again (near-cache). */
export interface Representation {
  readonly body: string | Buffer;
  /** Content-Type of the identity-coded body. */
  readonly type: string;
  /** Strong tag of the identity-coded body. */
  readonly tag: string;
  readonly lastModifiedMs: number | null;
  /** `lastModifiedMs` as an HTTP-date. */
  readonly lastModified: string | null;
}

export function representationOf(
  body: string | Buffer,
  lastModifiedMs: number | null,
  tag: string = etagOf(body),
  type: string = typeof body === 'string' ? JSON_TEXT_TYPE : JSON_TYPE,
): Representation {
  const lastModified = lastModifiedMs === null ? null : httpDate(lastModifiedMs);
  return { body, type, tag, lastModifiedMs, lastModified };
}

export interface Negotiated {
  readonly notModified: boolean;
  readonly tag: string;
  /** The bytes to send (compressed when a coding was chosen); unused for a 304. */
  readonly payload: string | Buffer;
  readonly coding: 'br' | 'gzip' | null;
  /** Content-Type of `payload`; unused for a 304. */
  readonly type: string;
  readonly lastModified: string | null;
}

export function negotiate(request: FastifyRequest, rep: Representation): Negotiated {
  const headers = request.headers;
  const { body, lastModified } = rep;
  const identityTag = rep.tag;
  const acceptEncoding = headers['accept-encoding'];
  const coding =
    acceptEncoding !== undefined &&
    (typeof body === 'string' ? Buffer.byteLength(body) : body.length) >= MIN_COMPRESS_BYTES
      ? chooseCoding(acceptEncoding)
      : null;
  const tag = coding === null ? identityTag : codedTag(identityTag, coding);
  // Preconditions apply to GET and HEAD (RFC 9110 §13.2.1); a POST is answered as before.
  const method = request.method;
  if (method === 'GET' || method === 'HEAD') {
    const ifNoneMatch = headers['if-none-match'];
    if (ifNoneMatch !== undefined) {
      // Any coding of the same body is the same data: the client's copy is current, and the
      // 304 names the tag it holds so its cache freshens that stored response.
      const held = matchingTag(ifNoneMatch, [tag, identityTag, ...codedTags(identityTag)]);
      if (held !== null) {
        return { notModified: true, tag: held, payload: '', coding, type: '', lastModified };
      }
    } else {
      const since = headers['if-modified-since'];
      if (since !== undefined && notModifiedSince(since, rep.lastModifiedMs)) {
        return { notModified: true, tag, payload: '', coding, type: '', lastModified };
      }
    }
  }
  if (coding === null) {
    return { notModified: false, tag, payload: body, coding, type: rep.type, lastModified };
  }
  const payload = compress(body, coding);
  return { notModified: false, tag, payload, coding, type: JSON_TYPE, lastModified };
}

function codedTags(identityTag: string): string[] {
  return [codedTag(identityTag, 'br'), codedTag(identityTag, 'gzip')];
}

/** Sends the 200 or the 304 (no body, no representation metadata but the validators). */
export function sendNegotiated(reply: FastifyReply, n: Negotiated): FastifyReply {
  reply.headers(API_HEADERS).header('etag', n.tag).header('vary', 'Accept-Encoding');
  if (n.notModified) return reply.code(304).send();
  if (n.lastModified !== null) reply.header('last-modified', n.lastModified);
  if (n.coding !== null) reply.header('content-encoding', n.coding);
  return reply.type(n.type).send(n.payload);
}
