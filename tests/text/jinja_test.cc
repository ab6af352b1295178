// Unit tests of the Jinja engine: one test per feature group, plus errors and sandbox limits.
// Expected strings follow Python Jinja2 as transformers configures it (trim_blocks, lstrip_blocks).
#include <gtest/gtest.h>

#include "text/chat_template.h"
#include "text/jinja_template.h"

namespace moe::text::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string render(const std::string& src, const json& vars = json::object(),
                   const RenderLimits& limits = {}) {
  auto t = Template::parse(src);
  if (!t.ok()) return "PARSE ERROR: " + t.status().message();
  auto r = t->render(vars, limits);
  if (!r.ok()) return "RENDER ERROR: " + r.status().message();
  return *r;
}

TEST(Jinja, TextAndExpressions) {
  EXPECT_EQ(render("Hello {{ name }}!", {{"name", "world"}}), "Hello world!");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ -7 // 2 }}"),
            "7 9 3 1 -4");
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 4 / 2 }}"), "3.5 1024 2.5 2.0");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true }}"), "a1NoneTrue");
  EXPECT_EQ(render("{{ 'a' + 'b' }}{{ [1] + [2] }}"), "ab[1, 2]");
  EXPECT_EQ(render("{{ \"esc\\n\\t\\\\\" }}|{{ 'it\\'s' }}|{{ '\\u00e9' }}"), "esc\n\t\\|it's|é");
  EXPECT_EQ(render("{{ true }} {{ True }} {{ none }} {{ None }} {{ false }}"),
            "True True None None False");
  EXPECT_EQ(render("{{ undefined_var }}|{{ [1, 'a', none, true] }}|{{ {'k': [1]} }}"),
            "|[1, \"a\", null, true]|{\"k\": [1]}");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }} {{ 'only' if x }}.", {{"x", 0}}), "no .");
}

TEST(Jinja, ComparisonsLogicMembership) {
  EXPECT_EQ(render("{{ 1 < 2 and 2 <= 2 and 3 > 2 and 3 >= 3 and 1 != 2 and 1 == 1.0 }}"), "True");
  EXPECT_EQ(render("{{ 'a' in 'cat' }} {{ 'x' not in ['a'] }} {{ 'k' in {'k': 1} }}"),
            "True True True");
  EXPECT_EQ(render("{{ not 1 == 2 }} {{ 0 or 'b' }} {{ 'a' and '' }}|"), "True b |");
  EXPECT_EQ(render("{{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }}"), "True True");
}

TEST(Jinja, MemberAccessIndexingSlicing) {
  json v = {{"m", {{"role", "user"}, {"items", 5}}}, {"xs", {1, 2, 3, 4, 5}}, {"s", "héllo"}};
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m['items'] }} {{ m.missing }}|", v),
            "user user 5 |");
  EXPECT_EQ(
      render("{{ xs[0] }} {{ xs[-1] }} {{ xs[10] }}|{{ xs[1:3] }} {{ xs[::-1] }} {{ xs[::2] }}", v),
      "1 5 |[2, 3] [5, 4, 3, 2, 1] [1, 3, 5]");
  EXPECT_EQ(render("{{ s[1] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }}", v),
            "é o él olléh 5");
  EXPECT_EQ(render("{{ xs.0 }}", v), "1");
}

TEST(Jinja, IfElifElse) {
  const std::string t = "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(render(t, {{"x", 3}}), "big");
  EXPECT_EQ(render(t, {{"x", 1}}), "small");
  EXPECT_EQ(render(t, {{"x", 0}}), "none");
}

TEST(Jinja, ForLoops) {
  json v = {{"xs", {"a", "b", "c"}}, {"d", {{"k1", 1}, {"k2", 2}}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ x }};{% endfor %}",
                   v),
            "103TrueFalse3a;212FalseFalse3b;321FalseTrue3c;");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", v), "k1=1,k2=2,");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", v), "k1k2");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.index }}{% endfor %}", v), "a1c2");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", v),
      "ac");
  EXPECT_EQ(
      render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", v),
      "a");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}{{ loop.cycle('o', 'e') }}{% endfor %}", v),
            "oaebo");
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 0, -2) %}{{ i "
                   "}}{% endfor %}"),
            "012531");
  EXPECT_EQ(render("{% for x in nothing %}x{% endfor %}ok"), "ok");
}

TEST(Jinja, SetNamespaceScoping) {
  EXPECT_EQ(render("{% set a = 1 %}{% set b, c = 2, 3 %}{{ a }}{{ b }}{{ c }}"), "123");
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}"
                   "{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(render("{% set block %}a{{ 1 }}b{% endset %}[{{ block }}]"), "[a1b]");
}

TEST(Jinja, MacrosAndCall) {
  EXPECT_EQ(render("{% macro greet(name, greeting='Hi') %}{{ greeting }} {{ name }}{% endmacro %}"
                   "{{ greet('Ann') }}|{{ greet('Bob', greeting='Yo') }}|{{ greet(name='Cy') }}"),
            "Hi Ann|Yo Bob|Hi Cy");
  EXPECT_EQ(
      render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %}"),
      "<body>");
  EXPECT_EQ(render("{% macro f(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }}"),
            "[2]{\"k\": 3}");
}

TEST(Jinja, Tests) {
  json v = {{"s", "x"}, {"n", nullptr}, {"d", json::object()}, {"l", json::array()}, {"i", 3}};
  EXPECT_EQ(render("{{ s is defined }}{{ zz is undefined }}{{ n is none }}{{ s is string }}"
                   "{{ d is mapping }}{{ l is iterable }}{{ l is sequence }}{{ i is number }}"
                   "{{ i is integer }}{{ i is odd }}{{ 4 is even }}{{ true is boolean }}",
                   v),
            "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(
      render("{{ s is not string }}{{ d is mapping and l is not mapping }}{{ 9 is divisibleby 3 }}"
             "{{ i is eq(3) }}{{ true is true }}{{ false is false }}{{ 'ab' is lower }}",
             v),
      "FalseTrueTrueTrueTrueTrueTrue");
}

TEST(Jinja, StringMethods) {
  EXPECT_EQ(
      render("{{ ' a b '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|"
             "{{ 'a  '.rstrip() }}|"),
      "a b|a|a\n|a|");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} "
                   "{{ 'a,b,c'.rsplit(',', 1) }}"),
            "[\"a\", \"b\", \"\", \"c\"] [\"a\", \"b\"] [\"a\", \"b,c\"] [\"a,b\", \"c\"]");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ "
                   "'aXa'.replace('a', 'b') }}"
                   "{{ 'hello world'.title() }}{{ 'hELLO'.capitalize() }}{{ 'Ab'.upper() }}{{ "
                   "'Ab'.lower() }}"),
            "TrueTruebXbHello WorldHelloABab");
  EXPECT_EQ(render("{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}{{ '-'.join(['a', 'b']) }}"
                   "{{ '{} and {}'.format(1, 'x') }}"),
            "12a-b1 and x");
}

TEST(Jinja, DictMethods) {
  json v = {{"d", {{"a", 1}, {"b", 2}}}};
  EXPECT_EQ(
      render("{{ d.keys() }}{{ d.values() }}{{ d.items() }}{{ d.get('a') }}{{ d.get('z', 9) }}"
             "{{ d.get('z') }}",
             v),
      "[\"a\", \"b\"][1, 2][[\"a\", 1], [\"b\", 2]]19None");
}

TEST(Jinja, Filters) {
  json v = {
      {"xs", {3, 1, 2}},
      {"ms",
       {{{"role", "user"}, {"n", 1}}, {{"role", "bot"}, {"n", 2}}, {{"role", "user"}, {"n", 3}}}},
      {"s", "  Hi  "}};
  EXPECT_EQ(render("{{ xs|length }}{{ xs|count }}{{ xs|first }}{{ xs|last }}{{ xs|sort }}{{ "
                   "xs|reverse|list }}"
                   "{{ xs|join('-') }}{{ xs|sum }}{{ xs|min }}{{ xs|max }}",
                   v),
            "3332[1, 2, 3][2, 1, 3]3-1-2613");
  EXPECT_EQ(
      render("[{{ s|trim }}][{{ s|upper }}][{{ 'ab'|title }}][{{ 'a\\nb'|indent(2) }}]"
             "[{{ 'x'|replace('x', 'y') }}][{{ '3'|int + 1 }}][{{ '2.5'|float }}][{{ -3|abs }}]",
             v),
      "[Hi][  HI  ][Ab][a\n  b][y][4][2.5][3]");
  EXPECT_EQ(render("{{ ms|map(attribute='role')|join(',') }}|{{ ms|selectattr('role', 'equalto', "
                   "'user')|list|length }}"
                   "|{{ ms|rejectattr('role', 'equalto', 'user')|map(attribute='n')|list }}"
                   "|{{ xs|select('odd')|list }}|{{ xs|reject('odd')|list }}|{{ "
                   "ms|map(attribute='role')|unique|list }}",
                   v),
            "user,bot,user|2|[2]|[3, 1]|[2]|[\"user\", \"bot\"]");
  EXPECT_EQ(
      render("{{ missing|default('d') }}{{ ''|default('e', true) }}{{ 0|d(5) }}{{ none|string }}"
             "{{ {'b': 1, 'a': 2}|dictsort }}{{ {'a': 1}|items|list }}{{ 2.567|round(2) }}{{ "
             "'x'|safe }}"
             "{{ '<a>'|e }}"),
      "de0None[[\"a\", 2], [\"b\", 1]][[\"a\", 1]]2.57x&lt;a&gt;");
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
}

TEST(Jinja, ToJson) {
  json v = {{"o", json::parse(R"({"b": [1, 2.5, true, null], "a": "é\"\n\u0001", "e": {}})")}};
  EXPECT_EQ(render("{{ o|tojson }}", v),
            "{\"b\": [1, 2.5, true, null], \"a\": \"é\\\"\\n\\u0001\", \"e\": {}}");
  EXPECT_EQ(render("{{ o|tojson(ensure_ascii=True) }}", v),
            "{\"b\": [1, 2.5, true, null], \"a\": \"\\u00e9\\\"\\n\\u0001\", \"e\": {}}");
  EXPECT_EQ(render("{{ o|tojson(indent=2) }}", v),
            "{\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": "
            "\"é\\\"\\n\\u0001\",\n  \"e\": {}\n}");
  EXPECT_EQ(render("{{ o|tojson(sort_keys=true, separators=(',', ':')) }}", v),
            "{\"a\":\"é\\\"\\n\\u0001\",\"b\":[1,2.5,true,null],\"e\":{}}");
  EXPECT_EQ(render("{{ '😀'|tojson(ensure_ascii=true) }}{{ 1.0|tojson }}"), "\"\\ud83d\\ude00\"1.0");
}

TEST(Jinja, WhitespaceControl) {
  // trim_blocks + lstrip_blocks, like transformers.
  EXPECT_EQ(render("{% if true %}\n  a\n{% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("a\n    {% if true %}b{% endif %}\n"), "a\nb");
  EXPECT_EQ(render("a {{- ' b ' -}} c"), "a b c");
  EXPECT_EQ(render("a {#- comment -#} b{# c #}"), "ab");
  EXPECT_EQ(render("{% raw %}{{ not rendered }}{% endraw %}"), "{{ not rendered }}");
  EXPECT_EQ(render("a\n"), "a");  // one trailing newline dropped
}

TEST(Jinja, GlobalsAndSandbox) {
  EXPECT_EQ(render("{{ dict(a=1) }}{{ range(3)|list }}{{ namespace(a=1).a }}"),
            "{\"a\": 1}[0, 1, 2]1");
  EXPECT_NE(render("{{ strftime_now('%Y') }}").size(), 0u);
  EXPECT_EQ(render("{% set l = [] %}{{ l.append(1) }}").rfind("RENDER ERROR: ", 0), 0u);
  EXPECT_NE(render("{% set l = [] %}{{ l.append(1) }}").find("unsafe"), std::string::npos);
  EXPECT_EQ(render("{% include 'x.jinja' %}").rfind("PARSE ERROR: ", 0), 0u);
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  auto t = Template::parse("line one\n{% if x %}\nno end");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 3"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("endif"), std::string::npos) << t.status().message();

  t = Template::parse("ok\n  {{ a + }}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 2, column 10"), std::string::npos)
      << t.status().message();

  for (const char* bad :
       {"{{ 'unterminated }}", "{% for x in %}{% endfor %}", "{{ x | }}", "{% endif %}",
        "{% frobnicate %}", "{{ (1, }}", "{{ a[] }}", "{% macro m(a=1, b) %}{% endmacro %}",
        "{# open comment", "{{ 1 $ 2 }}"}) {
    auto r = Template::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("line 1"), std::string::npos) << bad;
    }
  }
}

TEST(JinjaErrors, RuntimeErrorsAndRaiseException) {
  const std::string r = render("a\n{{ raise_exception('Only user and assistant roles!') }}");
  EXPECT_NE(r.find("Only user and assistant roles!"), std::string::npos) << r;
  EXPECT_NE(r.find("line 2"), std::string::npos) << r;
  EXPECT_NE(render("{{ x.y }}").find("'x' is undefined"), std::string::npos);
  EXPECT_NE(render("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(render("{{ 'a' - 1 }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(render("{{ x|nosuchfilter }}").find("unknown filter"), std::string::npos);
  EXPECT_NE(render("{{ 5 is nosuchtest }}").find("unknown test"), std::string::npos);
  auto c = ChatTemplate::from_string("{{ messages[0].content }}");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->apply(json{{"messages", "not a list"}}).ok());
  EXPECT_EQ(*c->apply(json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}), "hi");
}

TEST(JinjaErrors, LimitsStopRunawayTemplates) {
  RenderLimits small;
  small.max_loop_iterations = 1000;
  const std::string loops =
      render("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
             json::object(), small);
  EXPECT_NE(loops.find("loop iteration limit of 1000 exceeded"), std::string::npos) << loops;

  const std::string rec = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(rec.find("recursion"), std::string::npos) << rec;

  RenderLimits tiny;
  tiny.max_output_bytes = 1000;
  const std::string big = render("{% for i in range(1000) %}xx{% endfor %}", json::object(), tiny);
  EXPECT_NE(big.find("limit"), std::string::npos) << big;
  const std::string dbl = render(
      "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% "
      "endfor %}",
      json::object(), tiny);
  EXPECT_NE(dbl.find("limit"), std::string::npos) << dbl;
  EXPECT_NE(render("{{ range(100000000000)|length }}").find("limit"), std::string::npos);
  EXPECT_NE(render("{{ 'x' * 100000000000 }}").find("limit"), std::string::npos);
  RenderLimits few_steps;
  few_steps.max_steps = 100000;
  const std::string fan = render(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) "
      "}}",
      json::object(), few_steps);
  EXPECT_NE(fan.find("limit"), std::string::npos) << fan;
}

}  // namespace
}  // namespace moe::text::jinja
