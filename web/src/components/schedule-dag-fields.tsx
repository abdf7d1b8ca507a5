/**
 * The Add schedule form's DAG part: which DAG each run starts, chosen among
 * the signed-in user's own (POST /v1/schedules runs only the caller's DAG,
 * so an admin is not offered anyone else's), and its parameters as KEY=VALUE
 * lines. The hint under the parameters says what the chosen DAG declares
 * now; a slot runs the version that is newest when it fires, and the server
 * checks the parameters against it at create and at each slot. With no DAG
 * to choose, it says how to apply one.
 */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { dagDetailQuery, ownDagListQuery } from '../api/queries';
import { EmptyState } from './empty-state';
import { ErrorNotice } from './error-notice';
import { SelectField } from './select-field';
import { AreaField } from './text-fields';

/** A field's id, name, error and value, as the form keeps them. */
interface Field {
  id: string;
  name: string;
  error?: string | undefined;
  value: string;
  onChange(value: string): void;
}

export function ScheduleDagFields({ user, dag, params }: { user: string; dag: Field; params: Field }) {
  const q = useQuery(ownDagListQuery(user));
  const dags = q.data ? [...q.data.dags].sort((a, b) => a.name.localeCompare(b.name)) : undefined;
  return (
    <fieldset className="form-section" data-testid="schedule-dag-fields">
      <legend>DAG</legend>
      {q.isError && <ErrorNotice error={q.error} retry={() => void q.refetch()} title="Could not load your DAGs" />}
      {dags === undefined && !q.isError && (
        <p className="muted" aria-busy="true">
          Loading your DAGs…
        </p>
      )}
      {dags && dags.length === 0 && (
        <>
          <EmptyState title="You have no DAGs yet">
            <p>
              Apply one from a file with <code>drover dag apply FILE</code> (YAML or JSON: a name and its steps), then choose it here. Applied DAGs are listed on the{' '}
              <Link to="/dags">DAGs</Link> page.
            </p>
          </EmptyState>
          {dag.error && (
            <p className="field-error" data-testid={`error-${dag.id}`} role="alert">
              {dag.error}
            </p>
          )}
        </>
      )}
      {dags && dags.length > 0 && (
        <>
          <SelectField
            id={dag.id}
            name={dag.name}
            label="DAG"
            hint="Each fire time starts one run of this DAG’s newest version."
            error={dag.error}
            value={dag.value}
            options={[{ value: '', label: 'Choose a DAG…' }, ...dags.map((d) => ({ value: d.name, label: `${d.name} (${d.stepCount} step${d.stepCount === 1 ? '' : 's'})` }))]}
            onChange={dag.onChange}
          />
          <AreaField
            {...params}
            label="Parameters"
            rows={3}
            placeholder="DATE=2026-12-01"
            hint={<DeclaredParams user={user} name={dag.value} />}
          />
        </>
      )}
    </fieldset>
  );
}

/** The parameters hint: what the chosen DAG's newest version declares (a DAG that declares some takes only those). */
function DeclaredParams({ user, name }: { user: string; name: string }) {
  const q = useQuery({ ...dagDetailQuery(user, name), enabled: name !== '' });
  const lead = 'Optional: one KEY=VALUE per line; every step sees each as DROVER_PARAM_KEY.';
  const declared = name !== '' && q.data ? q.data.dag.params : undefined;
  if (declared === undefined) return <>{lead}</>;
  if (declared === null) return <>{lead} {name} declares none, so it takes any.</>;
  const keys = Object.keys(declared);
  if (keys.length === 0) return <>{name} takes no parameters.</>;
  return (
    <>
      {lead} {name} takes{' '}
      {keys.map((k, i) => (
        <span key={k}>
          {i > 0 && ', '}
          <code>{k}</code> (default {declared[k] === '' ? <em>empty</em> : <code>{declared[k]}</code>})
        </span>
      ))}
      ; those not given keep their default.
    </>
  );
}
