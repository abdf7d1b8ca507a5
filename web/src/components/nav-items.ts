/**
 * The navigation list. Later pages (DAG runs, services,
 * artifacts) add an entry here; the side navigation is a list that grows
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
  { to: '/submit', label: 'Submit' },
];
