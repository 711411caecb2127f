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
    rollupOptions: {
      // GraphiQL's dependencies mark modules "use client" (a React Server
      // Components hint that means nothing in a client-only bundle).
      onwarn(w, warn) {
        if (w.code !== 'MODULE_LEVEL_DIRECTIVE') warn(w);
      },
    },
  },
  server: { proxy: { '/api': { target: process.env.DDS_URL || 'http://127.0.0.1:8080', ws: true } } },
});
