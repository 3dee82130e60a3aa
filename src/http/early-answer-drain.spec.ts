import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { drainThenClose } from './early-answer-drain';

describe('drainThenClose', () => {
  it('should set up the drain once when called again for the same request (Fastify re-runs onSend hooks)', () => {
    const socket = new Socket();
    const request = new IncomingMessage(socket);
    const limits = { maxBytes: 1000, idleMs: 60_000 };
    try {
      drainThenClose(request, 'req-1', 413, limits);
      const once = {
        data: request.listenerCount('data'),
        end: request.listenerCount('end'),
        timeout: socket.listenerCount('timeout'),
        destroySoon: socket.destroySoon,
      };
      drainThenClose(request, 'req-1', 413, limits);
      expect({
        data: request.listenerCount('data'),
        end: request.listenerCount('end'),
        timeout: socket.listenerCount('timeout'),
        destroySoon: socket.destroySoon,
      }).toEqual(once);
      // The byte bound is whole: 1000 bytes are taken, the next one cuts.
      request.emit('data', Buffer.alloc(1000));
      expect(socket.destroyed).toBe(false);
      request.emit('data', Buffer.alloc(1));
      expect(socket.destroyed).toBe(true);
    } finally {
      socket.destroy();
    }
  });
});
