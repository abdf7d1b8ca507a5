/** What the task runs: the command and its arguments (one per line, exactly as given) or the script and its interpreter. */
import type { Task } from '../api/types';

export function CommandView({ task }: { task: Task }) {
  if (task.script !== null) {
    return (
      <div className="command">
        <p className="command-meta">
          Script, run by <code>{[...task.interpreter, '<script file>'].join(' ')}</code>
        </p>
        <pre className="code-block" tabIndex={0} aria-label="Script">
          {task.script}
        </pre>
      </div>
    );
  }
  return (
    <div className="command">
      <p className="command-meta">Command, run without a shell</p>
      <ol className="argv" aria-label="Command and arguments">
        <li>
          <code>{task.command}</code>
        </li>
        {task.args.map((a, i) => (
          <li key={i}>
            <code>{a === '' ? '""' : a}</code>
          </li>
        ))}
      </ol>
    </div>
  );
}
