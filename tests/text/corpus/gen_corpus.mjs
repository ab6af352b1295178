// Generates tests/text/corpus/tokenizer_corpus.jsonl: the deterministic corpus the tokenizer oracle
// tests encode with both the reference (tokenizers.js) and moengine. Run from the repo root:
//   node tests/text/corpus/gen_corpus.mjs > tests/text/corpus/tokenizer_corpus.jsonl
// Each line is {"text": "..."} or, for invalid UTF-8, {"bytes_hex": "..."}; plus "kind".
// Characters are limited to Unicode <= 14.0 (PCRE2 10.42's tables; Node's are newer).

let state = 0x12345678;
function rand() {  // mulberry32
  state = (state + 0x6d2b79f5) | 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const repeat = (n, f) => Array.from({ length: n }, f);

const english = `the of and to in is was that for it with as his on be at by this had not are but
from or have an they which one you were her all she there would their we him been has when who will
more no if out so said what up its about into than them can only other new some could time these two
may then do first any my now such like our over man me even most made after also did many before must
through back years where much your way well down should because each just those people how too little
state good very make world still own see men work long get here between both life being under never
day same another know while last might us great old year off come since against go came right used
take three Tokenizer encoder decoding streaming inference GPU latency throughput kernel attention
Hello World Paris London January Monday OpenAI DeepSeek Qwen GLM Kimi NVIDIA Hopper H200`.split(/\s+/);
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "n't", "'D"];
const punct = [".", ",", "!", "?", ";", ":", "...", " -", " --", "—", "\u2019s", "(", ")", "\"", "'",
  "[", "]", "{", "}", "/", "&", "%", "$", "#", "@", "*", "+", "=", "<", ">", "|", "~", "`", "^", "_"];
const chinese = ("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生" +
  "自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分" +
  "此心前面又定见只主没公从知识机器学习模型推理张量显存分布式训练数据中文简体繁體語言處理").split("");
const chinese_words = ["你好", "世界", "人工智能", "大语言模型", "推理引擎", "北京", "上海", "谢谢", "中华人民共和国",
  "龘", "𠀀", "𪚥", "你好，世界！", "今天天气很好。", "「引用」", "《书名》", "一二三四五六七八九十", "鿕鿖"];
const hiragana = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽゃゅょっー".split("");
const katakana = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンガギグゲゴヴァィゥェォャュョッー".split("");
const japanese_words = ["こんにちは", "ありがとうございます", "東京", "日本語", "トークナイザー", "カタカナ", "ひらがな",
  "漢字", "です。", "ます、", "ｶﾀｶﾅ", "ﾊﾟﾋﾟﾌﾟ", "〜", "・", "「はい」", "。"];
const korean_words = ["안녕하세요", "감사합니다", "서울", "한국어", "토크나이저", "대한민국", "사랑해", "읽다", "값",
  "\u1100\u1161", "\u1100\u1161\u11A8", "\u110B\u1173\u11AF", "\u1112\u1161\u11AB", "ㄱㄴㄷ", "ㅋㅋㅋ"];
const other_scripts = ["Привет, мир", "Ёлка", "Καλημέρα κόσμε", "ΑΒΓΔ", "مرحبا بالعالم", "שלום עולם",
  "สวัสดีครับ", "नमस्ते दुनिया", "हिन्दी", "বাংলা", "தமிழ்", "ქართული", "Հայերեն", "Tiếng Việt", "Đà Nẵng",
  "Ελληνικά", "Ꭰ", "ᚠᚢᚦ", "ㄅㄆㄇ", "ꦗꦮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐁𝐨𝐥𝐝", "ﬁ ﬂ", "Ⅻ ⅻ", "½ ¾ ² ³", "١٢٣٤٥",
  "０１２３４５", "①②③", "Ｈｅｌｌｏ", "Straße", "Ærøskøbing", "İstanbul", "ǅ ǈ", "ſ", "K Å"];
const accents = ["café", "cafe\u0301", "naïve", "nai\u0308ve", "résumé", "re\u0301sume\u0301", "Ångström",
  "A\u030Angstro\u0308m", "ñ", "n\u0303", "a\u0323\u0302", "a\u0302\u0323", "ệ", "e\u0323\u0302",
  "o\u0308\u0301", "x\u0301\u0300", "\u0301start", "q\u0307\u0323", "ḍ̇", "Å", "Ω", "é\u0301", "\u0D4A",
  "\u0D46\u0D3E", "\u09CB", "\u09C7\u09BE", "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D\u034F\u0334",
  "ǖ", "u\u0308\u0304", "ﬀ", "\u212B", "\u2126", "\u1E9B\u0323"];
const emoji = ["😀", "😂", "🤣", "❤️", "❤", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🏴‍☠️", "🇫🇷", "🇯🇵🇺🇸",
  "1️⃣", "#️⃣", "✔️", "☕", "🚀", "🔥", "✨", "🎉", "🧑🏿‍🚀", "👁️‍🗨️", "🙇‍♀️", "🐈‍⬛", "🫠", "🥲", "©️", "™",
  "↔️", "🏃🏻‍♂️", "💯", "🤖", "👋🏼", "🧪", "\u263A\uFE0F", "\u2764\uFE0E"];
const code = [
  "def foo(x):\n    return x * 2\n",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
  "#include <vector>\nint main() { return 0; }\n",
  "const f = async (a, b) => { await g(a?.b ?? 0); };",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "if __name__ == \"__main__\":\n    main()\n",
  "  x = [1, 2, 3]  # comment\n",
  "{\"key\": \"value\", \"list\": [1, 2.5, -3e10, true, null]}",
  "$ ls -la /usr/bin | grep -E '^d' && echo \"done\" > /dev/null 2>&1",
  "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
  "template <typename T>\nstruct Foo : Bar<T> {\n  T* ptr_ = nullptr;\n};\n",
  "<div class=\"a\"><span>&amp;&lt;&gt;</span></div>",
  "x+=1;y-=2;z*=3;w/=4;a%=5;b<<=1;c>>=2;d&&e||f",
  "    \n        \n\t\t\n",
  "0x1F, 0b1010, 1_000_000, 3.14159e-10, 1e+308",
  "\r\nline1\r\nline2\r\n\r\n",
  "// TODO(someone): fix\n/* block */\n",
  "   indented with spaces\n\tand tabs\n \t mixed\n",
  "print(f\"{x!r:>10}\")",
  "a = b if c else d  # type: ignore[assignment]",
];
const specials = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<｜User｜>", "<｜Assistant｜>",
  "<｜fim▁hole｜>", "<｜fim▁begin｜>", "<｜fim▁end｜>", "<|EOT|>", "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>",
  "<｜tool▁call▁end｜>", "<｜place▁holder▁no▁1｜>", "<｜place▁holder▁no▁797｜>", "<|endoftext|>",
  "<|im_start|>", "<|im_end|>", "<|vision_pad|>", "<tool_call>", "</tool_call>", "<think>", "</think>",
  "<|fim_prefix|>", "<tool_response>", "<|file_sep|>", "[gMASK]", "<sop>", "<|user|>", "<|assistant|>"];
const special_like = ["<｜begin▁of", "▁of▁sentence｜>", "<｜", "｜>", "<|im_", "<|im_start", "im_start|>",
  "<|endoftext", "<|begin_of_sentence|>", "<| im_start |>", "<think", "</think", "<<think>>",
  "<|im_start|><|im_start|>", "<｜User｜><｜User｜>", "<|EOT|", "<｜place▁holder▁no▁999｜>", "▁", "｜",
  "<｜begin▁of▁sentence｜", "<|IM_START|>", "<THINK>"];
const spaces = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00A0", "\u3000",
  "\u2009", "\u200B", "\u0085", "\u2028", "\u000B", "\u000C", "        ", " \t\n\r\n", "\n\n\n\n"];

function digits() {
  const k = int(0, 5);
  if (k === 0) return String(int(0, 9));
  if (k === 1) return repeat(int(4, 40), () => String(int(0, 9))).join("");
  if (k === 2) return `${int(0, 99999)}.${int(0, 9999)}`;
  if (k === 3) return int(1, 999) + "," + String(int(0, 999)).padStart(3, "0") + "," + String(int(0, 999)).padStart(3, "0");
  if (k === 4) return `+1 (${int(200, 999)}) ${int(100, 999)}-${int(1000, 9999)}`;
  return `${int(1900, 2099)}-${String(int(1, 12)).padStart(2, "0")}-${String(int(1, 28)).padStart(2, "0")}`;
}
function english_sentence() {
  const n = int(3, 18);
  let s = repeat(n, () => pick(english)).join(" ");
  if (rand() < 0.5) s = s[0].toUpperCase() + s.slice(1);
  if (rand() < 0.4) s += pick(contractions);
  if (rand() < 0.5) s += " " + pick(english) + pick(contractions) + " " + pick(english);
  return s + pick([".", "!", "?", ",", "", ";", "..."]);
}
function fragment(kind) {
  switch (kind) {
    case "english": return english_sentence();
    case "chinese": return rand() < 0.5 ? repeat(int(2, 30), () => pick(chinese)).join("") : pick(chinese_words);
    case "japanese": return repeat(int(1, 6), () => rand() < 0.4 ? pick(japanese_words) :
      repeat(int(1, 6), () => pick(rand() < 0.5 ? hiragana : katakana)).join("")).join("");
    case "korean": return repeat(int(1, 5), () => pick(korean_words)).join(pick([" ", "", ", "]));
    case "code": return pick(code);
    case "emoji": return repeat(int(1, 5), () => pick(emoji)).join(pick(["", " ", ""]));
    case "space": return pick(spaces);
    case "digits": return digits();
    case "special": return pick(specials);
    case "special_like": return pick(special_like);
    case "scripts": return pick(other_scripts);
    case "accents": return pick(accents);
    default: throw new Error(kind);
  }
}
const kinds = ["english", "chinese", "japanese", "korean", "code", "emoji", "space", "digits",
  "special", "special_like", "scripts", "accents"];

const out = [];
const emit = (kind, text) => out.push(JSON.stringify({ kind, text }));
// 1. Single-category strings.
for (const kind of kinds) {
  for (let i = 0; i < 80; ++i) {
    const n = int(1, 4);
    emit(kind, repeat(n, () => fragment(kind)).join(rand() < 0.5 ? " " : pick(["", "\n", "  "])));
  }
}
// 2. Mixed strings.
for (let i = 0; i < 1000; ++i) {
  const n = int(2, 8);
  let s = "";
  for (let j = 0; j < n; ++j) {
    s += fragment(pick(kinds));
    if (rand() < 0.6) s += pick([" ", "", "\n", " ", "  ", "\t", "\r\n"]);
  }
  emit("mixed", s);
}
// 3. Edge cases: empty, single characters, whitespace-only, long runs (BPE heap path).
emit("edge", "");
for (const c of [" ", "a", "\n", "\t", "0", "的", "😀", "\u0301", "<", "|", "▁", "Ġ", "Ċ", "\u00FF", "\u0100"])
  emit("edge", c);
for (const c of [" ", "\n", "\t", "a", "ab", "0", "的", "😀", "-", "=", ".", "\r\n", " \n"])
  emit("edge", c.repeat(int(50, 600)));
emit("edge", repeat(300, () => pick(english)).join(""));
emit("edge", repeat(120, () => digits()).join(""));
emit("edge", "x".repeat(3000));
emit("edge", repeat(40, () => english_sentence()).join(" "));
for (let i = 0; i < 50; ++i) {  // random soup of characters from every pool
  const pools = [english.join(" "), chinese.join(""), hiragana.join(""), katakana.join(""),
    other_scripts.join(""), accents.join(""), emoji.join(""), spaces.join(""), punct.join(""),
    specials.join(""), "0123456789"];
  let s = "";
  const n = int(5, 80);
  for (let j = 0; j < n; ++j) {
    const chars = Array.from(pick(pools));
    s += chars[int(0, chars.length - 1)];
  }
  emit("soup", s);
}
// 4. Invalid UTF-8: valid strings with bytes cut, inserted or replaced.
const bad_bytes = [[0xff], [0xfe], [0x80], [0xbf], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe4, 0xbd], [0xf0, 0x9f, 0x98], [0xc3],
  [0xe2, 0x82], [0xf0, 0x9f], [0xc2, 0x41], [0xe1, 0x80, 0x41]];
const enc = new TextEncoder();
for (let i = 0; i < 60; ++i) {
  const base = Array.from(enc.encode(fragment(pick(kinds)) + " " + fragment(pick(kinds))));
  const op = int(0, 2);
  const at = int(0, base.length);
  if (op === 0) base.splice(at, 0, ...pick(bad_bytes));
  else if (op === 1 && base.length > 1) base.splice(at, 1);  // may cut a multi-byte sequence
  else base.splice(at, 0, ...pick(bad_bytes), ...pick(bad_bytes));
  out.push(JSON.stringify({ kind: "invalid_utf8", bytes_hex: Buffer.from(base).toString("hex") }));
}
process.stdout.write(out.join("\n") + "\n");
