// Reference side of the tokenizer benchmark: tokenizers.js (@huggingface/tokenizers) encoding the
// same file, line by line, without special tokens. Invoked by tokenize_bench (C++) in the same run:
//   node bench/text/tokenize_bench_js.mjs --tokenizer-dir DIR --text FILE [--seconds S]
// Prints one JSON line {"mb_per_s", "bytes", "ids", "passes"}.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1];
const lib = path.join(root, ".npm-cache/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs");
if (!fs.existsSync(lib)) {
  console.error(`missing ${lib}: run scripts/npm-oracles.sh`);
  process.exit(3);
}
const { Tokenizer } = await import(pathToFileURL(lib).href);
const dir = args["tokenizer-dir"];
const config_path = path.join(dir, "tokenizer_config.json");
const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
  fs.existsSync(config_path) ? JSON.parse(fs.readFileSync(config_path, "utf8")) : {});
const lines = fs.readFileSync(args.text, "utf8").split("\n");
const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l, "utf8"), 0);
const seconds = Number(args.seconds ?? 3);
let passes = 0, ids = 0, elapsed = 0;
const t0 = process.hrtime.bigint();
do {
  for (const l of lines) ids += tok.encode(l, { add_special_tokens: false }).ids.length;
  ++passes;
  elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
} while (elapsed < seconds);
console.log(JSON.stringify({ mb_per_s: (bytes * passes) / elapsed / 1e6, bytes, ids: ids / passes, passes }));
