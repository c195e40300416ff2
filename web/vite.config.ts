/// <reference types="vitest/config" />
import tailwindcss from "@tailwindcss/vite";
import react from "@vitejs/plugin-react";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { defineConfig, type Plugin } from "vite";

// `npm run dev` proxies /v1 to a platform (GRIDWEAVE_PLATFORM_URL, default the all-in-one's);
// `gridweave up` serves the built files itself with the same proxy.
const platform = process.env.GRIDWEAVE_PLATFORM_URL ?? "http://127.0.0.1:8100";

/** Each built text file beside its brotli (.br) and gzip (.gz) copies, when they are smaller:
 * the dashboard's server sends the one the browser accepts, compressed once at build. Made
 * from the files as written (writeBundle), so every other plugin's last change is in them. */
function precompress(): Plugin {
  return {
    name: "gridweave-precompress",
    apply: "build",
    writeBundle(options, bundle) {
      const dir = options.dir ?? "dist";
      for (const fileName of Object.keys(bundle)) {
        if (!/\.(js|css|html|svg|json)$/.test(fileName)) continue;
        const raw = readFileSync(join(dir, fileName));
        const copies = {
          br: brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
          gz: gzipSync(raw, { level: 9 }),
        };
        for (const [suffix, packed] of Object.entries(copies)) {
          if (packed.length < raw.length) writeFileSync(join(dir, `${fileName}.${suffix}`), packed);
        }
      }
    },
  };
}

export default defineConfig({
  plugins: [react(), tailwindcss(), precompress()],
  server: { port: 3000, proxy: { "/v1": { target: platform, changeOrigin: false } } },
  build: { outDir: "dist", sourcemap: false, chunkSizeWarningLimit: 1200 },
  test: {
    environment: "jsdom",
    setupFiles: ["src/test/setup.ts"],
    include: ["src/**/*.test.tsx", "src/**/*.test.ts"],
    // a busy machine (CI's two cores beside the Python suite) renders a page in seconds
    testTimeout: 30_000,
  },
});
