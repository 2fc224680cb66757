import { Counter, Gauge, Histogram, Registry } from 'prom-client';

// The consumer's own Prometheus registry (never the global one), so several apps in one test
// process, or beside the API, do not clash. With `exemplars` (tracing on), a sampled batch's
// duration keeps its span's ids as its bucket's exemplar, written only as OpenMetrics
// (src/ops/open-metrics.ts); off, the histogram is prom-client's plain one, as ever.

export interface ConsumerMetrics {
  readonly registry: Registry;
  readonly applied: Counter<'topic'>;
  readonly stale: Counter<'topic'>;
  readonly rejected: Counter<'topic' | 'reason'>;
  readonly droppedFields: Counter<'topic'>;
  readonly outOfRangeNulled: Counter<'field'>;
  readonly miskeyed: Counter<'topic'>;
  readonly deviceMoves: Counter;
  readonly redisRetries: Counter<'topic'>;
  readonly flowRefreshes: Counter<'trigger'>;
  readonly flowRefreshFailures: Counter;
  readonly accessEntriesDerived: Counter;
  readonly systemicFailures: Counter<'topic'>;
  readonly systemicFailure: Gauge<'topic'>;
  readonly corruptInstallations: Counter<'topic'>;
  readonly batchDuration: Histogram<'topic'>;
  readonly visibleDelay: Histogram<'topic'>;
  readonly lag: Gauge<'topic' | 'partition'>;
  readonly topicLag: Gauge<'topic' | 'partition'>;
  readonly consumerFailures: Counter<'topic' | 'reason'>;
  readonly modelLost: Gauge;
  /** Kafka timestamp (ms) of the newest event projected, per `<topic>|<partition>`. */
  readonly newestProjected: Map<string, number>;
  /** Topics whose latest batch fails alike for every message: the process is not ready. */
  readonly failingAlike: Set<string>;
}

export function createConsumerMetrics(options: { exemplars?: boolean } = {}): ConsumerMetrics {
  const registry = new Registry();
  const registers = [registry];
  // Evaluated in order: a scrape lists the series in the order they were registered.
  return {
    newestProjected: newestEventAge(registers),
    failingAlike: new Set(),
    registry,
    ...eventMetrics(registers),
    ...writeMetrics(registers, options.exemplars === true),
    ...consumerHealthMetrics(registers),
  };
}

/** The map the runner fills per batch, read by a gauge at scrape time. */
function newestEventAge(registers: Registry[]): Map<string, number> {
  const newestProjected = new Map<string, number>();
  new Gauge({
    name: 'ingest_newest_event_age_seconds',
    help: 'Age (now - Kafka timestamp) of the newest event whose batch Redis acknowledged, per partition this process projected',
    labelNames: ['topic', 'partition'],
    registers,
    // Computed at scrape time, so a stalled partition's age keeps growing.
    collect() {
      const now = Date.now();
      for (const [at, ms] of newestProjected) {
        const [topic, partition] = at.split('|') as [string, string];
        this.set({ topic, partition }, Math.max(0, (now - ms) / 1000));
      }
    },
  });
  return newestProjected;
}

/** Per event: applied, stale, rejected, trimmed, miskeyed, or a device that moved. */
function eventMetrics(
  registers: Registry[],
): Pick<
  ConsumerMetrics,
  | 'applied'
  | 'stale'
  | 'rejected'
  | 'droppedFields'
  | 'outOfRangeNulled'
  | 'miskeyed'
  | 'deviceMoves'
> {
  return {
    applied: new Counter({
      name: 'ingest_events_applied_total',
      help: 'Events applied to the read model',
      labelNames: ['topic'],
      registers,
    }),
    stale: new Counter({
      name: 'ingest_events_stale_total',
      help: 'Events ignored because a newer one was already applied',
      labelNames: ['topic'],
      registers,
    }),
    rejected: new Counter({
      name: 'ingest_messages_rejected_total',
      help: 'Messages sent to the dead-letter topic, by reason',
      labelNames: ['topic', 'reason'],
      registers,
    }),
    droppedFields: new Counter({
      name: 'ingest_unknown_fields_dropped_total',
      help: 'Unknown keys dropped from events (raw vendor data never reaches the API)',
      labelNames: ['topic'],
      registers,
    }),
    outOfRangeNulled: new Counter({
      name: 'ingest_out_of_range_total',
      help: 'Device fields sent outside their range (percent 0-100, ids 1 or more, magnitudes 0 or more), stored as null',
      labelNames: ['field'],
      registers,
    }),
    miskeyed: new Counter({
      name: 'ingest_miskeyed_messages_total',
      help: 'Telemetry messages whose key is not their installationId (applied anyway)',
      labelNames: ['topic'],
      registers,
    }),
    deviceMoves: new Counter({
      name: 'ingest_device_moves_total',
      help: 'Devices that moved to another installation',
      registers,
    }),
  };
}

/** How the writes to Redis went: retries, flow refreshes, unreadable state, time per batch. */
function writeMetrics(
  registers: Registry[],
  exemplars: boolean,
): Pick<
  ConsumerMetrics,
  | 'redisRetries'
  | 'flowRefreshes'
  | 'flowRefreshFailures'
  | 'accessEntriesDerived'
  | 'systemicFailures'
  | 'systemicFailure'
  | 'corruptInstallations'
  | 'batchDuration'
  | 'visibleDelay'
> {
  return {
    redisRetries: new Counter({
      name: 'ingest_batch_retries_total',
      help: 'Batch attempts that failed and were retried (Redis or the schema registry unreachable)',
      labelNames: ['topic'],
      registers,
    }),
    flowRefreshes: new Counter({
      name: 'ingest_flow_refreshes_total',
      help: 'Energy flows recomputed because a counted device aged out of the online window',
      labelNames: ['trigger'],
      registers,
    }),
    flowRefreshFailures: new Counter({
      name: 'ingest_flow_refresh_failures_total',
      help: 'Energy flows the ageing sweep could not recompute (postponed, not retried at once)',
      registers,
    }),
    systemicFailures: new Counter({
      name: 'ingest_systemic_failures_total',
      help: 'Batch attempts in which every message failed alike (no message at fault, none dead-lettered)',
      labelNames: ['topic'],
      registers,
    }),
    systemicFailure: new Gauge({
      name: 'ingest_systemic_failure',
      help: '1 while the latest batch of the topic fails alike for every message (the process is then not ready)',
      labelNames: ['topic'],
      registers,
    }),
    accessEntriesDerived: new Counter({
      name: 'ingest_access_entries_derived_total',
      help: 'Access entries (application, installation) derived by the access worker',
      registers,
    }),
    corruptInstallations: new Counter({
      name: 'ingest_corrupt_installations_total',
      help: 'Installations whose stored devices could not be read back; the events touching them were dead-lettered',
      labelNames: ['topic'],
      registers,
    }),
    batchDuration: batchDuration(registers, exemplars),
    visibleDelay: new Histogram({
      name: 'ingest_batch_visible_delay_seconds',
      help: "Per batch, from its oldest event's Kafka timestamp to Redis acknowledging the batch: the slowest event's produce-to-visible delay",
      labelNames: ['topic'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
  };
}

/** Whether the consumers keep up and keep running. */
function consumerHealthMetrics(
  registers: Registry[],
): Pick<ConsumerMetrics, 'lag' | 'topicLag' | 'consumerFailures' | 'modelLost'> {
  return {
    lag: new Gauge({
      name: 'ingest_consumer_lag',
      help: 'Offsets between the group committed offset and the last stable offset, per assigned partition',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    topicLag: new Gauge({
      name: 'ingest_topic_lag',
      help: 'Offsets between the group committed offset and the last stable offset, per partition of the topic, assigned or not (every process reports every partition)',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    consumerFailures: new Counter({
      name: 'ingest_consumer_failures_total',
      help: 'Topic consumers stopped by an error: undecodable_batch, crash, group_lost (all end the process), crash_restarted (the client rejoins)',
      labelNames: ['topic', 'reason'],
      registers,
    }),
    modelLost: new Gauge({
      name: 'ingest_read_model_lost',
      help: '1 once the read model was found without its epoch marker (Redis lost its data): consuming stopped, run the rebuild',
      registers,
    }),
  };
}

/**
 * With `exemplars`: prom-client accepts them only on a metric registered in OpenMetrics
 * registries alone, so it is registered by hand; a text registry writes it without them.
 */
function batchDuration(registers: Registry[], exemplars: boolean): Histogram<'topic'> {
  const histogram = new Histogram({
    name: 'ingest_batch_duration_seconds',
    help: 'Time to project one batch, including retries',
    labelNames: ['topic'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: exemplars ? [] : registers,
    enableExemplars: exemplars,
  });
  if (exemplars) for (const registry of registers) registry.registerMetric(histogram);
  return histogram;
}
