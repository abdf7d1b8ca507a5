/**
 * The Tasks page's filter bar. Text fields apply on Enter or "Apply" (each
 * application is one history entry); the state and page-size selects apply at
 * once. Owner is offered to admins only (users see their own tasks anyway).
 */
import { useEffect, useState, type FormEvent } from 'react';
import { ENDED_ORDER_STATES, TASK_STATES, type ListTasksQuery, type TaskState } from '../api/types';
import { isoToLocalInput, localInputToIso } from '../format/time';
import { PAGE_SIZES } from '../hooks/use-task-filter';
import { useMediaQuery } from '../hooks/use-media-query';

interface Props {
  filter: ListTasksQuery;
  isAdmin: boolean;
  onChange(f: ListTasksQuery): void;
}

const ID_CHARS = /^[0-9A-HJKMNP-TV-Z]{0,26}$/;

export function TaskFilters({ filter, isAdmin, onChange }: Props) {
  const [name, setName] = useState(filter.name ?? '');
  const [owner, setOwner] = useState(filter.owner ?? '');
  const [id, setId] = useState(filter.id ?? '');
  const [after, setAfter] = useState(isoToLocalInput(filter.createdAfter));
  const [before, setBefore] = useState(isoToLocalInput(filter.createdBefore));
  // Back/forward (or Clear) changes the URL: show what it holds, field by field, so a
  // field being typed into is not reset by a change of another one.
  useEffect(() => setName(filter.name ?? ''), [filter.name]);
  useEffect(() => setOwner(filter.owner ?? ''), [filter.owner]);
  useEffect(() => setId(filter.id ?? ''), [filter.id]);
  useEffect(() => setAfter(isoToLocalInput(filter.createdAfter)), [filter.createdAfter]);
  useEffect(() => setBefore(isoToLocalInput(filter.createdBefore)), [filter.createdBefore]);

  const idUpper = id.trim().toUpperCase();
  const idError = ID_CHARS.test(idUpper) ? null : 'Task ids use the characters 0-9 and A-Z without I, L, O, U (at most 26)';

  const apply = (e?: FormEvent) => {
    e?.preventDefault();
    if (idError) return;
    onChange({
      ...filter,
      name: name || undefined,
      owner: isAdmin && owner ? owner : undefined,
      id: idUpper || undefined,
      createdAfter: localInputToIso(after),
      createdBefore: localInputToIso(before),
    });
  };
  const active = [filter.state, filter.name, filter.owner, filter.id, filter.createdAfter, filter.createdBefore].filter(Boolean).length;
  const hasAny = active > 0;
  // On a phone the filters fold behind one button, so the first rows are on the first screen.
  const phone = useMediaQuery('(max-width: 700px)');
  const [shown, setShown] = useState(false);

  if (phone && !shown) {
    return (
      <div className="filters-folded">
        <button type="button" className="btn" aria-expanded={false} aria-controls="task-filters" onClick={() => setShown(true)}>
          Filters{active ? ` (${active} active)` : ''}
        </button>
        {hasAny && (
          <button type="button" className="btn btn-quiet" onClick={() => onChange({ limit: filter.limit })}>
            Clear
          </button>
        )}
      </div>
    );
  }

  return (
    <form className="filters" id="task-filters" onSubmit={apply} role="search" aria-label="Filter tasks">
      <label className="filter">
        <span>State</span>
        <select
          value={filter.state ?? ''}
          onChange={(e) => {
            const state = (e.target.value || undefined) as TaskState | undefined;
            // Newest end first exists for failed and cancelled only: another state goes back to the default order.
            onChange({ ...filter, state, order: state && ENDED_ORDER_STATES.includes(state) ? filter.order : undefined });
          }}
          name="state"
        >
          <option value="">Any state</option>
          {TASK_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label className="filter">
        <span>Name starts with</span>
        <input type="search" name="name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} placeholder="e.g. backup-" />
      </label>
      {isAdmin && (
        <label className="filter">
          <span>Owner</span>
          <input type="search" name="owner" value={owner} maxLength={200} onChange={(e) => setOwner(e.target.value)} placeholder="any" />
        </label>
      )}
      <label className="filter">
        <span>Created after</span>
        <input type="datetime-local" name="after" value={after} onChange={(e) => setAfter(e.target.value)} />
      </label>
      <label className="filter">
        <span>Created before</span>
        <input type="datetime-local" name="before" value={before} onChange={(e) => setBefore(e.target.value)} />
      </label>
      <label className="filter filter-id">
        <span>Task id</span>
        <input
          type="search"
          name="id"
          value={id}
          maxLength={26}
          spellCheck={false}
          autoCapitalize="characters"
          onChange={(e) => setId(e.target.value)}
          placeholder="id or its beginning"
          aria-invalid={idError ? true : undefined}
          aria-describedby={idError ? 'filter-id-error' : undefined}
        />
        {idError && (
          <span id="filter-id-error" className="field-error">
            {idError}
          </span>
        )}
      </label>
      {filter.state && ENDED_ORDER_STATES.includes(filter.state) && (
        <label className="filter">
          <span>Order</span>
          <select
            value={filter.order ?? 'created'}
            name="order"
            onChange={(e) => onChange({ ...filter, order: e.target.value === 'ended' ? 'ended' : undefined })}
          >
            <option value="created">Newest created first</option>
            <option value="ended">Newest end first</option>
          </select>
        </label>
      )}
      <label className="filter filter-narrow">
        <span>Per page</span>
        <select value={filter.limit} name="limit" onChange={(e) => onChange({ ...filter, limit: Number(e.target.value) })}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <div className="filter-buttons">
        <button type="submit" className="btn">
          Apply
        </button>
        {phone && (
          <button type="button" className="btn btn-quiet" aria-expanded={true} aria-controls="task-filters" onClick={() => setShown(false)}>
            Hide
          </button>
        )}
        {hasAny && (
          <button type="button" className="btn btn-quiet" onClick={() => onChange({ limit: filter.limit })}>
            Clear
          </button>
        )}
      </div>
    </form>
  );
}
