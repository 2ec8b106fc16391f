#!/usr/bin/env python3
"""Random chat-template-like programs for differential testing of ladder::jinja.

Generates `count` small templates from a seed (whitespace modifiers, trim /
lstrip blocks, if/elif/else, for with loop variables, filters, tests,
methods, macros, call blocks, filter blocks, set blocks, namespaces, raw,
break/continue, comments) with a context each, renders them with python3-jinja2
configured as jinja2_reference.py does, and prints
{"cases": [{"template", "context", "ok", "output" | "error"}]} as JSON.

Usage: random_programs.py SEED COUNT
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja2_reference  # noqa: E402

R = random.Random(1)
WS = ["", " ", "  ", "\n", " \n", "\n  ", "\t", "\n\n", "x", " y ", "\n z\n", "\r\n", "  \t\n \n", "é\n", "\u3000", "\xa0\n",
      " \u2028 ", "\x1c"]
MOD = ["", "-", "+"]
EXPRS = ["x", "n", "s", "l", "d", "x + 1", "s ~ n", "l | length", "d | tojson", "l[0]", "d.a", "d['b']", "s | upper",
         "none", "true", "1.5", "l", "d", "(1, 2)", "s.split(' ')", "l | join(',')", "n // 2", "n % 3", "-n", "n ** 2",
         "x if n else s", "d.items() | list", "d | dictsort", "s[1:]", "s | trim", "l | select('odd') | list",
         "l | map('string') | join('|')", "d.get('zz', 3)", "'%s!' % s", "n is even", "s is string", "l is sequence",
         "missing", "missing | default('dd')", "d.keys() | list", "(l | sort(reverse=true))", "l | sum", "l | max",
         "[n, s, none] | tojson", "{'k': l} | tojson(indent=1)", "s | replace(' ', '_')", "n / 4", "1e3", "2.0 * 3",
         "l | unique | list", "d.a ~ d.b", "s.title()", "s | title", "s.startswith('he')", "range(n) | list",
         "'\\u00e9' | upper", "l[::-1]", "(l | first) + (l | last)", "loopx", "d | length > 1 and n < 3",
         "ms | selectattr('role', 'equalto', 'user') | list | length", "ms | map(attribute='role') | join(',')",
         "ms[0].content | trim", "ms | rejectattr('content') | list", "ms[-1]['role'] == 'user'", "'x' in s",
         "n in l", "l | batch(2) | list", "s | indent(2)", "s | indent(2, true)", "s | center(9)", "s | center(n + 12)", "s | truncate(7)", "s | truncate(8, true, '..', 0)",
         "d | dictsort(by='value') if false else d", "ns.v", "ns.v ~ '!'", "s | wordcount", "n | string | length",
         "s.replace('l', 'L', 1)", "s.find('o')", "l | reverse | join", "{'a': n, 'b': [s]} | tojson(sort_keys=true)",
         "ms | tojson(indent=2)", "s ~ '\\n' ~ s", "'\\t' ~ n", "s | e", "x is none", "x is mapping", "x is sequence",
         "missing is defined", "x is number", "l | unique(case_sensitive=true) | list", "ms | first", "(ms | last).role",
         "ms | length - 1", "n > 2 or missing", "not n", "s[n:]", "l[1:n]", "s.rstrip('d')", "s.lstrip(' ')",
         "s.split() | length", "'%d/%s' % (n, s)", "s.upper().lower()", "s.endswith('d')", "range(1, n) | sum",
         "(x | string)[:3]", "d.b if d.b is defined else 'nob'", "caller is defined", "varz | default(n)",
         "{'a': 1, 'b': [n, 2.5]}", "'a' in d", "'zz' not in d", "n is divisibleby 2", "n is ge 2", "l[-2:]", "l[::-2]",
         "s[-3:-1]", "0.1 * 3", "n * 1.5", "n / 3", "(n / 3) | round(2)", "2.675 | round(2)", "n ** -1", "-7 // n if n else 0",
         "-7 % (n or 1)", "7.5 // 2", "7.5 % 2", "ms | sort(attribute='role') | map(attribute='role') | list",
         "ms | map(attribute='missing', default='-') | list", "['b', 'A', 'a'] | unique | list", "['b', 'A', 'a'] | sort(case_sensitive=true)",
         "[3, 1] | min", "['x', 'Y'] | max", "l | map('int') | sum", "(1, (2, 'x'), [none]) | tojson", "(1, 2) + (3,)",
         "[1] + l", "d.items() | list | tojson", "'a,b' .split(',')[1]", "s.count('l')", "s.rfind('o')", "s.capitalize()",
         "s.strip(' ad')", "'{:}'.format(n) if false else n", "'%s' | format(l)", "s | wordcount > 1", "true and 'yes' or 'no'",
         "n == 2.0", "[1, 2] == (1, 2)", "none == none", "l != []", "'b' > 'a' > ''", "s | list | length", "d | list",
         "d | length", "range(0, 10, 3) | list", "dict(a=n) | tojson", "namespace(a=1).a", "'x' ~ none ~ true ~ 1.0",
         "1 if none is none else 2", "(not x) is boolean", "x is string or x is iterable", "l | first is number"]
# Lexer-level fragments: delimiters inside strings, comments, raw blocks,
# tags without spaces, modifiers on every delimiter, Unicode spaces.
FR = ["a", " ", "\n", "  \n", "\t", "{", "}", "}}", "%}", "#}", "{ {", "x\n  ", "\n\n", "é", "\u3000",
      "{{ '}}' }}", "{{ \"%}\" }}", "{{ '{#' }}", "{# c #}", "{#- c -#}", "{#+ c #}", "{# {% if %} #}", "{#\n#}",
      "{%- raw %} {{ x }} {% endraw -%}", "{% raw -%}\n{{y}}\n{%- endraw %}", "{% raw %}{% endraw %}",
      "{{-1}}", "{{- -1 -}}", "{{x}}", "{%if x%}I{%endif%}", "{%-if x-%} I {%-endif-%}", "{%+ if x +%}P{%+ endif +%}",
      "{% if x %}\n  Y\n{% endif %}\n", "  {% if x %}\n", "  {% endif %}\n", "{{ x ~ '\\n' }}", "{{ 'a' 'b' }}",
      "{{ \"\\\"q\\\"\" }}", "{{ '\\x41\\u00e9\\t' }}", "{% set y = '-%}' %}{{ y }}", "{{ x\n }}", "{%\nif x\n%}N{%\nendif\n%}",
      "{% for i in [1,2] -%}\n  {{ i }}\n{%- endfor %}", "   {%- for i in [1] %}{{i}}{% endfor -%}   ", "\r\n", "{{ '\\r' }}"]


def lexer_program():
    return "".join(R.choice(FR) for _ in range(R.randint(1, 10))) + R.choice(["", "\n", "\n\n", "\r\n"])


def expr(): return R.choice(EXPRS)
def tag(body, kind="%"):
    return "{" + kind + R.choice(MOD if kind == "%" else ["", "-"]) + " " + body + " " + R.choice(MOD if kind == "%" else ["", "-"]) + kind + "}"
def var(): return "{{" + R.choice(["", "-"]) + " " + expr() + " " + R.choice(["", "-"]) + "}}"
def block(depth):
    parts = []
    for _ in range(R.randint(1, 4)):
        parts.append(R.choice(WS))
        k = R.random()
        if depth < 3 and k < 0.2:
            parts.append(tag("if " + expr()) + block(depth + 1) + (tag("elif " + expr()) + block(depth + 1) if R.random() < 0.3 else "") +
                         (tag("else") + block(depth + 1) if R.random() < 0.4 else "") + tag("endif"))
        elif depth < 3 and k < 0.35:
            parts.append(tag("for it in " + R.choice(["l", "s", "d", "d.items()", "range(3)", "[]"]) + (" if it" if R.random() < 0.2 else "")) +
                         R.choice(WS) + "{{ it }}" + R.choice(["{{ loop.index }}", "{{ loop.last }}", ""]) + block(depth + 1) +
                         (tag("else") + "E" if R.random() < 0.3 else "") + tag("endfor"))
        elif k < 0.45:
            parts.append(tag("set x = " + expr()))
        elif k < 0.5:
            parts.append("{#" + R.choice(["", "-"]) + " c " + R.choice(["", "-"]) + "#}")
        elif k < 0.52 and depth < 3:
            parts.append(tag("macro wrap(p='P')") + R.choice(WS) + "{{ p }}[" + "{{ caller() }}" + "]" + tag("endmacro") +
                         tag("call wrap(" + R.choice(["", "1", "p=s"]) + ")") + block(depth + 1) + tag("endcall"))
        elif k < 0.54:
            parts.append(tag("set ns = namespace(v=" + expr() + ")") + tag("set ns.v = " + expr()))
        elif k < 0.56 and depth < 3:
            parts.append(tag("filter " + R.choice(["upper", "trim", "indent(2)", "replace('a', 'b')"])) + block(depth + 1) + tag("endfilter"))
        elif k < 0.57:
            parts.append(tag("raw") + R.choice(WS) + "{{ raw }}" + R.choice(WS) + tag("endraw"))
        elif k < 0.59 and depth < 3:
            parts.append(tag("for it in l") + "{{ it }}" + tag("if it == " + str(R.randint(0, 5))) + tag(R.choice(["break", "continue"])) + tag("endif") +
                         "{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }}{{ loop.cycle('a', 'b') }}" + block(depth + 1) + tag("endfor"))
        elif k < 0.61:
            parts.append(tag("set a, b = " + R.choice(["1, 2", "l[:2] if l | length > 1 else (0, 0)", "'xy'", "d.items() | first if d else (1, 1)"])) + "{{ a }}{{ b }}")
        elif k < 0.63:
            parts.append(tag("if " + expr()) + R.choice(WS) + tag("elif " + expr()) + "{{ " + expr() + " }}" + tag("endif"))
        elif k < 0.65 and depth < 3:
            parts.append(tag("macro mm(a, b=2)") + R.choice(WS) + "{{ a }}{{ b }}" + tag("endmacro") + "{{ mm(" + expr() + ") }}")
        elif k < 0.6:
            parts.append(tag("set blk") + R.choice(WS) + var() + R.choice(WS) + tag("endset") + "[{{ blk }}]")
        else:
            parts.append(var())
        parts.append(R.choice(WS))
    return "".join(parts)


def main():
    global R
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    R = random.Random(seed)
    jinja2_reference._Clock.now = 1767225600
    env = jinja2_reference._make_env()
    cases = []
    for i in range(count):
        t = block(0) + R.choice(["", "\n", "\n\n"]) if i % 4 else lexer_program()
        ctx = {"x": R.choice([1, "str", [1, 2], None]), "n": R.randint(0, 5), "s": R.choice(["hello world", "", " a b ", "ünï", "\u3000日本\xa0語\u3000", "a\u2028b\x85c"]),
               "l": R.choice([[3, 1, 2], [], [1], [5, 5, 2]]), "d": R.choice([{"a": 1, "b": "two"}, {}, {"b": [1], "a": None}]),
               "ms": R.choice([[{"role": "user", "content": " hi "}], [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]])}
        cases.append({"template": t, "context": ctx})

    for c in cases:
        try:
            c["output"] = env.from_string(c["template"]).render(**c["context"])
            c["ok"] = True
        except Exception as e:
            c["ok"] = False
            c["error"] = type(e).__name__ + ": " + str(e)
    json.dump({"cases": cases}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
