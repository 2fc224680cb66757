import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify';

// Fastify's own lines per request (`incoming request`, `request completed`) are logged at
// info, but it builds their objects (and reads the response time) for every request even when
// info is off, as with LOG_LEVEL=warn, how the API runs in production. Here they are built only
// when the logger writes info (its level as configured at start; the API never changes it).
// Warnings and errors Fastify logs go through unchanged.
//
// Likewise its per-request child logger (pino's child costs some 2.5k instructions, a twentieth
// of a cached read): when info is off, a request gets a stand-in that makes the child only when
// something at warn or above is logged, so those lines carry the same reqId.

type Logger = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

const writesInfo = (logger: FastifyBaseLogger) =>
  (logger as Logger).isLevelEnabled?.('info') !== false;

/** Fastify's `logController`: its request lines only when `logger` writes info. */
export function requestLogController(logger: FastifyBaseLogger): LogController {
  const info = writesInfo(logger);
  return new (class extends LogController {
    override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
      if (info) super.incomingRequest(request, reply);
    }
    override requestCompleted(
      error: Error | null | undefined,
      request: FastifyRequest,
      reply: FastifyReply,
    ): void {
      if (info || error) super.requestCompleted(error, request, reply);
    }
  })();
}

/**
 * Fastify's `childLoggerFactory`: pino's child when `logger` writes info (every request logs
 * then) or the route sets its own level or serializers; otherwise a child made on first use.
 */
export function requestChildLoggerFactory(
  logger: FastifyBaseLogger,
): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  const info = writesInfo(logger);
  return (parent, bindings, options) =>
    info || options.level !== undefined || options.serializers !== undefined
      ? parent.child(bindings, options)
      : (new LazyChild(parent, bindings, options) as unknown as FastifyBaseLogger);
}

type Write = (...args: unknown[]) => void;

/**
 * A request's logger at a level above info, which its parent's level is too: trace, debug and
 * info write nothing until the child exists (its level changed), anything else makes it.
 */
class LazyChild {
  #child: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Parameters<FastifyBaseLogger['child']>[0],
    private readonly options: Parameters<FastifyBaseLogger['child']>[1],
  ) {}

  private made(): FastifyBaseLogger {
    if (this.#child === null) this.#child = this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return (this.#child ?? this.parent).level;
  }

  set level(level: string) {
    this.made().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return ((this.#child ?? this.parent) as Logger).isLevelEnabled?.(level) ?? false;
  }

  trace(...args: unknown[]): void {
    if (this.#child !== null) (this.#child.trace as Write).apply(this.#child, args);
  }

  debug(...args: unknown[]): void {
    if (this.#child !== null) (this.#child.debug as Write).apply(this.#child, args);
  }

  info(...args: unknown[]): void {
    if (this.#child !== null) (this.#child.info as Write).apply(this.#child, args);
  }

  warn(...args: unknown[]): void {
    const child = this.made();
    (child.warn as Write).apply(child, args);
  }

  error(...args: unknown[]): void {
    const child = this.made();
    (child.error as Write).apply(child, args);
  }

  fatal(...args: unknown[]): void {
    const child = this.made();
    (child.fatal as Write).apply(child, args);
  }

  silent(): void {}

  child(
    bindings: Parameters<FastifyBaseLogger['child']>[0],
    options?: Parameters<FastifyBaseLogger['child']>[1],
  ): FastifyBaseLogger {
    return this.made().child(bindings, options);
  }
}
