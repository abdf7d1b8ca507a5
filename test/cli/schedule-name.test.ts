import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDagName } from '../../src/cli/commands/dag-input.js';
import { parseScheduleName } from '../../src/cli/schedule-name.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { DAG_NAME_PATTERN } from '../../src/core/dag/dag-definition.js';
import { SCHEDULE_NAME_PATTERN } from '../../src/server/schedule-schemas.js';

describe('schedule and DAG names', () => {
  it('. and .. alone are refused (URL normalisation would remove them from /v1/schedules/NAME); dots inside a name are fine', () => {
    for (const parse of [parseScheduleName, parseDagName]) {
      for (const bad of ['.', '..', 'a/b', '', 'n'.repeat(101)]) {
        assert.throws(() => parse(bad), (e: unknown) => e instanceof UsageError && /expected 1\.\.100 of A-Z a-z 0-9 \. _ -, not \. or \.\. alone/.test(e.message), bad);
      }
      for (const ok of ['...', '.hidden', 'a..b', 'v1.2', '-', '_']) assert.equal(parse(ok), ok);
    }
  });
  it('the server\'s patterns say the same as the CLI', () => {
    for (const pattern of [SCHEDULE_NAME_PATTERN, DAG_NAME_PATTERN]) {
      const re = new RegExp(pattern, 'u');
      assert.deepEqual(['.', '..', '...', 'a.b'].map((n) => re.test(n)), [false, false, true, true]);
    }
  });
});
