/// <reference types="vitest/config" />
import tailwindcss from "@tailwindcss/vite";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev` proxies /v1 to a platform (GRIDWEAVE_PLATFORM_URL, default the all-in-one's);
// `gridweave up` serves the built files itself with the same proxy.
const platform = process.env.GRIDWEAVE_PLATFORM_URL ?? "http://127.0.0.1:8100";

export default defineConfig({
  plugins: [react(), tailwindcss()],
  server: { port: 3000, proxy: { "/v1": { target: platform, changeOrigin: false } } },
  build: { outDir: "dist", sourcemap: false, chunkSizeWarningLimit: 1200 },
  test: {
    environment: "jsdom",
    setupFiles: ["src/test/setup.ts"],
    include: ["src/**/*.test.tsx", "src/**/*.test.ts"],
  },
});
