#!/usr/bin/env python3
"""Deterministic generator of the chat conversations used by chat_template_test.cc.

Run `python3 tests/text/conversations/generate.py` to rewrite conversations.json (committed).
Each conversation: {"name", "messages", "tools"?, "add_generation_prompt", "kwargs"}.
Tool-call arguments are JSON objects here; the test converts them to JSON strings for templates
that expect strings (tests/text/templates/manifest.json).

Constraints keep the inputs inside what both renderers define the same way:
assistant content and reasoning have no leading/trailing spaces (@huggingface/jinja's
lstrip/strip ignore their chars argument), floats are never integral (JSON.parse turns 2.0 into 2),
and object keys are never numeric strings (JavaScript reorders those).
"""
import json
import os
import random

SEED = 20250601
rng = random.Random(SEED)

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web and return the top results.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            "filters": {"type": "array", "items": {"type": "string"}}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "run_python", "description": "Execute Python code in a sandbox; returns stdout.",
        "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "description": "Source code with \"quotes\" and \\ backslashes"},
            "timeout": {"type": "number", "exclusiveMinimum": 0.5}},
            "required": ["code"]}}},
    {"type": "function", "function": {
        "name": "翻译", "description": "把文本翻译成目标语言。",
        "parameters": {"type": "object", "properties": {
            "text": {"type": "string"}, "target": {"type": "string", "enum": ["en", "zh", "ja"]}},
            "required": ["text", "target"]}}},
    {"type": "function", "function": {
        "name": "set_config", "description": "Update nested configuration.",
        "parameters": {"type": "object", "properties": {
            "settings": {"type": "object", "additionalProperties": True},
            "dry_run": {"type": "boolean"}, "note": {"type": ["string", "null"]}}}}},
]

USER_TEXTS = [
    "Hello!", "What's the weather in Paris today?", "Write a haiku about autumn.",
    "你好，请介绍一下你自己。", "東京の天気を教えてください。", "안녕하세요, 오늘 뭐 해요?",
    "Explain quicksort in two sentences.", "Translate 'good morning' into French 🇫🇷",
    "Can you fix this code?\n```python\nprint('hi'\n```", "  leading and trailing spaces  ",
    "Line one\nLine two\n\nLine four", "Emoji test: 😀🎉👍🏽 and math ∑∫√", "",
    "Tabs\tand \"quotes\" and back\\slashes", "<think>not really</think> tricky user text",
    "What is 2**10?", "Summarise: " + "lorem ipsum dolor sit amet " * 8,
    "Why is the sky blue?", "Ça va? Ñandú, Straße, ﬁ ligature.", "{{ not a template }} {% neither %}",
]
ASSISTANT_TEXTS = [
    "Hi! How can I help you today?", "The weather in Paris is sunny, 21°C.",
    "Crimson leaves drifting\nwhispers of the cooling wind\nsummer says goodbye",
    "我是一个AI助手。", "Sure, here is the fix:\n```python\nprint('hi')\n```", "Bonjour !",
    "Quicksort picks a pivot and partitions the array around it.", "2**10 is 1024.",
    "Rayleigh scattering.", "😀 Done!", "Let me check that for you.",
]
REASONING = [
    "The user greets me; respond politely.", "I should call the weather tool first.",
    "用户想要中文回答。", "Compute 2^10 = 1024.\nDouble-check: 32*32 = 1024.",
    "Pivot selection matters; keep it short.", "Need to search before answering.",
]
SYSTEMS = [
    "You are a helpful assistant.", "You are a concise assistant. Answer in one sentence.",
    "你是一个乐于助人的助手。", "Follow the rules:\n1. Be kind.\n2. Be brief.",
]
TOOL_RESULTS = [
    '{"temperature": 21.5, "condition": "sunny"}', "Result: 42", "[]", "东京：晴，18°C",
    '{"results": [{"title": "Quicksort", "url": "https://example.com/qs"}]}', "error: timeout",
]


def call_args(name):
    if name == "get_weather":
        return rng.choice([{"city": "Paris"}, {"city": "東京", "unit": "celsius"},
                           {"city": "New York", "unit": "fahrenheit"}])
    if name == "search":
        return rng.choice([{"query": "quicksort"}, {"query": "天气", "limit": 3},
                           {"query": "jinja \"templates\"", "filters": ["docs", "code"], "limit": 10}])
    if name == "run_python":
        return rng.choice([{"code": "print(2**10)"}, {"code": "for i in range(3):\n    print(i)", "timeout": 2.5}])
    if name == "翻译":
        return {"text": "早上好", "target": rng.choice(["en", "ja"])}
    return rng.choice([{"settings": {"theme": "dark", "font": {"size": 12, "family": "mono"}}, "dry_run": True},
                       {"settings": {}, "dry_run": False, "note": None}])


def tool_turns(tools, call_counter, reasoning):
    n = rng.choice([1, 1, 2])
    calls = []
    for _ in range(n):
        name = rng.choice(tools)["function"]["name"]
        calls.append({"id": f"functions.{name}:{call_counter[0]}", "type": "function",
                      "function": {"name": name, "arguments": call_args(name)}})
        call_counter[0] += 1
    msg = {"role": "assistant", "content": rng.choice(["", "", "Let me check that for you."]),
           "tool_calls": calls}
    if reasoning:
        msg["reasoning_content"] = rng.choice(REASONING)
    out = [msg]
    for c in calls:
        out.append({"role": "tool", "tool_call_id": c["id"], "content": rng.choice(TOOL_RESULTS)})
    return out


def conversation(i):
    c = {"name": f"conv{i:03d}"}
    use_tools = i % 3 == 0 or i % 7 == 0
    reasoning = i % 2 == 1
    multimodal = i % 11 == 5
    tools = rng.sample(TOOLS, rng.randint(1, len(TOOLS))) if use_tools else None
    msgs = []
    if i % 4 != 3:
        msgs.append({"role": "system", "content": rng.choice(SYSTEMS)})
    turns = 1 + (i % 4)
    counter = [0]
    for t in range(turns):
        text = rng.choice(USER_TEXTS)
        if multimodal and t == 0:
            msgs.append({"role": "user", "content": [{"type": "text", "text": text},
                                                     {"type": "image"},
                                                     {"type": "text", "text": " (see image)"}]})
        else:
            msgs.append({"role": "user", "content": text})
        last = t == turns - 1
        if tools and rng.random() < 0.6:
            msgs.extend(tool_turns(tools, counter, reasoning))
        if last and i % 5 == 0:
            break  # ends on a user (or tool) turn: generation prompt case
        a = {"role": "assistant", "content": rng.choice(ASSISTANT_TEXTS + [""])}
        if reasoning and rng.random() < 0.7:
            a["reasoning_content"] = rng.choice(REASONING)
        msgs.append(a)
    if i % 13 == 6:  # a second system message mid-conversation
        msgs.insert(len(msgs) - 1, {"role": "system", "content": "Remember: be brief."})
    c["messages"] = msgs
    if tools:
        c["tools"] = tools
    c["add_generation_prompt"] = msgs[-1]["role"] != "assistant" or i % 6 == 0
    kw = {}
    if i % 4 == 1:
        kw["enable_thinking"] = False
        kw["thinking"] = False
    elif i % 4 == 2:
        kw["enable_thinking"] = True
        kw["thinking"] = True
    c["kwargs"] = kw
    return c


def main():
    convs = [conversation(i) for i in range(64)]
    # Hand-picked edge cases on top of the random ones.
    convs.append({"name": "edge_empty_messages", "messages": [], "add_generation_prompt": True,
                  "kwargs": {}})
    convs.append({"name": "edge_only_system", "messages": [{"role": "system", "content": ""}],
                  "add_generation_prompt": False, "kwargs": {}})
    convs.append({"name": "edge_think_in_content", "messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nsimple sum\n</think>\n\n4"},
        {"role": "user", "content": "and 3+3?"}], "add_generation_prompt": True,
        "kwargs": {"enable_thinking": True}})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conversations.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(convs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(convs)} conversations to {out}")


if __name__ == "__main__":
    main()
