/** Module declarations for what Vite resolves at build time (CSS imports and asset URLs). */
declare module '*.css';
declare module '*.svg' {
  const url: string;
  export default url;
}
