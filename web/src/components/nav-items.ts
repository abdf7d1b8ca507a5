/**
 * The navigation list. Later pages (services, artifacts) add an entry here
 * (a run's page is reached from its DAG, so only DAGs has one); the side navigation is a list that grows
 * downwards, and on a phone it folds into the menu button.
 */
export interface NavItem {
  to: string;
  label: string;
  /** Exact match only (the Overview at "/"). */
  end?: boolean;
}

export const NAV_ITEMS: readonly NavItem[] = [
  { to: '/', label: 'Overview', end: true },
  { to: '/tasks', label: 'Tasks' },
  { to: '/workers', label: 'Workers' },
  { to: '/schedules', label: 'Schedules' },
  { to: '/dags', label: 'DAGs' },
  { to: '/submit', label: 'Submit' },
];
