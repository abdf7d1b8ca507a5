/** Entry point: one QueryClient, the router, the styles (bundled into one CSS file under /assets/). */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from 'react-router';
import { createQueryClient } from './query-client';
import { createRouter } from './router';
import 'uplot/dist/uPlot.min.css';
import './styles/base.css';
import './styles/layout.css';
import './styles/badges.css';
import './styles/table.css';
import './styles/forms.css';
import './styles/detail.css';
import './styles/log.css';
import './styles/overview.css';
import './styles/schedules.css';
import './styles/dags.css';

const queryClient = createQueryClient();
const router = createRouter();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
