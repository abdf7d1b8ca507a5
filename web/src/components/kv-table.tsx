/**
 * A table of keys and values (a task's environment, its outputs): the key as
 * code, the value rendered by `value` in a cell with `valueClass` and the
 * test id `valueTestId`. Keys and values are task data: React escapes them.
 */
import type { ReactNode } from 'react';

export interface KvTableProps {
  entries: ReadonlyArray<readonly [string, string]>;
  keyHeading: string;
  value: (v: string) => ReactNode;
  valueClass: string;
  valueTestId: string;
  testId?: string;
}

export function KvTable({ entries, keyHeading, value, valueClass, valueTestId, testId }: KvTableProps) {
  return (
    <table className="table kv-table" data-testid={testId}>
      <thead>
        <tr>
          <th scope="col">{keyHeading}</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <td>
              <code>{k}</code>
            </td>
            <td className={valueClass} data-testid={valueTestId}>
              {value(v)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
