/**
 * Page routes. The server answers index.html for exactly these paths
 * (spec: `/`, `/sign-in`, `/tasks`, `/tasks/:id`, `/workers`, `/schedules`, `/schedules/new`, `/dags`,
 * `/dags/:name`, `/dag-runs/:id`, `/submit`); a
 * new page adds a route here, a line in nav-items.ts and one on the server.
 */
import { createBrowserRouter } from 'react-router';
import { AppShell } from './components/app-shell';
import { RequireSession } from './auth/require-session';
import { LiveProvider } from './live/live-provider';
import { SignInPage } from './pages/sign-in-page';
import { OverviewPage } from './pages/overview-page';
import { TasksPage } from './pages/tasks-page';
import { TaskDetailPage } from './pages/task-detail-page';
import { WorkersPage } from './pages/workers-page';
import { SchedulesPage } from './pages/schedules-page';
import { AddSchedulePage } from './pages/add-schedule-page';
import { SubmitPage } from './pages/submit-page';
import { DagsPage } from './pages/dags-page';
import { DagPage } from './pages/dag-page';
import { DagRunPage } from './pages/dag-run-page';
import { NotFoundPage } from './pages/not-found-page';
import { RouteError } from './pages/route-error';

export function createRouter() {
  return createBrowserRouter([
    { path: '/sign-in', element: <SignInPage />, errorElement: <RouteError /> },
    {
      path: '/',
      element: (
        <RequireSession>
          <LiveProvider>
            <AppShell />
          </LiveProvider>
        </RequireSession>
      ),
      errorElement: <RouteError />,
      children: [
        { index: true, element: <OverviewPage /> },
        { path: 'tasks', element: <TasksPage /> },
        { path: 'tasks/:id', element: <TaskDetailPage /> },
        { path: 'workers', element: <WorkersPage /> },
        { path: 'schedules', element: <SchedulesPage /> },
        { path: 'schedules/new', element: <AddSchedulePage /> },
        { path: 'dags', element: <DagsPage /> },
        { path: 'dags/:name', element: <DagPage /> },
        { path: 'dag-runs/:id', element: <DagRunPage /> },
        { path: 'submit', element: <SubmitPage /> },
        { path: '*', element: <NotFoundPage /> },
      ],
    },
  ]);
}
