/** The interface's version: `info.version` of the document, the start-up line, and the webhook's User-Agent. */
export const API_VERSION = '1.0.0';
