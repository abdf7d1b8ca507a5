/**
 * The signed-in user for everything below RequireSession. Provided from
 * there, so a component never sees "no session": when the session ends,
 * RequireSession stops rendering them (and goes to the sign-in page) in the
 * same render.
 */
import { createContext, useContext } from 'react';
import type { Me } from '../api/types';

export const SessionContext = createContext<Me | null>(null);

export function useSignedIn(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error('useSignedIn is only for components below RequireSession');
  return me;
}
