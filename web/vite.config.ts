/**
 * Builds the dashboard into web/dist/ (served by the Drover server: index.html
 * for the page routes, hashed files under /assets/ with immutable caching).
 * Output must satisfy the server's CSP (script-src 'self'; style-src 'self'):
 * index.html gets only a module script and a stylesheet link, both files
 * under /assets/ (the browser tests check that no CSP violation occurs). The
 * module-preload polyfill is off: every browser the dashboard supports has
 * native modulepreload, so it would be dead code.
 */
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    modulePreload: { polyfill: false },
    // Data URIs would be inlined as CSS `url(data:…)`: allowed by img-src, but keep assets as files.
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 600,
  },
});
