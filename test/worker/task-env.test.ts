/**
 * A task's environment is the fixed base, the --pass-env variables, its own
 * env and DROVER_*; nothing else of the agent's (above all not DROVER_TOKEN).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AgentMessage, AssignedAttempt } from '../../src/core/protocol.js';
import { passedEnv, taskEnv, TASK_LANG, TASK_PATH } from '../../src/worker/task-env.js';
import { FakeServer } from './fake-server.js';
import { fencingToken, tempDir } from './helpers.js';
import { connectAgent } from './agent-harness.js';

/** The agent's own environment during these tests (this process: the agent runs in it). */
const AGENT_VARS = {
  DROVER_TOKEN: 'drv_agent_secret_token',
  DROVER_TEST_AGENT_ONLY: 'agent only',
  DROVER_TEST_PASSED: 'passed on',
  DROVER_TEST_OVERRIDDEN: 'from the agent',
};

function attempt(over: Partial<AssignedAttempt>): AssignedAttempt {
  return { attemptId: 42, fencingToken: fencingToken(), taskId: '01ENVTASK', number: 2, command: null, args: [], script: null, interpreter: [], env: {}, timeoutMs: null, ...over };
}

function parseEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line) continue;
    const i = line.indexOf('=');
    out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

describe('task environment', { timeout: 30_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  const saved: Record<string, string | undefined> = {};
  before(() => {
    tmp = tempDir('drover-env-');
    for (const [k, v] of Object.entries(AGENT_VARS)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    tmp.remove();
  });

  it('is the base, the passed variables, the task env and DROVER_*, and nothing of the agent', async () => {
    const server = await FakeServer.start();
    const { agent, conn } = await connectAgent(server, tmp.dir, { passEnv: ['DROVER_TEST_PASSED', 'DROVER_TEST_OVERRIDDEN', 'DROVER_TEST_NOT_SET'] });
    try {
      conn.autoAck = true;
      // `env` without a shell: exactly what the process was given.
      const a = attempt({ command: 'env', env: { TASK_VAR: 'task value', DROVER_TEST_OVERRIDDEN: 'from the task', DROVER_ATTEMPT: 'spoofed' } });
      conn.send({ type: 'assign', attempt: a });
      const exit = await conn.next('exit');
      assert.equal(exit.outcome, 'succeeded');
      const out = conn.messages
        .filter((m): m is Extract<AgentMessage, { type: 'log' }> => m.type === 'log' && m.stream === 'stdout')
        .map((l) => Buffer.from(l.data, 'base64').toString())
        .join('');
      const env = parseEnv(out);
      const outDir = env.DROVER_OUTPUT_DIR!;
      assert.equal(path.basename(outDir), 'out');
      assert.deepEqual(env, {
        PATH: TASK_PATH,
        HOME: path.dirname(outDir),
        LANG: TASK_LANG,
        DROVER_TEST_PASSED: 'passed on',
        DROVER_TEST_OVERRIDDEN: 'from the task',
        TASK_VAR: 'task value',
        DROVER_TASK_ID: a.taskId,
        DROVER_ATTEMPT: '2',
        DROVER_OUTPUT_DIR: outDir,
        DROVER_OUTPUT: path.join(path.dirname(outDir), 'drover-output.env'),
      });
      assert.equal(path.dirname(path.dirname(outDir)), tmp.dir, 'HOME is the attempt\'s work dir');
      assert.ok(!out.includes(AGENT_VARS.DROVER_TOKEN), 'the worker token reached the task');
    } finally {
      await agent.close();
      await server.close();
    }
  });

  it('passedEnv: copies set names only; refuses bad names and DROVER_TOKEN', () => {
    assert.deepEqual(passedEnv(['A', 'B', '_C'], { A: '1', _C: '', D: 'x' }), { A: '1', _C: '' });
    assert.throws(() => passedEnv(['DROVER_TOKEN'], { DROVER_TOKEN: 't' }), /^RangeError: invalid passEnv name "DROVER_TOKEN": DROVER_TOKEN is the worker token/);
    assert.throws(() => passedEnv(['9X'], {}), /invalid passEnv name "9X": expected an environment variable name/);
  });

  it('taskEnv: later layers win; Drover\'s variables last', () => {
    const env = taskEnv(
      { taskId: 'T', number: 1, env: { PATH: '/task/bin', HOME: '/h', DROVER_TASK_ID: 'x', DROVER_OUTPUT: '/etc/passwd', P: 'task' } },
      { workDir: '/w', outDir: '/w/out', outputFile: '/w/drover-output.env' },
      { P: 'passed', Q: 'q' },
    );
    assert.deepEqual(env, {
      PATH: '/task/bin',
      HOME: '/h',
      LANG: TASK_LANG,
      P: 'task',
      Q: 'q',
      DROVER_TASK_ID: 'T',
      DROVER_ATTEMPT: '1',
      DROVER_OUTPUT_DIR: '/w/out',
      DROVER_OUTPUT: '/w/drover-output.env',
    });
  });
});
