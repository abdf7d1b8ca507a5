/** Sets the tab title ("Tasks · Drover"); text only, user data included safely. */
import { useEffect } from 'react';

export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · Drover` : 'Drover';
  }, [title]);
}
