// Reference renderer for the chat-template tests: renders jobs with @huggingface/jinja 0.5.11
// (installed by scripts/npm-oracles.sh into .npm-cache/node_modules, or $MOE_NPM_CACHE).
//
//   node render_oracle.mjs JOBS.json OUT.json
// JOBS.json: [{"template": "<jinja source>", "context": {...variables...}}, ...]
// OUT.json:  [{"ok": true, "text": "..."} | {"ok": false, "error": "..."}, ...] in job order.
// Exit status 0 unless the inputs cannot be read or the package is missing (then 3).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const cache = process.env.MOE_NPM_CACHE || join(here, "..", "..", "..", ".npm-cache");
let Template;
try {
  ({ Template } = await import(pathToFileURL(join(cache, "node_modules/@huggingface/jinja/dist/index.js")).href));
} catch (e) {
  console.error(`@huggingface/jinja not found under ${cache}: run scripts/npm-oracles.sh (${e.message})`);
  process.exit(3);
}

const [jobsPath, outPath] = process.argv.slice(2);
if (!jobsPath || !outPath) {
  console.error("usage: node render_oracle.mjs JOBS.json OUT.json");
  process.exit(3);
}
const jobs = JSON.parse(readFileSync(jobsPath, "utf8"));
const parsed = new Map();
const results = jobs.map(({ template, context }) => {
  try {
    let t = parsed.get(template);
    if (t === undefined) {
      try {
        t = new Template(template);
      } catch (e) {
        t = e;
      }
      parsed.set(template, t);
    }
    if (t instanceof Error) throw t;
    return { ok: true, text: t.render(context) };
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e) };
  }
});
writeFileSync(outPath, JSON.stringify(results));
