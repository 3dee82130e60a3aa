/** A configuration value the service cannot start with; the message is one line naming the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
