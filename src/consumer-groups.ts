// The consumer groups of the ingest: one per input topic and one for the device moves, each
// named `<CONSUMER_GROUP>.<role>`. The consumers join them; rebuild, skip-batch, the benches and
// the tests name them the same way, from here.

/** The roles whose topic the config names (config.topics), in the order rebuild moves them. */
export const TOPIC_ROLES = ['installations', 'access', 'telemetry'] as const;
export type TopicRole = (typeof TOPIC_ROLES)[number];
/** Every group a consumer process joins: the input topics' and the internal device moves'. */
export type Role = TopicRole | 'moves';

/** The slice of the config a group id needs (a bench passes its own group base). */
export interface GroupConfig {
  readonly consumer: { readonly groupId: string };
}

export const groupIdOf = (config: GroupConfig, role: Role): string =>
  `${config.consumer.groupId}.${role}`;
