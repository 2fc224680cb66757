import type { Config } from '../../src/config.js';
import type { TopicSpec } from './client.js';

/** The topics of events.md with their cleanup policies; telemetry spreads over partitions. */
export function topicSpecs(
  topics: Config['topics'],
  telemetryPartitions = 6,
): readonly TopicSpec[] {
  return [
    { topic: topics.installations, numPartitions: 3, cleanupPolicy: 'compact' },
    { topic: topics.telemetry, numPartitions: telemetryPartitions, cleanupPolicy: 'delete' },
    { topic: topics.access, numPartitions: 3, cleanupPolicy: 'compact' },
    { topic: topics.deadletter, numPartitions: 3, cleanupPolicy: 'delete' },
  ];
}
