// Reference encoder for the tokenizer tests: encodes every corpus line with tokenizers.js
// (@huggingface/tokenizers, an implementation independent of ours) using the same tokenizer.json.
//   node encode_oracle.mjs --tokenizer-dir DIR --corpus FILE --out FILE
//     writes one JSON line per corpus line: {"ids": [...], "decoded": "...", "decoded_skip": "...",
//     "normalized": "..."} (ids without special tokens; normalized = the input after invalid-UTF-8
//     replacement and the tokenizer's normalizer, i.e. what decoding must give back).
// Exit status 3 if the packages are missing (run scripts/npm-oracles.sh).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const lib = path.join(root, ".npm-cache/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs");
if (!fs.existsSync(lib)) {
  console.error(`missing ${lib}: run scripts/npm-oracles.sh`);
  process.exit(3);
}
const { Tokenizer } = await import(pathToFileURL(lib).href);
const dir = args["tokenizer-dir"];
const tokenizer_json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
const config_path = path.join(dir, "tokenizer_config.json");
const config = fs.existsSync(config_path) ? JSON.parse(fs.readFileSync(config_path, "utf8")) : {};
const tok = new Tokenizer(tokenizer_json, config);

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const line_text = (o) => o.bytes_hex !== undefined ? decoder.decode(Buffer.from(o.bytes_hex, "hex")) : o.text;

const out = [];
for (const line of fs.readFileSync(args.corpus, "utf8").split("\n")) {
  if (line.trim() === "") continue;
  const text = line_text(JSON.parse(line));
  const ids = tok.encode(text, { add_special_tokens: false }).ids;
  const decoded = ids.length ? tok.decode(ids, { clean_up_tokenization_spaces: false }) : "";
  const decoded_skip = ids.length ? tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : "";
  const normalized = tok.normalizer ? tok.normalizer(text) : text;
  out.push(JSON.stringify({ ids, decoded, decoded_skip, normalized }));
}
fs.writeFileSync(args.out, out.join("\n") + "\n");
