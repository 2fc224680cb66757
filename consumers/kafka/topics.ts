import type { Config } from '../../src/config.js';
import type { TopicSpec } from './client.js';

/**
 * The service's own topic of the device-move protocol (docs/events.md: internal): named after
 * the telemetry topic, so every deployment (and every test's topics) gets its own. Producers
 * never write it; the telemetry topic refuses its events.
 */
export const deviceMovesTopic = (topics: Config['topics']): string => `${topics.telemetry}.moves`;

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
    { topic: deviceMovesTopic(topics), numPartitions: 3, cleanupPolicy: 'delete' },
  ];
}
