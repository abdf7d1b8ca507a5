/** 'dark' or 'light', following prefers-color-scheme as it changes. */
import { useMediaQuery } from './use-media-query';

export function useColorScheme(): 'dark' | 'light' {
  return useMediaQuery('(prefers-color-scheme: dark)') ? 'dark' : 'light';
}
