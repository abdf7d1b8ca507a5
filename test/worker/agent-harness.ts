/**
 * Starts a real agent against the fake server and plays hello/welcome on its
 * first connection; shared by the agent and drain tests.
 */
import { startAgent, type Agent, type AgentOptions, type AttemptResult } from '../../src/worker/agent.js';
import type { AssignedAttempt } from '../../src/core/protocol.js';
import { TOKEN, type FakeConn, type FakeServer } from './fake-server.js';

export type Ended = { attempt: AssignedAttempt; result: AttemptResult; reported: boolean };

export async function connectAgent(
  server: FakeServer,
  workDir: string,
  over: Partial<AgentOptions> = {},
  welcome: Parameters<FakeConn['welcome']>[0] = {},
): Promise<{ agent: Agent; conn: FakeConn; hello: Awaited<ReturnType<FakeConn['welcome']>>; endOf: (id: number) => Promise<Ended> }> {
  const ended: Ended[] = [];
  const endWaiters = new Map<number, (e: Ended) => void>();
  const connP = server.nextConnection();
  const agentP = startAgent({
    servers: [server.url],
    token: TOKEN,
    slots: 2,
    workDir,
    killGraceMs: 300,
    backoff: { baseMs: 20, maxMs: 200 },
    onAttemptEnd: (a, result, reported) => {
      const e = { attempt: a, result, reported };
      ended.push(e);
      endWaiters.get(a.attemptId)?.(e);
    },
    ...over,
  });
  const conn = await connP;
  const hello = await conn.welcome(welcome);
  const agent = await agentP;
  const endOf = (id: number) => {
    const done = ended.find((e) => e.attempt.attemptId === id);
    return done ? Promise.resolve(done) : new Promise<Ended>((r) => endWaiters.set(id, r));
  };
  return { agent, conn, hello, endOf };
}
