/**
 * Starts a run of a DAG's newest version: a field per declared parameter
 * (its default filled in), or KEY=VALUE lines for a DAG that declares none.
 * The API's 400 appears at the field it names (`params.KEY`), with focus
 * moved there; on success the run's page opens.
 */
import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { api } from '../api/endpoints';
import { ApiError, errorMessage } from '../api/api-error';
import { qk } from '../api/query-keys';
import type { Dag } from '../api/types';
import { useFieldErrors } from '../hooks/use-field-errors';
import { ParamInputError, paramFieldId, paramFieldOf, paramsBody, type ParamField } from '../dag/run-params';
import { AreaField, TextField } from './text-fields';

export function DagRunForm({ dag }: { dag: Dag }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const declared = dag.params;
  const [values, setValues] = useState<Record<string, string>>(() => ({ ...(declared ?? {}) }));
  const [free, setFree] = useState('');
  const errors = useFieldErrors<ParamField>(paramFieldId);

  const start = useMutation({
    mutationFn: (params: Record<string, string>) => api.startDagRun(dag.owner, dag.name, params),
    onSuccess: (r) => {
      void qc.invalidateQueries({ queryKey: qk.dagRunLists });
      void navigate(`/dag-runs/${r.run.id}`);
    },
    onError: (err) => {
      const field = err instanceof ApiError ? paramFieldOf(declared, err.field) : null;
      if (field && err instanceof ApiError) errors.showField(field, err.reason ? `${err.field}: ${err.reason}` : err.message);
      else errors.showForm(errorMessage(err));
    },
  });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    errors.clearAll();
    try {
      start.mutate(paramsBody(declared, values, free));
    } catch (err) {
      if (err instanceof ParamInputError) errors.showField(err.field, `params: ${err.reason}`);
      else throw err;
    }
  };

  const keys = Object.keys(declared ?? {});
  return (
    <form ref={errors.formRef} className="run-form" onSubmit={onSubmit} noValidate aria-label={`Run ${dag.name}`}>
      {declared === null ? (
        <AreaField
          id={paramFieldId('free')}
          name="params"
          label="Parameters"
          rows={3}
          value={free}
          placeholder="DATE=2026-12-01"
          hint={<>Optional: one KEY=VALUE per line. Every step sees each as DROVER_PARAM_KEY.</>}
          error={errors.fieldErrors.free}
          onChange={(v) => {
            setFree(v);
            errors.clearField('free');
          }}
        />
      ) : keys.length === 0 ? (
        <p className="muted">This DAG takes no parameters.</p>
      ) : (
        <div className="run-form-fields">
          {keys.map((k) => {
            const f: ParamField = `param:${k}`;
            return (
              <TextField
                key={k}
                id={paramFieldId(f)}
                name={k}
                label={k}
                value={values[k] ?? ''}
                hint={<>Default: {declared[k] === '' ? <em>empty</em> : <code>{declared[k]}</code>}</>}
                error={errors.fieldErrors[f]}
                onChange={(v) => {
                  setValues((cur) => ({ ...cur, [k]: v }));
                  errors.clearField(f);
                }}
              />
            );
          })}
        </div>
      )}
      {errors.formError && (
        <p className="notice notice-error" role="alert">
          {errors.formError}
        </p>
      )}
      <div className="form-buttons">
        <button type="submit" className="btn btn-primary" disabled={start.isPending}>
          {start.isPending ? 'Starting…' : 'Run'}
        </button>
        <span className="muted">Runs version {dag.version}, the newest.</span>
      </div>
    </form>
  );
}
