// Polling load against several API replicas, as clients without a load balancer send it:
// keep-alive connections (fetch's pool), conditional GETs with the last ETag seen for the path (a
// tag is the same from any replica, docs/api.md). Each outcome is classed by the replica's state
// over the request's whole flight: `down` if the replica was being stopped or restarted at any
// moment between sending and the outcome, else `up`.

export interface Replica {
  readonly name: string;
  readonly origin: string;
  /** `down` from just before its SIGTERM until the restarted process answers /readyz. */
  state: 'up' | 'down';
  /** Times it was marked down: a request spanning a whole restart still counts as `down`. */
  stops: number;
}

export const replica = (name: string, origin: string): Replica => ({
  name,
  origin,
  state: 'up',
  stops: 0,
});

export const markDown = (r: Replica): void => {
  r.state = 'down';
  r.stops += 1;
};

export interface PollTally {
  /** `<replica> <state>: <outcome>` -> count; outcome is a status or `error <code>`. */
  readonly outcomes: Map<string, number>;
  /** Outcomes no client may see, with when they were sent and seen (epoch ms). */
  readonly unexpected: string[];
}

// A replica answers 200 or 304, whatever its state. While it stops, a request may also find no
// one listening (ECONNREFUSED) or its connection closed unanswered, a request that raced the
// close (reset or closed before a byte came back: the client may retry a GET, RFC 9112 §9.3.1).
// Never an HTTP error, a timeout, or any failure of a replica that is up.
const ANSWERS = ['200', '304'];
const UNANSWERED_WHILE_DOWN = ['error ECONNREFUSED', 'error ECONNRESET', 'error UND_ERR_SOCKET'];

async function outcomeOf(res: Response): Promise<string> {
  const body = await res.text();
  if (res.status === 200) {
    // A 200 carries the envelope, not an empty or cut body.
    const valid = (JSON.parse(body) as { valid?: unknown }).valid;
    return valid === true ? '200' : `200 without valid:true (${body.slice(0, 80)})`;
  }
  return res.status === 304 ? '304' : `${res.status} ${body.slice(0, 120)}`;
}

function errorOutcome(error: unknown): string {
  const e = error as { name?: string; cause?: { code?: string; name?: string } };
  return `error ${e.cause?.code ?? e.cause?.name ?? e.name ?? String(error)}`;
}

export interface Poller {
  /** 200 and 304 answers the replica gave so far. */
  answered(name: string): number;
  /** Requests to the replica that found no one listening so far. */
  refused(name: string): number;
  stop(): Promise<PollTally>;
}

export function pollReplicas(options: {
  readonly replicas: readonly Replica[];
  readonly paths: readonly string[];
  readonly apiKey: string;
  readonly workersPerReplica: number;
  readonly pauseMs: number;
  readonly timeoutMs: number;
}): Poller {
  const outcomes = new Map<string, number>();
  const unexpected: string[] = [];
  const answered = new Map<string, number>();
  const refused = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const etags = new Map<string, string>();
  let stopped = false;

  const one = async (r: Replica, path: string) => {
    const sent = { at: Date.now(), state: r.state, stops: r.stops };
    const headers: Record<string, string> = { 'api-key': options.apiKey };
    const tag = etags.get(path);
    if (tag) headers['if-none-match'] = tag;
    let outcome: string;
    try {
      const res = await fetch(`${r.origin}${path}`, {
        headers,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const etag = res.headers.get('etag');
      outcome = await outcomeOf(res);
      if (etag && outcome === '200') etags.set(path, etag);
    } catch (error) {
      outcome = errorOutcome(error);
    }
    const down = sent.state === 'down' || r.state === 'down' || r.stops !== sent.stops;
    const key = `${r.name} ${down ? 'down' : 'up'}: ${outcome}`;
    bump(outcomes, key);
    if (ANSWERS.includes(outcome)) bump(answered, r.name);
    if (outcome === 'error ECONNREFUSED') bump(refused, r.name);
    const allowed = ANSWERS.includes(outcome) || (down && UNANSWERED_WHILE_DOWN.includes(outcome));
    if (!allowed && unexpected.length < 20) {
      unexpected.push(`${key} (sent ${sent.at}, seen ${Date.now()})`);
    }
  };

  const worker = async (r: Replica, offset: number) => {
    for (let i = offset; !stopped; i++) {
      await one(r, options.paths[i % options.paths.length] as string);
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  };
  const workers = options.replicas.flatMap((r) =>
    Array.from({ length: options.workersPerReplica }, (_, w) => worker(r, w * 7)),
  );
  return {
    answered: (name) => answered.get(name) ?? 0,
    refused: (name) => refused.get(name) ?? 0,
    async stop() {
      stopped = true;
      await Promise.all(workers);
      return { outcomes, unexpected };
    },
  };
}

/** Outcomes as `count×outcome`, for a failure message or the log. */
export const describeTally = (tally: PollTally): string =>
  [...tally.outcomes]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, n]) => `${n}×${outcome}`)
    .join(', ');
