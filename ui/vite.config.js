import { defineConfig } from 'vite';

// The console is served by dds under /console/; assets get content-hashed
// names under assets/ (cached forever by the server). JSX is compiled by
// esbuild (no React plugin: no fast refresh needed for a build-only app).
export default defineConfig({
  base: '/console/',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 3000,
    sourcemap: false,
  },
  server: { proxy: { '/api': { target: process.env.DDS_URL || 'http://127.0.0.1:8080', ws: true } } },
});
