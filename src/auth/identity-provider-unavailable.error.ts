/** The identity provider's keys could not be fetched, and the token's key is not among those known: a 503. */
export class IdentityProviderUnavailableError extends Error {
  override readonly name = 'IdentityProviderUnavailableError';
}
