/** A page's title row: heading, optional subtitle and actions on the right. */
import type { ReactNode } from 'react';
import { useDocumentTitle } from '../hooks/use-document-title';

export function PageHeader({ title, subtitle, actions, docTitle }: { title: ReactNode; subtitle?: ReactNode; actions?: ReactNode; docTitle: string }) {
  useDocumentTitle(docTitle);
  return (
    <div className="page-header">
      <div className="page-header-text">
        <h1>{title}</h1>
        {subtitle && <p className="page-subtitle">{subtitle}</p>}
      </div>
      {actions && <div className="page-actions">{actions}</div>}
    </div>
  );
}
